/* teledyne.c: vortexgo's virtual Teledyne SP Devices ADQ digitizer, a
 * libadq.so with the ADQAPI symbols vortex's driver calls, over the shared
 * model libvgvirtual.so (vgvirtual.h). Plain C, never Go.
 *
 * The board: one ADQ32-like digitizer with two channels and the FWOCT
 * firmware on user logic 2 (register map as vortex's driver reads it). It
 * checks the API revision (ADQAPI_ValidateVersion) and the parameter
 * structure (id, magic, size), validates the settings with ADQAPI's error
 * returns, and after ADQ_StartDataAcquisition its DMA engine (a thread)
 * fills its own transfer buffers (memory owner API, packed: one contiguous
 * buffer per index holding every active channel) in index order at the
 * model's A-line rate, with the phantom's spectrum at the galvo position
 * the virtual DAQmx outputs (vgv_spectrum). A filled buffer stays locked
 * until ADQ_UnlockP2pBuffers; when the next buffer is still locked and the
 * on-board FIFO (VGV_ADQ_FIFO_BYTES, 64 MiB) is full, the board overflows:
 * acquisition stops, ADQ_WaitForP2pBuffers times out (ADQ_EAGAIN) and
 * ADQ_GetStatus(ADQ_STATUS_ID_OVERFLOW) reports it, as ADQAPI documents.
 *
 * FWOCT processing (when vortex's driver enables it through the registers):
 * background subtraction (16-bit table), the complex spectral filter (2.14
 * fixed point) and the FFT's magnitude, per record, on the board. The
 * resampling and k-clock delay registers are stored, not modelled (the
 * phantom's spectra are already linear in k).
 *
 * Environment: VGV_ADQAPI_VERSION="major.minor" (the revision the library
 * reports; default the driver's), VGV_ADQ_BOARDS (default 1), VGV_ADQ_FWOCT
 * (0: no FWOCT firmware), VGV_ADQ_FIFO_BYTES.
 */
#include <complex.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The parameter structure, the enumerations and the small fixed structures:
 * ADQAPI_definitions.h on the include path (this folder's, or adqapi9/'s
 * for the second layout and values the driver's tests use); the return
 * codes: the driver's adq.h. */
#include <ADQAPI_definitions.h> /* angle brackets: the -I folder decides, not this file's */
#include "../../gosrc/driver/teledyne/adq.h"

#if ADQAPI_VERSION_MAJOR < 10 /* adqapi9's spellings */
#define ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL ADQ_CLOCK_REFERENCE_SOURCE_INTERNAL
#define ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M ADQ_CLOCK_REFERENCE_SOURCE_PXIE_10M
#define ADQ_USER_LOGIC2 USER_LOGIC_2
#endif
#include "vgvirtual.h"

#define EXPORT __attribute__((visibility("default")))
#define NCH 2

/* FWOCT registers (vortex's driver's map). */
enum { R_MODULEID = 0, R_RECORDLENGTH = 1, R_DEBUG = 2, R_ERRORS = 3, R_ADDRRESET = 4, R_TABLEDATA = 5,
	R_TABLECONFIG = 6, R_KCLKDELAY = 7, R_CONFIG = 8, R_PHASEINC = 9, R_NREGS = 16 };
#define FWOCT_LOG2_FFT 13 /* FFT capacity 8192 */

typedef struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int configured, running, thread_live, overflow, stopped;
	pthread_t thread;
	struct ADQParameters p;
	int nactive, active[NCH];
	int64_t samples, rpb, nbuf;
	size_t buffer_bytes; /* all channels of one index */
	uint8_t* mem;
	int locked[ADQ_MAX_NOF_BUFFERS]; /* channels still locking it */
	int done[ADQ_MAX_NOF_BUFFERS];   /* filled, not yet unlocked */
	int64_t next_fill, next_aline;
	uint32_t regs[R_NREGS];
	uint32_t table_addr;
	int16_t background[1 << FWOCT_LOG2_FFT];
	float complex window[1 << FWOCT_LOG2_FFT];
} board;

typedef struct {
	int nboards;
	board* boards;
	ADQInfoListEntry* list;
} control_unit;

static int lib_major = ADQAPI_VERSION_MAJOR, lib_minor = ADQAPI_VERSION_MINOR;
static size_t fifo_bytes = 64u << 20;

__attribute__((constructor)) static void init(void) {
	const char* s = getenv("VGV_ADQAPI_VERSION");
	if (s) sscanf(s, "%d.%d", &lib_major, &lib_minor);
	s = getenv("VGV_ADQ_FIFO_BYTES");
	if (s) fifo_bytes = (size_t)strtoull(s, NULL, 10);
}

static int fwoct_present(void) {
	const char* s = getenv("VGV_ADQ_FWOCT");
	return !(s && strcmp(s, "0") == 0);
}

EXPORT int ADQAPI_ValidateVersion(int major, int minor) {
	if (major != lib_major) return -1;
	if (minor == lib_minor) return 0;
	return minor < lib_minor ? -2 : -1; /* a newer caller than the library: incompatible */
}

EXPORT void* CreateADQControlUnit(void) {
	control_unit* cu = calloc(1, sizeof *cu);
	const char* s = getenv("VGV_ADQ_BOARDS");
	cu->nboards = s ? atoi(s) : 1;
	if (cu->nboards < 0) cu->nboards = 0;
	cu->boards = calloc((size_t)(cu->nboards > 0 ? cu->nboards : 1), sizeof(board));
	cu->list = calloc((size_t)(cu->nboards > 0 ? cu->nboards : 1), sizeof(ADQInfoListEntry));
	for (int i = 0; i < cu->nboards; i++) {
		pthread_mutex_init(&cu->boards[i].mu, NULL);
		pthread_cond_init(&cu->boards[i].cv, NULL);
		cu->list[i].HWIFType = 1; /* HWIF_PCIE */
		cu->list[i].ProductID = 0x0031; /* PID_ADQ32 */
		cu->list[i].VendorID = 0x1b37;
		snprintf(cu->list[i].DevFile, sizeof cu->list[i].DevFile, "/dev/vgadq%d", i);
	}
	return cu;
}

static board* lookup(void* h, int num) {
	control_unit* cu = h;
	if (!cu || num < 1 || num > cu->nboards) return NULL;
	return &cu->boards[num - 1];
}

static void stop_board(board* b) {
	pthread_mutex_lock(&b->mu);
	b->running = 0;
	b->stopped = 1;
	pthread_cond_broadcast(&b->cv);
	int live = b->thread_live;
	b->thread_live = 0;
	pthread_mutex_unlock(&b->mu);
	if (live) {
		pthread_join(b->thread, NULL);
		vgv_clock_stop();
	}
}

EXPORT void DeleteADQControlUnit(void* h) {
	control_unit* cu = h;
	if (!cu) return;
	for (int i = 0; i < cu->nboards; i++) {
		stop_board(&cu->boards[i]);
		free(cu->boards[i].mem);
	}
	free(cu->boards);
	free(cu->list);
	free(cu);
}

EXPORT int ADQControlUnit_EnableErrorTrace(void* h, unsigned int level, const char* dir) { return h != NULL; }

EXPORT int ADQControlUnit_ListDevices(void* h, ADQInfoListEntry** list, unsigned int* n) {
	control_unit* cu = h;
	if (!cu || !list || !n) return 0;
	*list = cu->list;
	*n = (unsigned)cu->nboards;
	if (vgv_fault_at(INT64_MAX) == VGV_FAULT_BOARD_REMOVED) *n = 0;
	return 1;
}

EXPORT int ADQControlUnit_SetupDevice(void* h, int index) {
	control_unit* cu = h;
	return cu && index >= 0 && index < cu->nboards;
}

static void defaults(struct ADQParameters* p) {
	memset(p, 0, sizeof *p);
	p->id = ADQ_PARAMETER_ID_TOP;
	p->constant.nof_channels = NCH;
	p->constant.nof_pattern_generators = ADQ_MAX_NOF_PATTERN_GENERATORS;
	snprintf(p->constant.serial_number, sizeof p->constant.serial_number, "VG00001");
	snprintf(p->constant.product_name, sizeof p->constant.product_name, "ADQ32");
	snprintf(p->constant.product_options, sizeof p->constant.product_options, "-VIRTUAL");
	snprintf(p->constant.firmware_name, sizeof p->constant.firmware_name, fwoct_present() ? "FWOCT" : "FWDAQ");
	p->constant.clock_system.clock_generator = ADQ_CLOCK_GENERATOR_INTERNAL_PLL;
	p->constant.clock_system.reference_source = ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL;
	p->constant.clock_system.sampling_frequency = 2.5e9;
	p->constant.clock_system.reference_frequency = 10e6;
	p->event_source.periodic.frequency = 10e3;
	for (int c = 0; c < ADQ_MAX_NOF_CHANNELS; c++) {
		p->acquisition.channel[c].trigger_source = ADQ_EVENT_SOURCE_TRIG;
		p->signal_processing.sample_skip.channel[c].skip_factor = 1;
		p->transfer.channel[c].nof_buffers = ADQ_MAX_NOF_BUFFERS;
	}
	p->magic = ADQ_PARAMETERS_MAGIC;
}

EXPORT int ADQ_InitializeParameters(void* h, int num, int id, void* out) {
	if (!lookup(h, num) || !out) return ADQ_EINVAL;
	if (id != ADQ_PARAMETER_ID_TOP) return ADQ_EUNSUPPORTED;
	defaults(out);
	return (int)sizeof(struct ADQParameters);
}

static int valid_source(int s) {
	return s == ADQ_EVENT_SOURCE_TRIG || s == ADQ_EVENT_SOURCE_SYNC || s == ADQ_EVENT_SOURCE_GPIOA0 ||
	       s == ADQ_EVENT_SOURCE_PERIODIC || s == ADQ_EVENT_SOURCE_SOFTWARE;
}

EXPORT int ADQ_SetParameters(void* h, int num, void* in) {
	board* b = lookup(h, num);
	struct ADQParameters* p = in;
	if (!b || !p) return ADQ_EINVAL;
	if (p->id != ADQ_PARAMETER_ID_TOP || p->magic != ADQ_PARAMETERS_MAGIC) return ADQ_EINVAL;
	pthread_mutex_lock(&b->mu);
	int running = b->running;
	pthread_mutex_unlock(&b->mu);
	if (running) return ADQ_ENOTREADY;
	const typeof(p->constant.clock_system)* clk = &p->constant.clock_system;
	if (!(clk->sampling_frequency > 0) || !(clk->reference_frequency > 0)) return ADQ_EINVAL;
	if (clk->clock_generator != ADQ_CLOCK_GENERATOR_INTERNAL_PLL && clk->clock_generator != ADQ_CLOCK_GENERATOR_EXTERNAL_CLOCK) return ADQ_EINVAL;
	if (clk->reference_source < ADQ_REFERENCE_CLOCK_SOURCE_INTERNAL || clk->reference_source > ADQ_REFERENCE_CLOCK_SOURCE_PXIE_10M) return ADQ_EINVAL;
#if ADQAPI_VERSION_MAJOR < 10
	if (p->transfer.common.transfer_records_to_host_enabled != 1) return ADQ_EUNSUPPORTED;
#else
	if (p->transfer.common.record_buffer_memory_owner != ADQ_MEMORY_OWNER_API) return ADQ_EUNSUPPORTED;
#endif
	if (!p->transfer.common.packed_buffers_enabled) return ADQ_EUNSUPPORTED;
	int nactive = 0, active[NCH];
	int64_t samples = 0, rbs = 0, nbuf = 0, periodic = 0;
	for (int c = 0; c < ADQ_MAX_NOF_CHANNELS; c++) {
		if (p->acquisition.channel[c].nof_records == 0) continue;
		if (c >= NCH) return ADQ_EINVAL;
		const typeof(p->acquisition.channel[0])* a = &p->acquisition.channel[c];
		const typeof(p->transfer.channel[0])* t = &p->transfer.channel[c];
		if (a->record_length <= 0 || a->nof_records < -1) return ADQ_EINVAL;
		if (!valid_source(a->trigger_source)) return ADQ_EINVAL;
		if (p->signal_processing.sample_skip.channel[c].skip_factor < 1) return ADQ_EINVAL;
		if (a->horizontal_offset < 0) return ADQ_EINVAL;
		if (t->record_size != 2 * a->record_length || t->record_buffer_size <= 0 || t->record_buffer_size % t->record_size != 0) return ADQ_EINVAL;
		if (t->nof_buffers < 1 || t->nof_buffers > ADQ_MAX_NOF_BUFFERS) return ADQ_EINVAL;
		if (nactive > 0 && (a->record_length != samples || t->record_buffer_size != rbs || t->nof_buffers != nbuf)) return ADQ_EINVAL;
		samples = a->record_length;
		rbs = t->record_buffer_size;
		nbuf = t->nof_buffers;
		periodic |= a->trigger_source == ADQ_EVENT_SOURCE_PERIODIC;
		active[nactive++] = c;
	}
	if (nactive == 0) return ADQ_EINVAL;
	if (periodic && !(p->event_source.periodic.frequency > 0)) return ADQ_EINVAL;
	size_t bytes = (size_t)rbs * (size_t)nactive;
	uint8_t* mem = calloc((size_t)nbuf, bytes);
	if (!mem) return ADQ_EEXTERNAL;
	pthread_mutex_lock(&b->mu);
	free(b->mem);
	b->mem = mem;
	b->p = *p;
	b->nactive = nactive;
	memcpy(b->active, active, sizeof active);
	b->samples = samples;
	b->rpb = rbs / (2 * samples);
	b->nbuf = nbuf;
	b->buffer_bytes = bytes;
	memset(b->locked, 0, sizeof b->locked);
	memset(b->done, 0, sizeof b->done);
	b->configured = 1;
	pthread_mutex_unlock(&b->mu);
	/* the API owns the buffers and reports where they are (packed by index) */
	for (int k = 0; k < nactive; k++) {
		for (int i = 0; i < nbuf; i++) {
			p->transfer.channel[active[k]].record_buffer[i] = mem + (size_t)i * bytes + (size_t)k * (size_t)rbs;
		}
	}
	vgv_config c;
	vgv_config_get(&c);
	c.samples_per_aline = (int32_t)samples;
	if (periodic) c.aline_rate_hz = p->event_source.periodic.frequency;
	vgv_configure(&c);
	return (int)sizeof(struct ADQParameters);
}

EXPORT int ADQ_ReadUserRegister(void* h, int num, int ul, uint32_t reg, uint32_t* data) {
	board* b = lookup(h, num);
	if (!b || !data || ul != ADQ_USER_LOGIC2 || reg >= R_NREGS) return ADQ_EINVAL;
	if (reg == R_MODULEID) {
		if (!fwoct_present()) {
			*data = 0;
			return ADQ_EOK;
		}
		/* version 8, id 0x4b, 1 clock channel, 1 OCT channel, FFT and sample-time capacity 2^13 */
		*data = 8u | (0x4bu << 8) | (1u << 16) | (1u << 17) | ((uint32_t)FWOCT_LOG2_FFT << 19) | ((uint32_t)FWOCT_LOG2_FFT << 24);
		return ADQ_EOK;
	}
	pthread_mutex_lock(&b->mu);
	*data = b->regs[reg];
	pthread_mutex_unlock(&b->mu);
	return ADQ_EOK;
}

EXPORT int ADQ_WriteUserRegister(void* h, int num, int ul, uint32_t reg, uint32_t mask, uint32_t data, uint32_t* ret) {
	board* b = lookup(h, num);
	if (!b || ul != ADQ_USER_LOGIC2 || reg >= R_NREGS || reg == R_MODULEID) return ADQ_EINVAL;
	if (!fwoct_present()) return ADQ_EUNSUPPORTED;
	pthread_mutex_lock(&b->mu);
	uint32_t v = (b->regs[reg] & mask) | (data & ~mask); /* set mask bits keep their value */
	b->regs[reg] = v;
	if (reg == R_ADDRRESET && v) b->table_addr = 0;
	if (reg == R_TABLEDATA) {
		uint32_t t = b->regs[R_TABLECONFIG], a = b->table_addr++;
		if (a < (1u << FWOCT_LOG2_FFT)) {
			if (t == 2) b->background[a] = (int16_t)(v & 0xffff);
			if (t == 4) {
				int16_t re = (int16_t)(v & 0xffff), im = (int16_t)(v >> 16);
				b->window[a] = (float)re / 16384.0f + I * ((float)im / 16384.0f);
			}
		}
	}
	if (ret) *ret = v;
	pthread_mutex_unlock(&b->mu);
	return ADQ_EOK;
}

/* fwoct applies the firmware's processing to one record in place (b->mu not held; registers read at start). */
static void fwoct(const uint32_t* regs, const int16_t* bg, const float complex* win, uint16_t* rec, int64_t n, float complex* tmp) {
	uint32_t cfg = regs[R_CONFIG];
	int pre = (cfg >> 3) & 1, fft = (cfg >> 4) & 1, mag = (cfg >> 5) & 3, len = 1 << ((cfg >> 8) & 15);
	if (!pre && !fft) return;
	if (!fft) len = (int)n;
	for (int i = 0; i < len; i++) {
		float complex x = 0;
		if (i < n) {
			float v = (float)rec[i];
			if (pre) v = (float)((int32_t)rec[i] - (int32_t)bg[i]), x = v * win[i];
			else x = v;
		}
		tmp[i] = x;
	}
	if (!fft) {
		for (int64_t i = 0; i < n; i++) {
			float v = crealf(tmp[i]);
			rec[i] = (uint16_t)(int16_t)fmaxf(fminf(roundf(v), 32767.f), -32768.f);
		}
		return;
	}
	/* radix-2 decimation in time, in place */
	for (int i = 1, j = 0; i < len; i++) {
		int bit = len >> 1;
		for (; j & bit; bit >>= 1) j ^= bit;
		j ^= bit;
		if (i < j) { float complex t = tmp[i]; tmp[i] = tmp[j]; tmp[j] = t; }
	}
	for (int m = 2; m <= len; m <<= 1) {
		double ang = -2 * M_PI / m;
		for (int k = 0; k < len; k += m) {
			for (int j = 0; j < m / 2; j++) {
				float complex w = (float)cos(ang * j) + I * (float)sin(ang * j);
				float complex u = tmp[k + j], t = w * tmp[k + j + m / 2];
				tmp[k + j] = u + t;
				tmp[k + j + m / 2] = u - t;
			}
		}
	}
	for (int64_t i = 0; i < n; i++) {
		float complex x = i < len ? tmp[i] : 0;
		float v;
		switch (mag) {
		case 1: v = cabsf(x) / (float)len; break;                          /* magnitude */
		case 2: v = 20.f * log10f(cabsf(x) / (float)len + 1e-3f) * 100.f; break; /* log magnitude, centi-dB */
		default: v = crealf(x) / (float)len; break;                        /* complex: the real part (the virtual board's record holds one value a sample) */
		}
		rec[i] = (uint16_t)(int16_t)fmaxf(fminf(roundf(v), 32767.f), -32768.f);
	}
}

static void deadline_after(struct timespec* ts, double s) {
	clock_gettime(CLOCK_REALTIME, ts);
	long ns = ts->tv_nsec + (long)(s * 1e9);
	ts->tv_sec += ns / 1000000000L;
	ts->tv_nsec = ns % 1000000000L;
}

/* fill_range makes records lo..hi-1 of one buffer (vgv_parallel: on several
 * host threads, as the board's own DSP is not held to one host core). */
typedef struct {
	board* b;
	const uint32_t* regs;
	int64_t first;
	uint8_t* base;
} fill_job;

static void fill_range(void* ctx, int64_t lo, int64_t hi) {
	fill_job* j = ctx;
	board* b = j->b;
	int64_t len = 1 << FWOCT_LOG2_FFT;
	float complex* tmp = malloc(sizeof(float complex) * (size_t)(len > b->samples ? len : b->samples));
	uint16_t* rec = malloc((size_t)b->samples * 2);
	for (int64_t r = lo; r < hi; r++) {
		if (tmp && rec) {
			vgv_spectrum(j->first + r, rec, (int32_t)b->samples);
			if (j->regs[R_CONFIG] & ((1u << 3) | (1u << 4))) fwoct(j->regs, b->background, b->window, rec, b->samples, tmp);
		} else if (rec) {
			memset(rec, 0, (size_t)b->samples * 2); /* out of host memory: a blank record, not a crash */
		}
		for (int k = 0; k < b->nactive; k++) {
			uint16_t* dst = (uint16_t*)(j->base + (size_t)k * (size_t)b->p.transfer.channel[b->active[k]].record_buffer_size);
			if (rec) memcpy(dst + (size_t)r * (size_t)b->samples, rec, (size_t)b->samples * 2);
			else memset(dst + (size_t)r * (size_t)b->samples, 0, (size_t)b->samples * 2);
		}
	}
	free(tmp);
	free(rec);
}

/* filler is the board's DMA engine. */
static void* filler(void* arg) {
	board* b = arg;
	vgv_config c;
	vgv_config_get(&c);
	int64_t fifo_records = (int64_t)(fifo_bytes / ((size_t)b->samples * (size_t)b->nactive * 2));
	pthread_mutex_lock(&b->mu);
	while (b->running) {
		int idx = (int)(b->next_fill % b->nbuf);
		int64_t now = vgv_now_alines();
		struct timespec ts;
		if (vgv_fault_at(b->next_aline + b->rpb - 1) == VGV_FAULT_BOARD_REMOVED) {
			b->running = 0; /* pulled from the bus: no more data */
			pthread_cond_broadcast(&b->cv);
			break;
		}
		if (b->locked[idx]) { /* the host still holds the buffer the board must write next */
			if (c.aline_rate_hz > 0 && now - b->next_aline > fifo_records) {
				b->overflow = 1;
				b->running = 0;
				pthread_cond_broadcast(&b->cv);
				break;
			}
			deadline_after(&ts, 0.005);
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		int64_t need = b->next_aline + b->rpb;
		if (c.aline_rate_hz > 0 && now < need) {
			deadline_after(&ts, fmin((double)(need - now) / c.aline_rate_hz, 0.02));
			pthread_cond_timedwait(&b->cv, &b->mu, &ts);
			continue;
		}
		uint32_t regs[R_NREGS];
		memcpy(regs, b->regs, sizeof regs);
		int64_t first = b->next_aline;
		uint8_t* base = b->mem + (size_t)idx * b->buffer_bytes;
		pthread_mutex_unlock(&b->mu);
		fill_job job = {b, regs, first, base};
		vgv_parallel(b->rpb, vgv_min_per_worker((int32_t)b->samples), fill_range, &job);
		pthread_mutex_lock(&b->mu);
		if (!b->running) break;
		b->locked[idx] = b->nactive;
		b->done[idx] = 1;
		b->next_fill++;
		b->next_aline += b->rpb;
		pthread_cond_broadcast(&b->cv);
	}
	pthread_mutex_unlock(&b->mu);
	return NULL;
}

EXPORT int ADQ_StartDataAcquisition(void* h, int num) {
	board* b = lookup(h, num);
	if (!b) return ADQ_EINVAL;
	pthread_mutex_lock(&b->mu);
	if (!b->configured) {
		pthread_mutex_unlock(&b->mu);
		return ADQ_ENOTREADY;
	}
	if (b->running || b->thread_live) {
		pthread_mutex_unlock(&b->mu);
		return ADQ_ENOTREADY;
	}
	b->overflow = 0;
	b->stopped = 0;
	b->next_fill = 0;
	b->next_aline = 0;
	memset(b->locked, 0, sizeof b->locked);
	memset(b->done, 0, sizeof b->done);
	b->running = 1;
	b->thread_live = 1;
	vgv_clock_start();
	pthread_create(&b->thread, NULL, filler, b);
	pthread_mutex_unlock(&b->mu);
	return ADQ_EOK;
}

EXPORT int ADQ_StopDataAcquisition(void* h, int num) {
	board* b = lookup(h, num);
	if (!b) return ADQ_EINVAL;
	pthread_mutex_lock(&b->mu);
	int was = b->thread_live;
	pthread_mutex_unlock(&b->mu);
	stop_board(b);
	return was ? ADQ_EOK : ADQ_ENOTREADY;
}

EXPORT int ADQ_WaitForP2pBuffers(void* h, int num, struct ADQP2pStatus* st, int timeout_ms) {
	board* b = lookup(h, num);
	if (!b || !st) return ADQ_EINVAL;
	memset(st, 0, sizeof *st);
	struct timespec ts;
	deadline_after(&ts, timeout_ms > 0 ? timeout_ms / 1e3 : 0);
	pthread_mutex_lock(&b->mu);
	for (;;) {
		int any = 0;
		for (int i = 0; i < b->nbuf; i++) any |= b->done[i];
		if (any) break;
		if (b->stopped) {
			pthread_mutex_unlock(&b->mu);
			return ADQ_EINTERRUPTED;
		}
		if (pthread_cond_timedwait(&b->cv, &b->mu, &ts) != 0) {
			pthread_mutex_unlock(&b->mu);
			return ADQ_EAGAIN;
		}
	}
	for (int k = 0; k < b->nactive; k++) {
		struct ADQP2pStatusChannel* ch = &st->channel[b->active[k]];
		for (int64_t j = 0; j < b->nbuf; j++) {
			int i = (int)((b->next_fill + j) % b->nbuf); /* oldest first */
			if (b->done[i]) ch->completed_buffers[ch->nof_completed_buffers++] = (int16_t)i;
		}
	}
	pthread_mutex_unlock(&b->mu);
	return ADQ_EOK;
}

EXPORT int ADQ_UnlockP2pBuffers(void* h, int num, int channel, uint64_t mask) {
	board* b = lookup(h, num);
	if (!b || channel < 0 || channel >= NCH) return ADQ_EINVAL;
	pthread_mutex_lock(&b->mu);
	for (int i = 0; i < b->nbuf; i++) {
		if (!(mask & (1ull << i))) continue;
		b->done[i] = 0;
		if (b->locked[i] > 0) b->locked[i]--;
	}
	pthread_cond_broadcast(&b->cv);
	pthread_mutex_unlock(&b->mu);
	return ADQ_EOK;
}

EXPORT int ADQ_GetStatus(void* h, int num, int id, void* out) {
	board* b = lookup(h, num);
	if (!b || !out) return ADQ_EINVAL;
	if (id != ADQ_STATUS_ID_OVERFLOW) return ADQ_EUNSUPPORTED;
	struct ADQOverflowStatus* s = out;
	memset(s, 0, sizeof *s);
	pthread_mutex_lock(&b->mu);
	s->overflow = b->overflow;
	pthread_mutex_unlock(&b->mu);
	return (int)sizeof *s;
}
