/* adqapi9/ADQAPI_definitions.h: a second parameter structure for the
 * virtual ADQ digitizer, to prove the driver follows the layout table
 * (scripts/adq_layout.py) and no compiled-in order. It stands for an older
 * ADQAPI (revision 9.2, as vortex's #if ADQAPI_VERSION_MAJOR < 10 branches):
 * the sections in another order, other member types and padding, the < 10
 * names transfer.common.transfer_records_to_host_enabled (no
 * record_buffer_memory_owner) and transfer.channel[].record_length_infinite_enabled,
 * no function.daisy_chain (the driver must refuse trigger sync), another
 * ADQ_PORT_SYNC. `make virtual` builds build/virtual/adqapi9/libadq.so and
 * its adq_layout.json from it. Not Teledyne's header: see
 * ../ADQAPI_definitions.h.
 *
 * Its constants differ too, to prove the driver writes the header's values
 * and none compiled in: ADQ_EVENT_SOURCE_PERIODIC is 14 here (4 in
 * ../ADQAPI_definitions.h and the public headers; 4 is no event source
 * here, so a compiled-in value is refused by the board), the reference
 * clock sources are spelled ADQ_CLOCK_REFERENCE_SOURCE_* (as older public
 * headers spell them), the user logic is USER_LOGIC_2 (vortex's spelling),
 * some values are macros rather than enumerations, there is no
 * ADQ_FUNCTION_DAISY_CHAIN, ADQ_ARM_AT_ACQUISITION_START or ADQMemoryOwner,
 * and the P2P and overflow status structures have their members in
 * another order.
 */
#ifndef VG_VIRTUAL_ADQAPI_DEFINITIONS_H
#define VG_VIRTUAL_ADQAPI_DEFINITIONS_H

#include <stdint.h>

#define ADQAPI_VERSION_MAJOR 9
#define ADQAPI_VERSION_MINOR 2

#define ADQ_MAX_NOF_CHANNELS 8
#define ADQ_MAX_NOF_BUFFERS 16
#define ADQ_MAX_NOF_PATTERN_GENERATORS 2
#define ADQ_MAX_NOF_PATTERN_INSTRUCTIONS 16
#define ADQ_MAX_NOF_PORTS 6
#define ADQ_MAX_NOF_PINS 4
#define ADQ_PORT_SYNC 1
#define ADQ_PARAMETER_ID_TOP 19
#define ADQ_PARAMETERS_MAGIC (0xAA559977AA559977ull)
#define ADQ_INFINITE_NOF_RECORDS (-1)
#define LOG_LEVEL_INFO 3
#define USER_LOGIC_2 2
#define ADQ_STATUS_ID_OVERFLOW 1
#define ADQ_MARKER_MODE_HOST_MANUAL 1

enum ADQEventSource {
	ADQ_EVENT_SOURCE_INVALID = 0, ADQ_EVENT_SOURCE_SOFTWARE = 1, ADQ_EVENT_SOURCE_TRIG = 2,
	ADQ_EVENT_SOURCE_SYNC = 9, ADQ_EVENT_SOURCE_PERIODIC = 14, ADQ_EVENT_SOURCE_GPIOA0 = 25
};
enum ADQClockGenerator { ADQ_CLOCK_GENERATOR_INTERNAL_PLL = 1, ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK = 2 };
enum ADQClockReferenceSource {
	ADQ_CLOCK_REFERENCE_SOURCE_INTERNAL = 1, ADQ_CLOCK_REFERENCE_SOURCE_PORT_CLK = 2, ADQ_CLOCK_REFERENCE_SOURCE_PXIE_10M = 3
};
enum ADQFunction { ADQ_FUNCTION_INVALID = 0, ADQ_FUNCTION_PATTERN_GENERATOR0 = 1 };
enum ADQPatternGeneratorOperation { ADQ_PATTERN_GENERATOR_OPERATION_TIMER = 0, ADQ_PATTERN_GENERATOR_OPERATION_EVENT = 1 };
enum ADQTestPatternSource { ADQ_TEST_PATTERN_SOURCE_DISABLE = 0, ADQ_TEST_PATTERN_SOURCE_TRIANGLE = 3 };
enum ADQDirection { ADQ_DIRECTION_IN = 0, ADQ_DIRECTION_OUT = 1 };
enum ADQImpedance { ADQ_IMPEDANCE_50_OHM = 0, ADQ_IMPEDANCE_HIGH = 1 };

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

struct ADQOverflowStatus { int32_t reserved[3], overflow; };

struct ADQP2pStatusChannel {
	int16_t completed_buffers[ADQ_MAX_NOF_BUFFERS];
	int64_t nof_completed_buffers;
	uint32_t flags, reserved;
};
struct ADQP2pStatus {
	uint32_t flags;
	int32_t reserved;
	struct ADQP2pStatusChannel channel[ADQ_MAX_NOF_CHANNELS];
};

struct ADQParameters {
	int32_t id;
	int32_t reserved;
	uint8_t unknown_section[40]; /* a section the driver does not use */
	struct {
		struct {
			void* record_buffer[ADQ_MAX_NOF_BUFFERS];
			int64_t nof_buffers, record_buffer_size, record_size;
			int64_t metadata_buffer_size;
			int32_t metadata_enabled, record_length_infinite_enabled;
		} channel[ADQ_MAX_NOF_CHANNELS];
		struct {
			int32_t marker_mode, write_lock_enabled, packed_buffers_enabled, transfer_records_to_host_enabled;
		} common;
	} transfer;
	struct {
		struct {
			int32_t trigger_blocking_source, trigger_source;
			int64_t nof_records, record_length, horizontal_offset;
			int64_t bytes_per_sample;
		} channel[ADQ_MAX_NOF_CHANNELS];
	} acquisition;
	struct {
		struct { int32_t reserved, source; } channel[ADQ_MAX_NOF_CHANNELS];
	} test_pattern;
	struct {
		int32_t nof_pins;
		struct { int32_t input_impedance, invert_output, function, direction; } pin[ADQ_MAX_NOF_PINS];
	} port[ADQ_MAX_NOF_PORTS];
	struct {
		int32_t nof_pattern_generators, nof_channels;
		char firmware_name[32], product_options[32], product_name[32], serial_number[16];
		struct {
			double delay_adjustment, reference_frequency, sampling_frequency;
			int32_t delay_adjustment_enabled, low_jitter_mode_enabled, reference_source, clock_generator;
		} clock_system;
	} constant;
	struct {
		struct { double dc_offset, input_range; } channel[ADQ_MAX_NOF_CHANNELS];
	} afe;
	struct {
		struct { struct { int32_t skip_factor, reserved; } channel[ADQ_MAX_NOF_CHANNELS]; } sample_skip;
	} signal_processing;
	struct {
		struct { int32_t high, low; double frequency; } periodic;
	} event_source;
	struct {
		struct {
			int32_t reserved, nof_instructions;
			struct { int32_t output_value_transition, output_value, source, op; int64_t count; } instruction[ADQ_MAX_NOF_PATTERN_INSTRUCTIONS];
		} pattern_generator[ADQ_MAX_NOF_PATTERN_GENERATORS];
	} function;
	uint64_t magic;
};

#endif
