/* atsapi.c: libATSApi.so, a virtual AlazarTech digitizer.
 *
 * The ATS-SDK's C functions vortex's Alazar driver calls for an
 * acquisition (vortex/driver/alazar/board.cpp), with the SDK's names,
 * signatures, constants and return codes, over the shared model
 * libvgvirtual.so (vgvirtual.h): a virtual ATS9360 (2 channels, 12-bit,
 * internal clock up to 1.8 GS/s or an external clock, FIFO streaming)
 * whose DMA engine fills posted buffers with the phantom's spectra at the
 * model's A-line rate, reports ApiBufferOverflow when the host leaves it
 * without a buffer for longer than its FIFO holds, ApiWaitTimeout, and
 * stops on AlazarAbortAsyncRead. Settings are validated as the SDK does,
 * with its return codes (README.md lists the rules).
 *
 * Names, signatures and constant values are from the ATS-SDK's public
 * headers AlazarApi.h, AlazarCmd.h and AlazarError.h (e.g. the copies in
 * github.com/mgliewe/qrnds, thrd-party/ats/include) and the ATS-SDK guide
 * (docs.alazartech.com); no code of theirs is used. It is plain C: the
 * process that loads it already runs vortexgo's Go runtime.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgvirtual.h"

typedef uint8_t U8;
typedef uint16_t U16;
typedef uint32_t U32;
typedef int16_t S16;
typedef void* HANDLE;
typedef int RETURN_CODE;
typedef struct dsp_module_descriptor* dsp_module_handle;

#define EXPORT __attribute__((visibility("default")))

/* AlazarError.h */
enum {
	ApiSuccess = 512, ApiFailed = 513, ApiDmaInProgress = 518, ApiNullParam = 531, ApiUnsupportedFunction = 533,
	ApiInvalidSize = 536, ApiNotInitialized = 556, ApiNotSupportThisChannel = 561, ApiInvalidHandle = 572,
	ApiBufferNotReady = 573, ApiInvalidData = 574, ApiInsufficientResources = 553, ApiWaitTimeout = 579,
	ApiWaitCanceled = 580, ApiBufferTooSmall = 581, ApiBufferOverflow = 582, ApiInvalidBuffer = 583,
	ApiInvalidRecordsPerBuffer = 584, ApiTransferComplete = 589, ApiPllNotLocked = 590,
	ApiInvalidClockFrequency = 594, ApiInvalidSkipTable = 595, ApiInconsistentChannel = 598,
	ApiOCTIgnoreBadClockNotSupported = 602,
};
/* AlazarCmd.h: capabilities and parameters */
#define GET_SERIAL_NUMBER 0x10000024UL
#define GET_LATEST_CAL_DATE 0x10000026UL
#define BOARD_TYPE 0x1000002BUL
#define GET_PCIE_LINK_SPEED 0x10000030UL
#define GET_PCIE_LINK_WIDTH 0x10000031UL
#define GET_BOARD_OPTIONS_LOW 0x10000037UL
#define GET_MAX_PRETRIGGER_SAMPLES 0x10000046UL
#define RECORD_LENGTH 0x10000003UL
#define GET_RECORDS_CAPTURED 0x10000045UL
#define SET_ADC_MODE 0x10000047UL
#define GET_ASYNC_BUFFERS_PENDING 0x10000050UL
#define GET_CHANNELS_PER_BOARD 0x10000070UL
#define PACK_MODE 0x10000072UL
#define PACK_DEFAULT 0
/* clock */
#define INTERNAL_CLOCK 0x1UL
#define EXTERNAL_CLOCK_AC 0x5UL
#define EXTERNAL_CLOCK_DC 0x6UL
#define SAMPLE_RATE_USER_DEF 0x40UL
/* input */
#define AC_COUPLING 0x1UL
#define DC_COUPLING 0x2UL
#define IMPEDANCE_50_OHM 0x2UL
#define INPUT_RANGE_PM_400_MV 0x7UL
/* trigger */
#define TRIG_ENGINE_OP_J 0x0UL
#define TRIG_ENGINE_OP_J_OR_K 0x2UL
#define TRIG_ENGINE_J 0x0UL
#define TRIG_ENGINE_K 0x1UL
#define TRIG_EXTERNAL 0x2UL
#define TRIG_DISABLE 0x3UL
#define TRIGGER_SLOPE_POSITIVE 0x1UL
#define TRIGGER_SLOPE_NEGATIVE 0x2UL
#define ETR_5V 0x0UL
#define ETR_1V 0x1UL
#define ETR_TTL 0x2UL
#define ETR_2V5 0x3UL
/* AUX I/O */
#define AUX_OUT_TRIGGER 0U
#define AUX_OUT_PACER 2U
#define AUX_OUT_CLOCK 6U
/* AlazarApi.h: AutoDMA */
#define ADMA_NPT 0x200U
#define ADMA_EXTERNAL_STARTCAPTURE 0x1U
#define ADMA_FIFO_ONLY_STREAMING 0x800U
#define ADMA_INTERLEAVE_SAMPLES 0x1000U
#define ADMA_DSP 0x4000U
#define ADMA_TRADITIONAL_MODE 0x0U
#define ADMA_CONTINUOUS_MODE 0x100U
#define ADMA_TRIGGERED_STREAMING 0x400U
#define SSM_DISABLE 0
#define SSM_ENABLE 1

/* The virtual board: an ATS9360 (board type 25). */
enum { BOARD_TYPE_ATS9360 = 25, CHANNELS = 2, BITS = 12, MIN_RECORD = 256, RECORD_ALIGN = 128, DELAY_ALIGN = 16,
       MAX_BOARDS = 4, MAX_POSTED = 1024 };

/* Sample rate identifiers (AlazarCmd.h) the ATS9360 supports, with their rates. */
static const struct {
	U32 id;
	double rate;
} rates[] = {
	{0x1, 1e3}, {0x2, 2e3}, {0x4, 5e3}, {0x8, 10e3}, {0xA, 20e3}, {0xC, 50e3}, {0xE, 100e3}, {0x10, 200e3},
	{0x12, 500e3}, {0x14, 1e6}, {0x18, 2e6}, {0x1A, 5e6}, {0x1C, 10e6}, {0x1E, 20e6}, {0x22, 50e6},
	{0x24, 100e6}, {0x28, 200e6}, {0x30, 500e6}, {0x32, 800e6}, {0x35, 1000e6}, {0x37, 1200e6},
	{0x3A, 1500e6}, {0x3D, 1800e6},
};

typedef struct {
	void* ptr;
	U32 bytes;
	int done;
} posted;

typedef struct {
	int index; /* 1-based board id in system 1 */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* settings */
	int clock_set;
	U32 pre, post; /* SetRecordSize */
	U32 input_range[CHANNELS];
	int input_set[CHANNELS];
	/* acquisition */
	int async_ready;
	U32 channel_mask, nch, samples, records_per_buffer, records_per_acq, flags;
	size_t buffer_bytes;
	int running, thread_live, overflow, removed;
	uint64_t gen; /* counts aborts: a wait interrupted by one returns ApiWaitCanceled */
	posted q[MAX_POSTED];
	uint64_t qwait, qfill, qpost;
	int64_t next_aline;
	uint64_t captured;
	pthread_t thread;
	/* the on-FPGA FFT module (atsdsp section below) */
	struct dsp_module_descriptor* dsp;
	int dsp_capture; /* AlazarBeforeAsyncRead had ADMA_DSP: records are the FFT's */
	/* the galvo DAC (atsdac section below) */
	struct galvo_state* dac;
} board;

/* The DSP and DAC sections' hooks into the acquisition. */
static RETURN_CODE dsp_before_async_read(board* b, U32 channels, U32 bytes_per_record, U32 records_per_acq);
static void dsp_record(board* b, const uint16_t* raw, void* dst);

static board boards[MAX_BOARDS];
static int nboards = 1;
static size_t fifo_bytes = (size_t)64 << 20;
/* The ATS-SDK version the library reports (VGV_ALAZAR_SDK_VERSION="7.5.0"): an
   older one tests the driver's refusal of an SDK it does not support. */
static unsigned sdk_version[3] = {7, 5, 0};

__attribute__((constructor)) static void ats_init(void) {
	const char* s = getenv("VGV_ALAZAR_BOARDS");
	if (s && *s) {
		int n = atoi(s);
		nboards = n < 0 ? 0 : (n > MAX_BOARDS ? MAX_BOARDS : n);
	}
	s = getenv("VGV_ALAZAR_SDK_VERSION");
	if (s && *s) {
		unsigned v[3] = {0, 0, 0};
		if (sscanf(s, "%u.%u.%u", &v[0], &v[1], &v[2]) >= 1) {
			for (int i = 0; i < 3; i++) sdk_version[i] = v[i] > 255 ? 255 : v[i];
		}
	}
	s = getenv("VGV_ALAZAR_FIFO_BYTES");
	if (s && *s && atoll(s) > 0) {
		fifo_bytes = (size_t)atoll(s);
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	for (int i = 0; i < MAX_BOARDS; i++) {
		boards[i].index = i + 1;
		pthread_mutex_init(&boards[i].mu, NULL);
		pthread_cond_init(&boards[i].cv, &ca);
		boards[i].input_range[0] = boards[i].input_range[1] = INPUT_RANGE_PM_400_MV;
	}
	pthread_condattr_destroy(&ca);
}

/* removed: the board was pulled (VGV_FAULT_BOARD_REMOVED reached while it
 * acquired) and the fault is still set. */
static int removed(board* b) { return b->removed && vgv_fault_at(INT64_MAX) == VGV_FAULT_BOARD_REMOVED; }

static board* lookup(HANDLE h) {
	for (int i = 0; i < nboards; i++) {
		if (h == (HANDLE)&boards[i]) {
			return &boards[i];
		}
	}
	return NULL;
}

/* The board for a configuration call: ApiInvalidHandle, ApiFailed (pulled)
 * or ApiDmaInProgress (settings are frozen while it acquires). */
static RETURN_CODE settable(HANDLE h, board** out) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (b->running) return ApiDmaInProgress;
	*out = b;
	return ApiSuccess;
}

static void deadline_after(struct timespec* ts, double seconds) {
	clock_gettime(CLOCK_MONOTONIC, ts);
	if (seconds > 1e6) seconds = 1e6;
	long long ns = (long long)(seconds * 1e9);
	ts->tv_sec += ns / 1000000000LL;
	ts->tv_nsec += ns % 1000000000LL;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

/* ------------------------------------------------------------------ */
/* Versions, enumeration, information. */

EXPORT RETURN_CODE AlazarGetSDKVersion(U8* major, U8* minor, U8* revision) {
	if (!major || !minor || !revision) return ApiNullParam;
	*major = (U8)sdk_version[0], *minor = (U8)sdk_version[1], *revision = (U8)sdk_version[2];
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGetDriverVersion(U8* major, U8* minor, U8* revision) {
	return AlazarGetSDKVersion(major, minor, revision);
}

EXPORT U32 AlazarNumOfSystems(void) { return nboards > 0 ? 1 : 0; }

static U32 present(void) {
	U32 n = 0;
	for (int i = 0; i < nboards; i++) n += !removed(&boards[i]);
	return n;
}

EXPORT U32 AlazarBoardsInSystemBySystemID(U32 systemId) { return systemId == 1 ? present() : 0; }

EXPORT HANDLE AlazarGetBoardBySystemID(U32 systemId, U32 boardId) {
	if (systemId != 1 || boardId < 1 || boardId > (U32)nboards || removed(&boards[boardId - 1])) {
		return NULL;
	}
	return (HANDLE)&boards[boardId - 1];
}

EXPORT U32 AlazarGetBoardKind(HANDLE h) { return lookup(h) ? BOARD_TYPE_ATS9360 : 0; }

EXPORT RETURN_CODE AlazarGetChannelInfo(HANDLE h, U32* memorySize, U8* bitsPerSample) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (!memorySize || !bitsPerSample) return ApiNullParam;
	*memorySize = 0; /* no on-board memory option: FIFO streaming only */
	*bitsPerSample = BITS;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarQueryCapability(HANDLE h, U32 capability, U32 reserved, U32* v) {
	(void)reserved;
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (!v) return ApiNullParam;
	switch (capability) {
	case GET_SERIAL_NUMBER: *v = 970000 + (U32)b->index; return ApiSuccess;
	case GET_LATEST_CAL_DATE: *v = 150126; return ApiSuccess; /* DDMMYY */
	case BOARD_TYPE: *v = BOARD_TYPE_ATS9360; return ApiSuccess;
	case GET_PCIE_LINK_SPEED: *v = 2; return ApiSuccess; /* units of 2.5 Gb/s */
	case GET_PCIE_LINK_WIDTH: *v = 8; return ApiSuccess;
	case GET_MAX_PRETRIGGER_SAMPLES: *v = 4080; return ApiSuccess;
	case GET_BOARD_OPTIONS_LOW: *v = 0; return ApiSuccess;
	default: return ApiUnsupportedFunction;
	}
}

EXPORT RETURN_CODE AlazarGetParameter(HANDLE h, U8 channel, U32 parameter, long* v) {
	(void)channel;
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (!v) return ApiNullParam;
	switch (parameter) {
	case GET_CHANNELS_PER_BOARD: *v = CHANNELS; return ApiSuccess;
	case PACK_MODE: *v = PACK_DEFAULT; return ApiSuccess;
	default: return ApiUnsupportedFunction;
	}
}

EXPORT RETURN_CODE AlazarGetParameterUL(HANDLE h, U8 channel, U32 parameter, U32* v) {
	(void)channel;
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (!v) return ApiNullParam;
	pthread_mutex_lock(&b->mu);
	RETURN_CODE rc = ApiSuccess;
	switch (parameter) {
	case RECORD_LENGTH: *v = b->pre + b->post; break;
	case GET_RECORDS_CAPTURED: *v = (U32)b->captured; break;
	case GET_ASYNC_BUFFERS_PENDING: *v = (U32)(b->qpost - b->qfill); break;
	default: rc = ApiUnsupportedFunction;
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

EXPORT RETURN_CODE AlazarSetParameterUL(HANDLE h, U8 channel, U32 parameter, U32 value) {
	(void)channel, (void)value;
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	/* SET_ADC_MODE (dual-edge sampling) and the rest: not on an ATS9360. */
	(void)parameter;
	return ApiUnsupportedFunction;
}

/* ------------------------------------------------------------------ */
/* Clock, inputs, trigger, AUX I/O. */

EXPORT RETURN_CODE AlazarSetCaptureClock(HANDLE h, U32 source, U32 rate, U32 edge, U32 decimation) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if (edge > 1 || decimation > 10) return ApiInvalidData;
	if (source == INTERNAL_CLOCK) {
		for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
			if (rates[i].id == rate) {
				b->clock_set = 1;
				return ApiSuccess;
			}
		}
		return ApiInvalidData; /* not a rate identifier this board has */
	}
	if (source == EXTERNAL_CLOCK_AC || source == EXTERNAL_CLOCK_DC) {
		if (rate != SAMPLE_RATE_USER_DEF) return ApiInvalidData;
		b->clock_set = 1;
		return ApiSuccess;
	}
	return ApiInvalidData;
}

EXPORT RETURN_CODE AlazarSetExternalClockLevel(HANDLE h, float level_percent) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	(void)level_percent;
	return ApiUnsupportedFunction; /* the ATS9360's clock input has a fixed level */
}

static int channel_index(U32 channel) {
	for (int i = 0; i < CHANNELS; i++) {
		if (channel == (1U << i)) return i;
	}
	return -1;
}

EXPORT RETURN_CODE AlazarInputControlEx(HANDLE h, U32 channel, U32 coupling, U32 range, U32 impedance) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	int c = channel_index(channel);
	if (c < 0) return ApiNotSupportThisChannel;
	/* The ATS9360's inputs: DC coupled, 50 ohm, +/-400 mV. */
	if (coupling != DC_COUPLING || range != INPUT_RANGE_PM_400_MV || impedance != IMPEDANCE_50_OHM) return ApiInvalidData;
	b->input_range[c] = range;
	b->input_set[c] = 1;
	return ApiSuccess;
}

static int valid_slope(U32 s) { return s == TRIGGER_SLOPE_POSITIVE || s == TRIGGER_SLOPE_NEGATIVE; }

EXPORT RETURN_CODE AlazarSetTriggerOperation(HANDLE h, U32 op, U32 engine1, U32 source1, U32 slope1, U32 level1,
					    U32 engine2, U32 source2, U32 slope2, U32 level2) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if (op > 5 || engine1 != TRIG_ENGINE_J || engine2 != TRIG_ENGINE_K) return ApiInvalidData;
	/* sources: channels A, B (0, 1), external (2), disabled (3) */
	if (source1 > TRIG_DISABLE || source2 > TRIG_DISABLE || !valid_slope(slope1) || !valid_slope(slope2) ||
	    level1 > 255 || level2 > 255) {
		return ApiInvalidData;
	}
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarSetExternalTrigger(HANDLE h, U32 coupling, U32 range) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if ((coupling != AC_COUPLING && coupling != DC_COUPLING) ||
	    (range != ETR_5V && range != ETR_1V && range != ETR_TTL && range != ETR_2V5)) {
		return ApiInvalidData;
	}
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarSetTriggerDelay(HANDLE h, U32 delay) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if (delay % DELAY_ALIGN != 0 || delay > 9999999) return ApiInvalidData;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarConfigureAuxIO(HANDLE h, U32 mode, U32 parameter) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if (mode == AUX_OUT_PACER && parameter < 2) return ApiInvalidData; /* the pacer divides by 2 at least */
	if (mode != AUX_OUT_TRIGGER && mode != AUX_OUT_PACER && mode != AUX_OUT_CLOCK) return ApiInvalidData;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarConfigureSampleSkipping(HANDLE h, U32 mode, U32 clocks, U16* bitmap) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if (mode == SSM_DISABLE) return ApiSuccess;
	if (mode != SSM_ENABLE || !bitmap || clocks == 0 || clocks % 16 != 0) return ApiInvalidSkipTable;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarOCTIgnoreBadClock(HANDLE h, U32 enable, double good, double bad, double* cycle, double* width) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	if (enable && (!(good >= 0) || !(bad >= 0))) return ApiInvalidData;
	if (cycle) *cycle = 0;
	if (width) *width = 0;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarSetRecordSize(HANDLE h, U32 pre, U32 post) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	U32 n = pre + post;
	if (n < MIN_RECORD || n % RECORD_ALIGN != 0 || pre % RECORD_ALIGN != 0) return ApiInvalidData;
	b->pre = pre;
	b->post = post;
	return ApiSuccess;
}

/* ------------------------------------------------------------------ */
/* The on-FPGA FFT module (AlazarDSP.h; e.g. the copy in
 * github.com/mgliewe/qrnds, thrd-party/ats/include): one FFT module per
 * board. What it computes, per record of R samples (AlazarFFTSetup's
 * recordLength) and FFT length N (a power of two, R <= N <= FFT_MAX):
 *
 *   x[i] = (code[i] - 32768) - background[i]   (background: AlazarFFTBackground-
 *                                               SubtractionSetRecordS16, when enabled)
 *   y[i] = x[i] * (wr[i] + j wi[i])            (AlazarFFTSetWindowFunction: NULL real
 *                                               is ones, NULL imaginary zeros; samples
 *                                               past the window's length are zeroed)
 *   Y[k] = sum_{i<R} y[i] exp(-2 pi j i k / N), the record zero-padded to N
 *
 * and outputs the first N/2 bins (the SDK's "first half"). U16_LOG, the format
 * vortex requests: round(1111.7938176 * ln |Y[k]|^2) clipped to [0, 65535], the
 * SDK's default loge_ampl_mult for U16 log (AlazarFFTSetScalingAndSlicing's
 * documentation), i.e. 256 x 10 log10 |Y|^2: 1/256 dB per count. The hardware
 * also slices (scales by a power of two) before the log; the virtual module does
 * not, so its levels differ from a board's by a constant offset in dB.
 * FFT_OUTPUT_FORMAT_RAW_PLUS_FFT prepends the time-domain record as S16
 * (code - 32768), zero-padded to N samples. Settings are validated with the
 * SDK's codes (README.md lists them). */

#define DSP_MODULE_FFT 0x10000U
#define DSP_RAW_PLUS_FFT_SUPPORTED 0U
#define DSP_FFT_SUBTRACTOR_SUPPORTED 1U
#define FFT_OUTPUT_FORMAT_U16_LOG 0x1U
#define FFT_OUTPUT_FORMAT_RAW_PLUS_FFT 0x1000U
#define FFT_FOOTER_NONE 0x0U
#define CHANNEL_A 0x1U
enum { ApiInvalidDspModule = 596, ApiDspFiniteRecordsPerAcquisition = 599, ApiFftSizeTooLarge = 608 };
enum { FFT_MAX = 4096, FFT_VERSION_MAJOR = 4, FFT_VERSION_MINOR = 5 };
#define U16_LOG_MULT 1111.7938176

struct dsp_module_descriptor {
	board* b;
	float wr[FFT_MAX], wi[FFT_MAX];
	U32 window_len;
	S16 background[FFT_MAX];
	U32 background_len;
	int background_enabled;
	/* AlazarFFTSetup */
	int setup;
	U32 record_len, fft_len, format, bytes_per_record;
	double cos_t[FFT_MAX / 2], sin_t[FFT_MAX / 2];
};

static struct dsp_module_descriptor dsps[MAX_BOARDS];

static struct dsp_module_descriptor* dsp_of(dsp_module_handle d) {
	for (int i = 0; i < nboards; i++) {
		if (d == &dsps[i]) return d;
	}
	return NULL;
}

/* dsp_settable: the module of d when its board takes settings (not capturing). */
static RETURN_CODE dsp_settable(dsp_module_handle d, struct dsp_module_descriptor** out) {
	struct dsp_module_descriptor* m = dsp_of(d);
	if (!m) return ApiInvalidDspModule;
	board* b;
	RETURN_CODE rc = settable((HANDLE)m->b, &b);
	if (rc != ApiSuccess) return rc;
	*out = m;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarDSPGetModules(HANDLE h, U32 numEntries, dsp_module_handle* modules, U32* numModules) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (!modules && numEntries != 0) return ApiNullParam;
	struct dsp_module_descriptor* m = &dsps[b->index - 1];
	if (!m->b) { /* first use: a flat window, no background */
		m->b = b;
		b->dsp = m;
	}
	if (numEntries >= 1) modules[0] = m;
	if (numModules) *numModules = 1;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarDSPGetInfo(dsp_module_handle d, U32* id, U16* major, U16* minor, U32* maxLength,
				   U32* channels, U32* reserved) {
	(void)reserved;
	struct dsp_module_descriptor* m = dsp_of(d);
	if (!m) return ApiInvalidDspModule;
	if (id) *id = DSP_MODULE_FFT;
	if (major) *major = FFT_VERSION_MAJOR;
	if (minor) *minor = FFT_VERSION_MINOR;
	if (maxLength) *maxLength = FFT_MAX;
	if (channels) *channels = CHANNEL_A; /* the header's reserved0; vortex reads the channels there */
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarDSPGetParameterU32(dsp_module_handle d, U32 parameter, U32* result) {
	if (!dsp_of(d)) return ApiInvalidDspModule;
	if (!result) return ApiNullParam;
	switch (parameter) {
	case DSP_RAW_PLUS_FFT_SUPPORTED: *result = 1; return ApiSuccess;
	case DSP_FFT_SUBTRACTOR_SUPPORTED: *result = 1; return ApiSuccess;
	default: return ApiInvalidData;
	}
}

/* The virtual module's throughput: one FFT of N points in N/2 clocks of 500 MHz
 * (a made-up but plausible pipeline; the SDK computes its own per board). */
EXPORT RETURN_CODE AlazarFFTGetMaxTriggerRepeatRate(dsp_module_handle d, U32 fft_size, double* rate) {
	if (!dsp_of(d)) return ApiInvalidDspModule;
	if (!rate) return ApiNullParam;
	if (fft_size == 0 || (fft_size & (fft_size - 1)) != 0) return ApiInvalidData;
	if (fft_size > FFT_MAX) return ApiFftSizeTooLarge;
	*rate = 500e6 / (fft_size / 2.0);
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarFFTSetWindowFunction(dsp_module_handle d, U32 samples, float* re, float* im) {
	struct dsp_module_descriptor* m;
	RETURN_CODE rc = dsp_settable(d, &m);
	if (rc != ApiSuccess) return rc;
	if (samples == 0 || samples > FFT_MAX) return ApiInvalidData;
	for (U32 i = 0; i < samples; i++) {
		m->wr[i] = re ? re[i] : 1.0f;
		m->wi[i] = im ? im[i] : 0.0f;
	}
	m->window_len = samples;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarFFTBackgroundSubtractionSetRecordS16(dsp_module_handle d, const S16* record, U32 size) {
	struct dsp_module_descriptor* m;
	RETURN_CODE rc = dsp_settable(d, &m);
	if (rc != ApiSuccess) return rc;
	if (!record) return ApiNullParam;
	if (size == 0 || size > FFT_MAX) return ApiInvalidData;
	memcpy(m->background, record, size * sizeof(S16));
	m->background_len = size;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarFFTBackgroundSubtractionGetRecordS16(dsp_module_handle d, S16* record, U32 size) {
	struct dsp_module_descriptor* m;
	RETURN_CODE rc = dsp_settable(d, &m);
	if (rc != ApiSuccess) return rc;
	if (!record) return ApiNullParam;
	if (size > m->background_len) return ApiInvalidData;
	memcpy(record, m->background, size * sizeof(S16));
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarFFTBackgroundSubtractionSetEnabled(dsp_module_handle d, int enabled) {
	struct dsp_module_descriptor* m;
	RETURN_CODE rc = dsp_settable(d, &m);
	if (rc != ApiSuccess) return rc;
	if (enabled && m->background_len == 0) return ApiInvalidData; /* no record downloaded */
	m->background_enabled = enabled != 0;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarFFTSetup(dsp_module_handle d, U16 channels, U32 record_len, U32 fft_len, U32 format,
				 U32 footer, U32 reserved, U32* bytes_per_record) {
	(void)reserved;
	struct dsp_module_descriptor* m;
	RETURN_CODE rc = dsp_settable(d, &m);
	if (rc != ApiSuccess) return rc;
	if (!bytes_per_record) return ApiNullParam;
	if (channels != CHANNEL_A) return ApiNotSupportThisChannel; /* "This must be CHANNEL_A" */
	if (record_len < MIN_RECORD || record_len % RECORD_ALIGN != 0) return ApiInvalidData;
	if (fft_len == 0 || (fft_len & (fft_len - 1)) != 0 || fft_len < record_len) return ApiInvalidData;
	if (fft_len > FFT_MAX) return ApiFftSizeTooLarge;
	if ((format & ~FFT_OUTPUT_FORMAT_RAW_PLUS_FFT) != FFT_OUTPUT_FORMAT_U16_LOG) {
		return ApiUnsupportedFunction; /* the virtual module has vortex's format only */
	}
	if (footer != FFT_FOOTER_NONE) return ApiUnsupportedFunction;
	m->record_len = record_len;
	m->fft_len = fft_len;
	m->format = format;
	U32 values = fft_len / 2 + ((format & FFT_OUTPUT_FORMAT_RAW_PLUS_FFT) ? fft_len : 0);
	m->bytes_per_record = values * 2;
	for (U32 k = 0; k < fft_len / 2; k++) {
		m->cos_t[k] = cos(2 * M_PI * k / fft_len);
		m->sin_t[k] = -sin(2 * M_PI * k / fft_len);
	}
	m->setup = 1;
	m->b->pre = 0; /* AlazarFFTSetup takes the place of AlazarSetRecordSize */
	m->b->post = record_len;
	*bytes_per_record = m->bytes_per_record;
	return ApiSuccess;
}

static RETURN_CODE dsp_before_async_read(board* b, U32 channels, U32 bytes_per_record, U32 records_per_acq) {
	struct dsp_module_descriptor* m = b->dsp;
	if (!m || !m->setup) return ApiNotInitialized; /* AlazarFFTSetup first */
	if (channels != CHANNEL_A) return ApiNotSupportThisChannel;
	if (bytes_per_record != m->bytes_per_record) return ApiInvalidData;
	if (records_per_acq != 0x7fffffffU) return ApiDspFiniteRecordsPerAcquisition;
	return ApiSuccess;
}

/* dsp_record computes one output record from the raw codes (b->samples of them). */
static void dsp_record(board* b, const uint16_t* raw, void* out) {
	struct dsp_module_descriptor* m = b->dsp;
	U32 n = m->fft_len, r = m->record_len;
	double re[FFT_MAX], im[FFT_MAX];
	uint16_t* dst = out;
	int raw_plus = (m->format & FFT_OUTPUT_FORMAT_RAW_PLUS_FFT) != 0;
	for (U32 i = 0; i < n; i++) {
		double x = 0;
		if (i < r) {
			x = (double)raw[i] - 32768.0;
			if (m->background_enabled && i < m->background_len) x -= m->background[i];
		}
		if (raw_plus) dst[i] = (uint16_t)(int16_t)(i < r ? (int)raw[i] - 32768 : 0);
		double wr = i < m->window_len ? m->wr[i] : 0, wi = i < m->window_len ? m->wi[i] : 0;
		if (m->window_len == 0) wr = 1, wi = 0; /* never set: the SDK's NULL window, ones */
		/* bit-reversed store for the in-place radix-2 FFT */
		U32 j = 0;
		for (U32 bit = 1, t = i; bit < n; bit <<= 1, t >>= 1) j = (j << 1) | (t & 1);
		re[j] = x * wr;
		im[j] = x * wi;
	}
	for (U32 len = 2; len <= n; len <<= 1) {
		U32 step = n / len;
		for (U32 s = 0; s < n; s += len) {
			for (U32 k = 0; k < len / 2; k++) {
				double c = m->cos_t[k * step], sn = m->sin_t[k * step];
				U32 p = s + k, q = s + k + len / 2;
				double tr = re[q] * c - im[q] * sn, ti = re[q] * sn + im[q] * c;
				re[q] = re[p] - tr, im[q] = im[p] - ti;
				re[p] += tr, im[p] += ti;
			}
		}
	}
	uint16_t* fft = raw_plus ? dst + n : dst;
	for (U32 k = 0; k < n / 2; k++) {
		double p = re[k] * re[k] + im[k] * im[k];
		double v = p > 0 ? U16_LOG_MULT * log(p) : 0;
		fft[k] = (uint16_t)(v <= 0 ? 0 : (v >= 65535 ? 65535 : lround(v)));
	}
}

/* ------------------------------------------------------------------ */
/* The galvo DAC (AlazarGalvo.h, ATS-SDK 7.x): pattern memory in slots of
 * 32-bit words (x in the low 16 bits, y in the high, offset binary: 32768 is
 * 0 V, 32767 codes per 5 V, vortex's dac_t), played through sequences, one
 * word per A-line trigger. The virtual DAC plays sequence 0 (vortex's
 * custom-pattern mode: one slot repeated forever) and hands what the host
 * writes to the model's galvo timeline (vgv_galvo_write): the host writes
 * the slot as a ring, in order, ahead of playback (vortex's AlazarIO), so the
 * word written at ring position p on lap l is sample l*L + p of the output,
 * L = the sequence's length; A-line n then sees sample n - io_delay, as with
 * the virtual DAQmx. Settings are refused with the SDK's codes. */

enum { GALVO_SLOTS = 5, GALVO_SEQUENCES = 16 };
static const int32_t galvo_slot_words[GALVO_SLOTS + 1] = {0, 8192, 65536, 262144, 1048576, 1048576};
#define DAC_VOLTS_PER_LSB (5.0 / 32767)
#define DAC_ZERO 32768

struct galvo_state {
	uint32_t* slot[GALVO_SLOTS + 1];
	int seq_set;
	int32_t seq_slot, seq_start, seq_end;
	int mode_custom, bscan_mode;
	uint16_t park_x, park_y;
	int playing;
	int64_t written; /* output samples handed to the timeline */
	/* issue 26 (AlazarIO): playback stopped since the last write; the next
	 * write starts a new run at sample 0 (playback restarts from word 0,
	 * and the next capture counts its A-lines from 0) */
	int rewind;
	FILE* rec; /* VGV_DAC_RECORD */
};

static struct galvo_state dacs[MAX_BOARDS];

static RETURN_CODE dac_settable(HANDLE h, struct galvo_state** out) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	b->dac = &dacs[b->index - 1];
	*out = b->dac;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoSequenceGetCount(HANDLE h, int32_t* count) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (!count) return ApiNullParam;
	*count = GALVO_SEQUENCES;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoSlotGetSize(HANDLE h, int slot, int32_t* size) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (!size) return ApiNullParam;
	if (slot < 1 || slot > GALVO_SLOTS) return ApiInvalidData;
	*size = galvo_slot_words[slot];
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoAlinesPerBscanSet(HANDLE h, int mode, int32_t alines) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if ((mode != 0 && mode != 1) || alines < 0) return ApiInvalidData;
	g->mode_custom = mode;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoBscanModeSet(HANDLE h, int mode) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (mode != 0 && mode != 1) return ApiInvalidData;
	g->bscan_mode = mode;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoSequenceWrite(HANDLE h, int32_t seq, int slot, int32_t repetitions, int32_t start,
					   int32_t bframe, int32_t end, int32_t record_length, _Bool is_last,
					   _Bool starts_in_park, _Bool ends_in_park) {
	(void)record_length, (void)is_last, (void)starts_in_park, (void)ends_in_park;
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (g->playing) return ApiDmaInProgress;
	if (seq < 0 || seq >= GALVO_SEQUENCES || slot < 1 || slot > GALVO_SLOTS || repetitions < 0) return ApiInvalidData;
	if (start < 0 || start > bframe || bframe > end || end >= galvo_slot_words[slot]) return ApiInvalidData;
	if (seq != 0) return ApiSuccess; /* only sequence 0 is played (vortex's use) */
	if (!g->slot[slot]) {
		g->slot[slot] = calloc((size_t)galvo_slot_words[slot], sizeof(uint32_t));
		if (!g->slot[slot]) return ApiInsufficientResources;
	}
	g->seq_set = 1;
	g->seq_slot = slot, g->seq_start = start, g->seq_end = end;
	g->written = 0;
	g->rewind = 0;
	vgv_galvo_reset(); /* a new pattern: the timeline starts again */
	return ApiSuccess;
}

/* dac_record appends n rows (x, y volts, float64) to DIR/dac<board>.bin
 * when VGV_DAC_RECORD=DIR is set (issue 26): what the DAC will play, in
 * the order of its samples, for tests to compare (a new run appends on). */
static void dac_record(struct galvo_state* g, int index, const double* xs, const double* ys, int32_t n) {
	if (g->rec == NULL) {
		const char* dir = getenv("VGV_DAC_RECORD");
		if (dir == NULL || dir[0] == 0) return;
		char path[1024];
		snprintf(path, sizeof path, "%s/dac%d.bin", dir, index);
		g->rec = fopen(path, "ab");
		if (g->rec == NULL) return;
	}
	for (int32_t i = 0; i < n; i++) {
		double row[2] = {xs[i], ys[i]};
		fwrite(row, sizeof row, 1, g->rec);
	}
	fflush(g->rec);
}

EXPORT RETURN_CODE AlazarGalvoPatternSlotWrite(HANDLE h, int slot, const uint32_t* data, int32_t count, int32_t offset) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (!data) return ApiNullParam;
	if (slot < 1 || slot > GALVO_SLOTS || count < 0 || offset < 0 ||
	    (int64_t)offset + count > galvo_slot_words[slot]) {
		return ApiInvalidData;
	}
	if (!g->slot[slot]) {
		g->slot[slot] = calloc((size_t)galvo_slot_words[slot], sizeof(uint32_t));
		if (!g->slot[slot]) return ApiInsufficientResources;
	}
	memcpy(g->slot[slot] + offset, data, (size_t)count * sizeof(uint32_t));
	if (!g->seq_set || slot != g->seq_slot || count == 0) return ApiSuccess;
	/* Hand the words inside the played range to the timeline, as the samples
	 * they become: the first lap at or after what was written before. */
	int64_t L = (int64_t)g->seq_end - g->seq_start + 1;
	int64_t p = (int64_t)offset - g->seq_start;
	if (p < 0 || p + count > L) return ApiSuccess;
	if (g->rewind) { /* the first write of a new run (issue 26) */
		g->rewind = 0;
		g->written = 0;
		vgv_galvo_reset();
	}
	int64_t lap = g->written / L;
	if (lap * L + p < g->written - L / 2) lap++; /* a write behind the cursor is the next lap's */
	int64_t first = lap * L + p;
	double* xs = malloc((size_t)count * sizeof(double));
	double* ys = malloc((size_t)count * sizeof(double));
	if (!xs || !ys) {
		free(xs), free(ys);
		return ApiInsufficientResources;
	}
	for (int32_t i = 0; i < count; i++) {
		xs[i] = ((double)(data[i] & 0xFFFFU) - DAC_ZERO) * DAC_VOLTS_PER_LSB;
		ys[i] = ((double)(data[i] >> 16) - DAC_ZERO) * DAC_VOLTS_PER_LSB;
	}
	vgv_galvo_write(0, first, xs, count);
	vgv_galvo_write(1, first, ys, count);
	/* The slot is a ring (issue 26): words written more than a lap ahead of
	 * playback replace the last lap's words the DAC has not played yet, as
	 * on the board; the samples they were become these. Nothing plays
	 * before the capture starts (vgv_now_alines is 0 then). */
	int64_t played = g->playing ? vgv_now_alines() : 0;
	int64_t lo = first - L > played ? first - L : played;
	if (lo < first - L + count) {
		int64_t k = lo - (first - L);
		vgv_galvo_write(0, lo, xs + k, count - k);
		vgv_galvo_write(1, lo, ys + k, count - k);
	}
	dac_record(g, (int)(g - dacs) + 1, xs, ys, count);
	free(xs), free(ys);
	if (first + count > g->written) g->written = first + count;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoSetParkPosition(HANDLE h, uint16_t x, uint16_t y) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	g->park_x = x, g->park_y = y;
	const char* dir = getenv("VGV_DAC_RECORD"); /* issue 26: DIR/dac<board>.park, the two codes */
	if (dir != NULL && dir[0] != 0) {
		char path[1024];
		snprintf(path, sizeof path, "%s/dac%d.park", dir, (int)(g - dacs) + 1);
		FILE* f = fopen(path, "wb");
		if (f != NULL) {
			uint16_t xy[2] = {x, y};
			fwrite(xy, sizeof xy, 1, f);
			fclose(f);
		}
	}
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoGetParkPosition(HANDLE h, uint16_t* x, uint16_t* y) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (!x || !y) return ApiNullParam;
	*x = g->park_x, *y = g->park_y;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoPlaybackStart(HANDLE h) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	if (!g->seq_set) return ApiNotInitialized; /* no sequence to play */
	g->playing = 1;
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarGalvoPlaybackStop(HANDLE h) {
	struct galvo_state* g;
	RETURN_CODE rc = dac_settable(h, &g);
	if (rc != ApiSuccess) return rc;
	g->playing = 0; /* the outputs go to the park position */
	g->rewind = 1;  /* issue 26: the next run plays from word 0 */
	return ApiSuccess;
}

/* ------------------------------------------------------------------ */
/* Asynchronous DMA. */

EXPORT RETURN_CODE AlazarBeforeAsyncRead(HANDLE h, U32 channels, long offset, U32 length, U32 recordsPerBuffer,
					U32 recordsPerAcquisition, U32 flags) {
	board* b;
	RETURN_CODE rc = settable(h, &b);
	if (rc != ApiSuccess) return rc;
	/* Only no-pre-trigger (NPT) AutoDMA, the mode vortex uses. */
	U32 mode = flags & (ADMA_CONTINUOUS_MODE | ADMA_NPT | ADMA_TRIGGERED_STREAMING);
	if (mode != ADMA_NPT) return ApiUnsupportedFunction;
	if (flags & ADMA_DSP) {
		/* The FFT module's records: `length` is AlazarFFTSetup's bytes per output record. */
		if (offset != 0) return ApiInvalidData;
		if (recordsPerBuffer == 0) return ApiInvalidRecordsPerBuffer;
		rc = dsp_before_async_read(b, channels, length, recordsPerAcquisition);
		if (rc != ApiSuccess) return rc;
		U32 samples = b->pre + b->post; /* AlazarFFTSetup set the record size */
		pthread_mutex_lock(&b->mu);
		b->channel_mask = channels;
		b->nch = 1;
		b->samples = samples;
		b->records_per_buffer = recordsPerBuffer;
		b->records_per_acq = recordsPerAcquisition;
		b->flags = flags;
		b->buffer_bytes = (size_t)length * recordsPerBuffer;
		b->qwait = b->qfill = b->qpost = 0;
		b->overflow = 0;
		b->next_aline = 0;
		b->captured = 0;
		b->dsp_capture = 1;
		b->async_ready = 1;
		pthread_mutex_unlock(&b->mu);
		vgv_config c;
		vgv_config_get(&c);
		c.samples_per_aline = (int32_t)samples;
		vgv_configure(&c);
		return ApiSuccess;
	}
	b->dsp_capture = 0;
	if (channels == 0 || (channels & ~((1U << CHANNELS) - 1)) != 0) return ApiNotSupportThisChannel;
	if (offset != 0) return ApiInvalidData; /* NPT records start at the trigger */
	if (length == 0 || length != b->pre + b->post) return ApiInvalidData; /* AlazarSetRecordSize first */
	if (recordsPerBuffer == 0) return ApiInvalidRecordsPerBuffer;
	if (recordsPerAcquisition != 0x7fffffffU && recordsPerAcquisition % recordsPerBuffer != 0) {
		return ApiInvalidRecordsPerBuffer;
	}
	U32 nch = (U32)__builtin_popcount(channels);
	if (nch > 1 && !(flags & ADMA_INTERLEAVE_SAMPLES)) return ApiUnsupportedFunction;
	pthread_mutex_lock(&b->mu);
	b->channel_mask = channels;
	b->nch = nch;
	b->samples = length;
	b->records_per_buffer = recordsPerBuffer;
	b->records_per_acq = recordsPerAcquisition;
	b->flags = flags;
	b->buffer_bytes = (size_t)length * nch * recordsPerBuffer * 2;
	b->qwait = b->qfill = b->qpost = 0;
	b->overflow = 0;
	b->next_aline = 0;
	b->captured = 0;
	b->async_ready = 1;
	pthread_mutex_unlock(&b->mu);
	vgv_config c;
	vgv_config_get(&c);
	c.samples_per_aline = (int32_t)length;
	vgv_configure(&c);
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarPostAsyncBuffer(HANDLE h, void* buffer, U32 bytes) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	if (!buffer) return ApiNullParam;
	pthread_mutex_lock(&b->mu);
	RETURN_CODE rc = ApiSuccess;
	if (!b->async_ready) {
		rc = ApiNotInitialized; /* AlazarBeforeAsyncRead first */
	} else if (bytes < b->buffer_bytes) {
		rc = ApiBufferTooSmall;
	} else if (b->qpost - b->qwait >= MAX_POSTED) {
		rc = ApiInsufficientResources;
	} else {
		posted* p = &b->q[b->qpost % MAX_POSTED];
		p->ptr = buffer;
		p->bytes = bytes;
		p->done = 0;
		b->qpost++;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return rc;
}

/* fill_record writes A-line n's record into dst: one spectrum per enabled
 * channel, interleaved sample by sample (ADMA_INTERLEAVE_SAMPLES) when
 * there are several. Every channel sees the phantom. */
static void fill_record(board* b, int64_t n, uint16_t* dst, uint16_t* tmp) {
	if (b->dsp_capture) { /* the FFT module's output record of the spectrum */
		vgv_spectrum(n, tmp, (int32_t)b->samples);
		dsp_record(b, tmp, dst);
		return;
	}
	if (b->nch == 1) {
		vgv_spectrum(n, dst, (int32_t)b->samples);
		return;
	}
	vgv_spectrum(n, tmp, (int32_t)b->samples);
	for (U32 s = 0; s < b->samples; s++) {
		for (U32 c = 0; c < b->nch; c++) {
			dst[(size_t)s * b->nch + c] = tmp[s];
		}
	}
}

/* fill_range fills records lo..hi-1 of a buffer (vgv_parallel: the
 * records of one buffer are made on several host threads at once, so the
 * virtual board keeps up with vortex's demos at their sizes: 100 kHz of
 * 2752-sample records). */
typedef struct {
	board* b;
	int64_t first;
	uint16_t* dst;
	size_t record_values;
} fill_job;

static void fill_range(void* ctx, int64_t lo, int64_t hi) {
	fill_job* j = ctx;
	uint16_t* tmp = malloc((size_t)j->b->samples * 2);
	if (!tmp) {
		memset(j->dst + (size_t)lo * j->record_values, 0, (size_t)(hi - lo) * j->record_values * 2);
		return;
	}
	for (int64_t r = lo; r < hi; r++) {
		fill_record(j->b, j->first + r, j->dst + (size_t)r * j->record_values, tmp);
	}
	free(tmp);
}

/* filler is the board's DMA engine: it fills the oldest posted buffer once
 * the model's clock has produced its A-lines, and overflows when no buffer
 * is posted for longer than the FIFO holds. */
static void* filler(void* arg) {
	board* b = arg;
	vgv_config c;
	vgv_config_get(&c);
	int64_t rpb = b->records_per_buffer;
	int64_t fifo_records = (int64_t)(fifo_bytes / ((size_t)b->samples * b->nch * 2));
	size_t record_values = b->dsp_capture ? b->buffer_bytes / (size_t)rpb / 2 : (size_t)b->samples * b->nch;
	pthread_mutex_lock(&b->mu);
	while (b->running) {
		if (vgv_fault_at(b->next_aline + rpb - 1) == VGV_FAULT_BOARD_REMOVED) { /* pulled before this buffer is complete */
			b->removed = 1;
			pthread_cond_broadcast(&b->cv);
			break;
		}
		int64_t now = vgv_now_alines();
		struct timespec ts;
		if (b->qfill == b->qpost) {
			if (c.aline_rate_hz > 0 && now - b->next_aline > fifo_records) {
				b->overflow = 1;
				pthread_cond_broadcast(&b->cv);
				break;
			}
			double left = c.aline_rate_hz > 0 ? (double)(b->next_aline + fifo_records + 1 - now) / c.aline_rate_hz : 0.05;
			deadline_after(&ts, fmin(fmax(left, 0), 0.05));
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		int64_t need = b->next_aline + rpb;
		if (now < need) {
			deadline_after(&ts, fmin((double)(need - now) / c.aline_rate_hz, 0.05));
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		posted* p = &b->q[b->qfill % MAX_POSTED];
		uint16_t* dst = p->ptr;
		int64_t first = b->next_aline;
		pthread_mutex_unlock(&b->mu);
		fill_job job = {b, first, dst, record_values};
		vgv_parallel(rpb, vgv_min_per_worker((int32_t)b->samples), fill_range, &job);
		pthread_mutex_lock(&b->mu);
		if (!b->running) {
			break; /* aborted while filling: the buffer is abandoned */
		}
		p->done = 1;
		b->qfill++;
		b->next_aline += rpb;
		b->captured += (uint64_t)rpb;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

EXPORT RETURN_CODE AlazarStartCapture(HANDLE h) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (removed(b)) return ApiFailed;
	pthread_mutex_lock(&b->mu);
	if (b->running) {
		pthread_mutex_unlock(&b->mu);
		return ApiDmaInProgress;
	}
	if (!b->async_ready || !b->clock_set) {
		pthread_mutex_unlock(&b->mu);
		return ApiNotInitialized;
	}
	b->running = 1;
	b->overflow = 0;
	vgv_clock_start();
	if (pthread_create(&b->thread, NULL, filler, b) != 0) {
		b->running = 0;
		pthread_mutex_unlock(&b->mu);
		return ApiInsufficientResources;
	}
	b->thread_live = 1;
	pthread_mutex_unlock(&b->mu);
	return ApiSuccess;
}

EXPORT RETURN_CODE AlazarAbortAsyncRead(HANDLE h) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	pthread_mutex_lock(&b->mu);
	b->running = 0;
	b->gen++;
	pthread_cond_broadcast(&b->cv);
	int live = b->thread_live;
	b->thread_live = 0;
	pthread_mutex_unlock(&b->mu);
	if (live) {
		pthread_join(b->thread, NULL); /* no write into a posted buffer after this returns */
		vgv_clock_stop();              /* the triggers end with the capture: the next one counts from 0 */
	}
	pthread_mutex_lock(&b->mu);
	b->qwait = b->qfill = b->qpost = 0;
	b->async_ready = 0; /* the next acquisition starts with AlazarBeforeAsyncRead */
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return removed(b) ? ApiFailed : ApiSuccess;
}

static RETURN_CODE wait_buffer(board* b, void* buffer, U32 timeout_ms) {
	pthread_mutex_lock(&b->mu);
	RETURN_CODE rc = ApiSuccess;
	uint64_t gen = b->gen;
	struct timespec ts;
	deadline_after(&ts, timeout_ms == 0xFFFFFFFFU ? 1e6 : (double)timeout_ms * 1e-3);
	if (b->qwait == b->qpost || b->q[b->qwait % MAX_POSTED].ptr != buffer) {
		rc = ApiBufferNotReady; /* not posted, or not the oldest posted buffer */
		goto out;
	}
	for (;;) {
		posted* p = &b->q[b->qwait % MAX_POSTED];
		if (b->gen != gen) {
			rc = ApiWaitCanceled;
			break;
		}
		if (p->done) {
			b->qwait++;
			break;
		}
		if (removed(b)) {
			rc = ApiFailed;
			break;
		}
		if (b->overflow) {
			rc = ApiBufferOverflow;
			break;
		}
		if (pthread_cond_timedwait(&b->cv, &b->mu, &ts) == ETIMEDOUT) {
			if (!b->q[b->qwait % MAX_POSTED].done) {
				rc = ApiWaitTimeout;
				break;
			}
		}
	}
out:
	pthread_mutex_unlock(&b->mu);
	return rc;
}

EXPORT RETURN_CODE AlazarWaitAsyncBufferComplete(HANDLE h, void* buffer, U32 timeout_ms) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (b->dsp_capture) return ApiInvalidDspModule; /* an FFT acquisition waits with AlazarDSPGetBuffer */
	return wait_buffer(b, buffer, timeout_ms);
}

/* AlazarDSPGetBuffer is the wait of an acquisition through the FFT module. */
EXPORT RETURN_CODE AlazarDSPGetBuffer(HANDLE h, void* buffer, U32 timeout_ms) {
	board* b = lookup(h);
	if (!b) return ApiInvalidHandle;
	if (!b->dsp_capture) return ApiInvalidDspModule;
	return wait_buffer(b, buffer, timeout_ms);
}

/* AlazarDSPAbortCapture ends any acquisition, the FFT module's included. */
EXPORT RETURN_CODE AlazarDSPAbortCapture(HANDLE h) {
	RETURN_CODE rc = AlazarAbortAsyncRead(h);
	board* b = lookup(h);
	if (b) b->dsp_capture = 0;
	return rc;
}

/* ------------------------------------------------------------------ */
/* Error text: a short description of each code this library returns. */

EXPORT const char* AlazarErrorToText(RETURN_CODE rc) {
	switch (rc) {
	case ApiSuccess: return "ApiSuccess";
	case ApiFailed: return "ApiFailed";
	case ApiDmaInProgress: return "ApiDmaInProgress";
	case ApiNullParam: return "ApiNullParam";
	case ApiUnsupportedFunction: return "ApiUnsupportedFunction";
	case ApiInvalidSize: return "ApiInvalidSize";
	case ApiInsufficientResources: return "ApiInsufficientResources";
	case ApiNotInitialized: return "ApiNotInitialized";
	case ApiNotSupportThisChannel: return "ApiNotSupportThisChannel";
	case ApiInvalidHandle: return "ApiInvalidHandle";
	case ApiBufferNotReady: return "ApiBufferNotReady";
	case ApiInvalidData: return "ApiInvalidData";
	case ApiWaitTimeout: return "ApiWaitTimeout";
	case ApiWaitCanceled: return "ApiWaitCanceled";
	case ApiBufferTooSmall: return "ApiBufferTooSmall";
	case ApiBufferOverflow: return "ApiBufferOverflow";
	case ApiInvalidBuffer: return "ApiInvalidBuffer";
	case ApiInvalidRecordsPerBuffer: return "ApiInvalidRecordsPerBuffer";
	case ApiInvalidSkipTable: return "ApiInvalidSkipTable";
	case ApiInvalidDspModule: return "ApiInvalidDspModule";
	case ApiDspFiniteRecordsPerAcquisition: return "ApiDspFiniteRecordsPerAcquisition";
	case ApiFftSizeTooLarge: return "ApiFftSizeTooLarge";
	default: return "Unknown";
	}
}
