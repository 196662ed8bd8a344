/* ADQAPI_definitions.h: the virtual Teledyne ADQ digitizer's own ADQAPI
 * parameter structure (instruments/virtual/teledyne.c), read by the same
 * generator a user runs over Teledyne's header (scripts/adq_layout.py, `make
 * virtual` writes build/virtual/adq_layout.json from this file).
 *
 * Teledyne's real ADQAPI_definitions.h ships with its SDK only and changes
 * between ADQAPI releases, so vortexgo carries none: its driver
 * (gosrc/driver/teledyne) reads and writes struct ADQParameters only through
 * the layout table the generator produces from the installed header. This
 * file declares a structure of that name for the virtual board: the member
 * names are Teledyne's published ones, as vortex's driver
 * (src/vortex/driver/teledyne.cpp) uses them (constant.clock_system,
 * event_source.periodic, function.pattern_generator[], function.daisy_chain,
 * test_pattern.channel[], signal_processing.sample_skip.channel[],
 * afe.channel[], port[ADQ_PORT_SYNC].pin[0], acquisition.channel[],
 * transfer.common, transfer.channel[]); the member order, the sections left
 * out and the types are this file's own, and its revision (below) is no
 * Teledyne release's. Nothing is copied from Teledyne's header.
 *
 * Below the structure's constants: the enumerations the driver writes into
 * the parameters (ADQEventSource, ADQClockGenerator, ...: Teledyne's names;
 * the values of those the public headers show are theirs, those of
 * ADQ_FUNCTION_DAISY_CHAIN and ADQ_ARM_AT_ACQUISITION_START are this
 * board's own) and the small fixed structures passed by pointer
 * (ADQInfoListEntry, struct ADQP2pStatus, struct ADQOverflowStatus). The
 * driver compiles in none of them: the generator writes their values and
 * layouts into the table (its "constants" and "structures").
 */
#ifndef VG_VIRTUAL_ADQAPI_DEFINITIONS_H
#define VG_VIRTUAL_ADQAPI_DEFINITIONS_H

#include <stdint.h>

/* "vg": the virtual board's revision, no Teledyne release's (>= 10: the
 * current member names, as vortex's #if ADQAPI_VERSION_MAJOR). */
#define ADQAPI_VERSION_MAJOR 0x7667
#define ADQAPI_VERSION_MINOR 1

#define ADQ_MAX_NOF_CHANNELS 8
#define ADQ_MAX_NOF_BUFFERS 16
#define ADQ_MAX_NOF_PATTERN_GENERATORS 2
#define ADQ_MAX_NOF_PATTERN_INSTRUCTIONS 16
#define ADQ_MAX_NOF_PORTS 8
#define ADQ_MAX_NOF_PINS 16
#define ADQ_PORT_SYNC 3
#define ADQ_PARAMETER_ID_TOP 19
#define ADQ_PARAMETERS_MAGIC (0xAA559977AA559977ull)
#define ADQ_INFINITE_NOF_RECORDS (-1)
#define LOG_LEVEL_INFO 3

enum ADQStatusId { ADQ_STATUS_ID_OVERFLOW = 1 };
enum ADQUserLogic { ADQ_USER_LOGIC1 = 1, ADQ_USER_LOGIC2 = 2 };
enum ADQEventSource {
	ADQ_EVENT_SOURCE_INVALID = 0, ADQ_EVENT_SOURCE_SOFTWARE = 1, ADQ_EVENT_SOURCE_TRIG = 2,
	ADQ_EVENT_SOURCE_PERIODIC = 4, ADQ_EVENT_SOURCE_SYNC = 9, ADQ_EVENT_SOURCE_GPIOA0 = 25
};
enum ADQClockGenerator { ADQ_CLOCK_GENERATOR_INTERNAL_PLL = 1, ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK = 2 };
enum ADQReferenceClockSource {
	ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL = 1, ADQ_REFERENCE_CLOCK_SOURCE_PORT_CLK = 2, ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M = 3
};
enum ADQFunction { ADQ_FUNCTION_INVALID = 0, ADQ_FUNCTION_PATTERN_GENERATOR0 = 1, ADQ_FUNCTION_DAISY_CHAIN = 9 };
enum ADQPatternGeneratorOperation { ADQ_PATTERN_GENERATOR_OPERATION_TIMER = 0, ADQ_PATTERN_GENERATOR_OPERATION_EVENT = 1 };
enum ADQTestPatternSource { ADQ_TEST_PATTERN_SOURCE_DISABLE = 0, ADQ_TEST_PATTERN_SOURCE_TRIANGLE = 3 };
enum ADQMarkerMode { ADQ_MARKER_MODE_HOST_AUTO = 0, ADQ_MARKER_MODE_HOST_MANUAL = 1 };
enum ADQMemoryOwner { ADQ_MEMORY_OWNER_API = 0, ADQ_MEMORY_OWNER_USER = 1 };
enum ADQDirection { ADQ_DIRECTION_IN = 0, ADQ_DIRECTION_OUT = 1 };
enum ADQImpedance { ADQ_IMPEDANCE_50_OHM = 0, ADQ_IMPEDANCE_HIGH = 1 };
enum ADQArm { ADQ_ARM_IMMEDIATELY = 0, ADQ_ARM_AT_ACQUISITION_START = 1 };

/* ADQInfoListEntry: the member names are ADQAPI.h's, as vortex reads them. */
typedef struct ADQInfoListEntry {
	int32_t HWIFType;
	int32_t ProductID;
	uint32_t VendorID;
	uint32_t AddressField1;
	uint32_t AddressField2;
	char DevFile[64];
	uint32_t DeviceInterfaceOpened;
	uint32_t DeviceSetupCompleted;
} ADQInfoListEntry;

struct ADQOverflowStatus { int32_t overflow, reserved; };

struct ADQP2pStatusChannel {
	uint32_t flags;
	int32_t nof_completed_buffers;
	int16_t completed_buffers[ADQ_MAX_NOF_BUFFERS];
};
struct ADQP2pStatus {
	struct ADQP2pStatusChannel channel[ADQ_MAX_NOF_CHANNELS];
	uint32_t flags;
	int32_t reserved;
};

struct ADQClockSystemParameters {
	int32_t clock_generator, reference_source;
	double sampling_frequency, reference_frequency, delay_adjustment;
	int32_t low_jitter_mode_enabled, delay_adjustment_enabled;
};

struct ADQConstantParameters {
	int32_t nof_channels, nof_pattern_generators;
	char serial_number[16], product_name[32], product_options[32], firmware_name[32];
	struct ADQClockSystemParameters clock_system;
};

struct ADQEventSourcePeriodicParameters {
	double frequency;
	int64_t period, high, low;
};

struct ADQEventSourceParameters {
	struct ADQEventSourcePeriodicParameters periodic;
};

struct ADQPatternGeneratorInstruction {
	int64_t count;
	int32_t op, source, output_value, output_value_transition;
};

struct ADQPatternGeneratorParameters {
	int32_t nof_instructions, reserved;
	struct ADQPatternGeneratorInstruction instruction[ADQ_MAX_NOF_PATTERN_INSTRUCTIONS];
};

struct ADQDaisyChainParameters {
	int32_t source, arm, resynchronization_enabled, position;
};

struct ADQFunctionParameters {
	struct ADQPatternGeneratorParameters pattern_generator[ADQ_MAX_NOF_PATTERN_GENERATORS];
	struct ADQDaisyChainParameters daisy_chain;
};

struct ADQTestPatternChannelParameters { int32_t source, reserved; };
struct ADQTestPatternParameters { struct ADQTestPatternChannelParameters channel[ADQ_MAX_NOF_CHANNELS]; };

struct ADQSampleSkipChannelParameters { int64_t skip_factor; };
struct ADQSignalProcessingParameters {
	struct { struct ADQSampleSkipChannelParameters channel[ADQ_MAX_NOF_CHANNELS]; } sample_skip;
};

struct ADQAnalogFrontendChannelParameters { double input_range, dc_offset; };
struct ADQAnalogFrontendParameters { struct ADQAnalogFrontendChannelParameters channel[ADQ_MAX_NOF_CHANNELS]; };

struct ADQPinParameters { int32_t direction, function, invert_output, input_impedance; };
struct ADQPortParameters {
	int32_t nof_pins, reserved;
	struct ADQPinParameters pin[ADQ_MAX_NOF_PINS];
};

struct ADQAcquisitionChannelParameters {
	int64_t horizontal_offset, record_length, nof_records;
	int32_t trigger_source, trigger_blocking_source;
};
struct ADQAcquisitionParameters { struct ADQAcquisitionChannelParameters channel[ADQ_MAX_NOF_CHANNELS]; };

struct ADQTransferParametersCommon {
	int32_t record_buffer_memory_owner, packed_buffers_enabled, write_lock_enabled, marker_mode;
};
struct ADQTransferParametersChannel {
	int64_t record_size, record_buffer_size, nof_buffers;
	int32_t infinite_record_length_enabled, metadata_enabled;
	void* record_buffer[ADQ_MAX_NOF_BUFFERS];
};
struct ADQTransferParameters {
	struct ADQTransferParametersCommon common;
	struct ADQTransferParametersChannel channel[ADQ_MAX_NOF_CHANNELS];
};

struct ADQParameters {
	int32_t id; /* ADQ_PARAMETER_ID_TOP */
	int32_t reserved;
	struct ADQConstantParameters constant;
	struct ADQEventSourceParameters event_source;
	struct ADQFunctionParameters function;
	struct ADQTestPatternParameters test_pattern;
	struct ADQSignalProcessingParameters signal_processing;
	struct ADQAnalogFrontendParameters afe;
	struct ADQPortParameters port[ADQ_MAX_NOF_PORTS];
	struct ADQAcquisitionParameters acquisition;
	struct ADQTransferParameters transfer;
	uint64_t magic; /* ADQ_PARAMETERS_MAGIC */
};

#endif
