/* adq.h: the part of Teledyne SP Devices' ADQAPI (libadq) that vortexgo's
 * Teledyne driver calls, declared for the driver's shim (load.go) and the
 * virtual digitizer (instruments/virtual/teledyne.c).
 *
 * Sources: the names, return codes (ADQ_EOK ... ADQ_EINTERNAL), enumerations
 * (ADQEventSource, ADQClockGenerator, ADQClockReferenceSource, ADQParameterId,
 * ADQMarkerMode, ADQMemoryOwner, ADQStatusId, ADQTestPatternSource,
 * ADQPatternGeneratorOperation, ADQFunction), the versioning convention of
 * the parameter structures (each starts with its ADQParameterId and ends with
 * ADQ_PARAMETERS_MAGIC; ADQ_InitializeParameters returns the structure's size)
 * and the revision check ADQAPI_ValidateVersion(major, minor) -> 0 compatible,
 * -1 incompatible, -2 backward compatible are ADQAPI's public ones
 * (ADQAPI.h / ADQAPI_definitions.h as published with the SDK and mirrored in
 * public repositories; the ADQ3 series user guide). vortex's driver
 * (src/vortex/driver/teledyne.cpp) shows which fields it sets. Nothing is
 * copied: the declarations are written here.
 *
 * NO PARAMETER STRUCTURE. ADQAPI's struct ADQParameters changes between
 * ADQAPI releases and its header ships only with Teledyne's SDK, so the
 * driver declares none: it keeps the structure as an opaque buffer and
 * reads and writes its fields through a layout table generated from the
 * installed ADQAPI_definitions.h (layout.go, scripts/adq_layout.py), whose
 * API revision is also the one the driver passes to ADQAPI_ValidateVersion.
 * What stays here are constants and the small fixed structures the driver
 * passes by pointer (ADQInfoListEntry, the P2P and overflow status).
 */
#ifndef VG_ADQ_H
#define VG_ADQ_H

#include <stdint.h>

#define ADQ_EOK (0)
#define ADQ_EINVAL (-1)
#define ADQ_EAGAIN (-2)
#define ADQ_EOVERFLOW (-3)
#define ADQ_ENOTREADY (-4)
#define ADQ_EINTERRUPTED (-5)
#define ADQ_EIO (-6)
#define ADQ_EEXTERNAL (-7)
#define ADQ_EUNSUPPORTED (-8)
#define ADQ_EINTERNAL (-9)

#define ADQ_MAX_NOF_CHANNELS 8
#define ADQ_MAX_NOF_BUFFERS 16
#define ADQ_INFINITE_NOF_RECORDS (-1)
#define ADQ_PARAMETERS_MAGIC (0xAA559977AA559977ull)

#define ADQ_PARAMETER_ID_TOP 19
#define ADQ_STATUS_ID_OVERFLOW 1

#define ADQ_EVENT_SOURCE_INVALID 0
#define ADQ_EVENT_SOURCE_SOFTWARE 1
#define ADQ_EVENT_SOURCE_TRIG 2
#define ADQ_EVENT_SOURCE_PERIODIC 4
#define ADQ_EVENT_SOURCE_SYNC 9
#define ADQ_EVENT_SOURCE_GPIOA0 25

#define ADQ_CLOCK_GENERATOR_INTERNAL_PLL 1
#define ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK 2
#define ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL 1
#define ADQ_REFERENCE_CLOCK_SOURCE_PORT_CLK 2
#define ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M 3

#define ADQ_FUNCTION_INVALID 0
#define ADQ_FUNCTION_PATTERN_GENERATOR0 1
#define ADQ_FUNCTION_DAISY_CHAIN 9 /* vortex sets it; its value is not in the public headers we read: the virtual board's only */
#define ADQ_PATTERN_GENERATOR_OPERATION_EVENT 1
#define ADQ_TEST_PATTERN_SOURCE_DISABLE 0
#define ADQ_TEST_PATTERN_SOURCE_TRIANGLE 3
#define ADQ_MARKER_MODE_HOST_MANUAL 1
#define ADQ_MEMORY_OWNER_API 0
#define ADQ_MEMORY_OWNER_USER 1
#define ADQ_DIRECTION_OUT 1
#define ADQ_IMPEDANCE_50_OHM 0
#define ADQ_ARM_AT_ACQUISITION_START 1 /* likewise */
#define LOG_LEVEL_INFO 3
#define ADQ_USER_LOGIC2 2

/* ADQInfoListEntry, as ADQAPI.h publishes it. */
typedef struct {
	int32_t HWIFType;
	int32_t ProductID;
	uint32_t VendorID;
	uint32_t AddressField1;
	uint32_t AddressField2;
	char DevFile[64];
	uint32_t DeviceInterfaceOpened;
	uint32_t DeviceSetupCompleted;
} vg_adq_info_entry;

typedef struct {
	int32_t overflow;
	int32_t reserved;
} vg_adq_overflow_status;

typedef struct {
	uint32_t flags;
	int32_t nof_completed_buffers;
	int16_t completed_buffers[ADQ_MAX_NOF_BUFFERS];
} vg_adq_p2p_channel;

typedef struct {
	vg_adq_p2p_channel channel[ADQ_MAX_NOF_CHANNELS];
	uint32_t flags;
	int32_t reserved;
} vg_adq_p2p_status;

#endif
