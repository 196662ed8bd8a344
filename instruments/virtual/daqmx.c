/* daqmx.c: libnidaqmx.so of the virtual OCT instrument, a fake NI-DAQmx
 * card with the NI-DAQmx C API's symbol names, over the shared model
 * (vgvirtual.h).
 *
 * It implements the functions vortex's DAQmx driver calls (vortex's
 * src/vortex/driver/daqmx.cpp): tasks, AO/AI voltage and DO/DI channels,
 * the sample clock (with a timebase divisor) and its start trigger, buffer
 * sizes, regeneration, analog and digital write/read, start/stop/clear and
 * the error strings. Signatures, constants and error codes follow NI's
 * published NI-DAQmx C API as the `nidaqmx` package on PyPI (1.7.0)
 * declares it: nidaqmx/_library_interpreter.py (argument types of each
 * DAQmx* C function), nidaqmx/constants.py (DAQmx_Val_* values) and
 * nidaqmx/error_codes.py (DAQmxError* codes). The error texts here are our
 * own paraphrases, not NI's.
 *
 * The card, as far as a driver can observe it:
 * - Devices Dev1 and Dev2, each with ao0..ao3 (-10..10 V), ai0..ai15
 *   (-10..10 V), port0 (32 lines), port1 and port2 (8 lines each) and the
 *   terminals PFI0..PFI15 ("pfi0", "PFI0", "/Dev1/PFI0"); names are
 *   case-insensitive. Channel lists ("Dev1/ao0,Dev1/ao1") and ranges
 *   ("Dev1/ao0:1", "Dev1/port0/line0:7") expand as NI's do.
 * - Sample k of a task whose clock (or timebase) is a PFI terminal is
 *   A-line k of the model's clock (vgv_now_alines; divided by the timebase
 *   divisor): the galvo waveforms are paced by the swept source's A-line
 *   trigger. With VGV_TRIGGER=free in the environment (no digitizer in the
 *   loop), and always for the onboard clock, the task's own clock runs from
 *   DAQmxStartTask at the configured rate.
 * - Output with regeneration off (DAQmx_Val_DoNotAllowRegen): a write
 *   waits for space in the output buffer (DAQmxErrorSamplesCanNotYetBeWritten
 *   at its timeout); once the clock has passed the last sample written, the
 *   generation has underflowed and every later write fails with
 *   DAQmxErrorGenStoppedToPreventRegenOfOldSamples until the task stops.
 *   Starting an output task with nothing written fails
 *   (DAQmxErrorOutputBufferEmpty).
 * - Analog outputs ao0 and ao1 (x, y) are published to the model's galvo
 *   timeline (vgv_galvo_write) at the task's write position. Analog inputs
 *   ai0 and ai1 measure the galvo timeline (vgv_galvo_at); other inputs
 *   read 0. Input reads wait for the clock (DAQmxErrorSamplesNotYetAvailable
 *   at their timeout) and fail with DAQmxErrorSamplesNoLongerAvailable once
 *   the input buffer overflowed.
 * - VGV_DAQMX_RECORD=DIR appends every sample written by task NAME to
 *   DIR/NAME.ao (float64, one row of channels per sample) or DIR/NAME.do
 *   (uint32): what the card generated, for tests to compare.
 *
 * Task handles are opaque integers (slot and generation), so a stale or
 * made-up handle is refused with DAQmxErrorInvalidTask, never dereferenced.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgvirtual.h"

typedef int32_t int32;
typedef uint32_t uInt32;
typedef uint64_t uInt64;
typedef double float64;
typedef uint32_t bool32;
typedef void* TaskHandle;

#define EXPORT __attribute__((visibility("default")))

/* DAQmx_Val_* (nidaqmx/constants.py) */
enum {
	VAL_VOLTS = 10348,
	VAL_RISING = 10280,
	VAL_FALLING = 10171,
	VAL_RSE = 10083,
	VAL_NRSE = 10078,
	VAL_DIFF = 10106,
	VAL_PSEUDODIFF = 12529,
	VAL_CFG_DEFAULT = -1,
	VAL_FINITE = 10178,
	VAL_CONTINUOUS = 10123,
	VAL_HW_SINGLE_POINT = 12522,
	VAL_CHAN_PER_LINE = 0,
	VAL_CHAN_FOR_ALL_LINES = 1,
	VAL_ALLOW_REGEN = 10097,
	VAL_DONT_ALLOW_REGEN = 10158,
	VAL_GROUP_BY_CHANNEL = 0,
	VAL_GROUP_BY_SCAN = 1,
};

/* DAQmxError* (nidaqmx/error_codes.py) */
enum {
	E_OK = 0,
	E_PAL_RESOURCE_RESERVED = -50103,
	E_INVALID_ROUTING_SOURCE = -89120,
	E_OPERATION_ABORTED = -201452,
	E_INVALID_NUM_SAMPS_TO_WRITE = -200622,
	E_NULL_PTR = -200604,
	E_INVALID_DIG_DATA_WRITE = -200562,
	E_INVALID_AO_DATA_WRITE = -200561,
	E_MULTI_CHAN_TYPES_IN_TASK = -200559,
	E_CANNOT_SET_WHEN_RUNNING = -200557,
	E_INVALID_LINE_GROUPING = -200528,
	E_INVALID_RANGE_SYNTAX = -200498,
	E_CHAN_ALREADY_IN_TASK = -200489,
	E_NO_CHANS_IN_TASK = -200478,
	E_OUTPUT_BUFFER_EMPTY = -200462,
	E_NOT_INPUT_TASK = -200457,
	E_NOT_OUTPUT_TASK = -200456,
	E_GEN_STOPPED_REGEN = -200290,
	E_SAMPLES_CAN_NOT_YET_BE_WRITTEN = -200292,
	E_SAMPLES_NOT_YET_AVAILABLE = -200284,
	E_SAMPLES_NO_LONGER_AVAILABLE = -200279,
	E_INVALID_DEVICE_ID = -200220,
	E_BUFFER_TOO_SMALL_FOR_STRING = -200228,
	E_PHYSICAL_CHAN_DOES_NOT_EXIST = -200170,
	E_INCORRECT_READ_FUNCTION = -200100,
	E_DUPLICATE_TASK = -200089,
	E_INVALID_TASK = -200088,
	E_MIN_NOT_LESS_THAN_MAX = -200082,
	E_INVALID_ATTRIBUTE_VALUE = -200077,
};

/* What the error codes mean: our words for NI's documented conditions. */
static const struct {
	int32 code;
	const char* text;
} messages[] = {
	{E_PAL_RESOURCE_RESERVED, "The resource is reserved by another task: the operation could not be completed."},
	{E_INVALID_ROUTING_SOURCE, "The source terminal could not be found on the device."},
	{E_OPERATION_ABORTED, "The operation was aborted: the task was stopped or cleared while it waited."},
	{E_INVALID_NUM_SAMPS_TO_WRITE, "The number of samples to write is not valid."},
	{E_NULL_PTR, "A required pointer argument is NULL."},
	{E_INVALID_DIG_DATA_WRITE, "The digital data written has bits set outside the lines of the channel."},
	{E_INVALID_AO_DATA_WRITE, "The analog data written is outside the channel's minimum and maximum values."},
	{E_MULTI_CHAN_TYPES_IN_TASK, "A task cannot hold channels of more than one type (analog/digital, input/output)."},
	{E_CANNOT_SET_WHEN_RUNNING, "The property cannot be set while the task is running."},
	{E_INVALID_LINE_GROUPING, "The line grouping is not valid."},
	{E_INVALID_RANGE_SYNTAX, "The range of channels or lines in the string is not valid."},
	{E_CHAN_ALREADY_IN_TASK, "The physical channel is already in the task."},
	{E_NO_CHANS_IN_TASK, "The operation needs the task to hold at least one channel."},
	{E_OUTPUT_BUFFER_EMPTY, "The generation cannot start: the output buffer is empty. Write samples before starting the task."},
	{E_NOT_INPUT_TASK, "The task has no input channels."},
	{E_NOT_OUTPUT_TASK, "The task has no output channels."},
	{E_GEN_STOPPED_REGEN, "The generation stopped so as not to regenerate old samples: the application did not write new "
	                      "samples fast enough. Write sooner, or increase the output buffer, or allow regeneration."},
	{E_SAMPLES_CAN_NOT_YET_BE_WRITTEN, "Some or all of the samples could not be written to the buffer yet: space frees "
	                                   "up only as the device generates the samples in it. Use a longer write timeout, "
	                                   "or check the sample clock."},
	{E_SAMPLES_NOT_YET_AVAILABLE, "Some or all of the samples requested have not been acquired yet: the read timed out."},
	{E_SAMPLES_NO_LONGER_AVAILABLE, "The samples requested are no longer available: the input buffer was overwritten "
	                                "because the application did not read fast enough."},
	{E_INVALID_DEVICE_ID, "The device does not exist."},
	{E_BUFFER_TOO_SMALL_FOR_STRING, "The buffer is too small for the string."},
	{E_PHYSICAL_CHAN_DOES_NOT_EXIST, "The physical channel does not exist on the device."},
	{E_INCORRECT_READ_FUNCTION, "The read function does not match the channel type of the task."},
	{E_DUPLICATE_TASK, "A task of that name already exists."},
	{E_INVALID_TASK, "The task handle is not valid: the task was cleared or never created."},
	{E_MIN_NOT_LESS_THAN_MAX, "The minimum must be less than the maximum."},
	{E_INVALID_ATTRIBUTE_VALUE, "The value is not supported for this property."},
};

static const char* message_of(int32 code) {
	if (code == 0) {
		return "No error.";
	}
	for (size_t i = 0; i < sizeof messages / sizeof messages[0]; i++) {
		if (messages[i].code == code) {
			return messages[i].text;
		}
	}
	return "Unknown NI-DAQmx error code (virtual instrument).";
}

/* The device's limits. */
#define NDEV 2
#define NAO 4
#define NAI 16
#define NPFI 16
#define MAX_RATE 4e6 /* samples/s, above any AO card vortex drives */
static const int port_lines[] = {32, 8, 8};
#define NPORT 3

enum kind { K_NONE, K_AO, K_AI, K_DO, K_DI };
static const char* kind_name[] = {"", "ao", "ai", "do", "di"};

typedef struct {
	int dev;       /* 0-based device */
	int index;     /* ao/ai number, or port */
	uInt32 mask;   /* lines of the port (digital) */
	float64 min, max;
	int32 terminal;
} chan;

#define MAX_CHANS 64
#define MAX_TASKS 256
#define NAME_CAP 256

typedef struct {
	int used;
	uint32_t gen;
	char name[NAME_CAP];
	enum kind kind;
	int nchan;
	chan chans[MAX_CHANS];
	/* timing */
	int timed;
	float64 rate;
	int32 mode, edge;
	uInt64 samps_per_chan;
	char source[NAME_CAP];  /* "" = onboard */
	char tb_source[NAME_CAP];
	uInt32 tb_div;
	char trig[NAME_CAP];
	int64_t buf;            /* buffer size, samples per channel (0: auto) */
	int regen;
	/* run state */
	int running;
	uint32_t run_gen;       /* bumped by stop/clear: waits in progress give up */
	int free_run;
	struct timespec t0;
	int64_t written, consumed;
	int32 failed;           /* sticky error of this run (underflow, overflow) */
	FILE* rec;
} task;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static task tasks[MAX_TASKS];
static int unnamed;

/* The last error's details, per thread (DAQmxGetExtendedErrorInfo). */
static __thread char last_error[1024];

static int32 fail(int32 code, const char* fmt, ...) {
	char detail[512] = "";
	if (fmt != NULL) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(detail, sizeof detail, fmt, ap);
		va_end(ap);
	}
	snprintf(last_error, sizeof last_error, "%s\n%s%sStatus Code: %d", message_of(code), detail,
	         detail[0] ? "\n" : "", code);
	return code;
}

static int32 ok(void) {
	last_error[0] = 0;
	return 0;
}

static TaskHandle handle_of(int slot) {
	return (TaskHandle)(uintptr_t)(((uint64_t)tasks[slot].gen << 16) | (uint64_t)(slot + 1));
}

/* lookup returns the live task of h (mu held), or NULL. */
static task* lookup(TaskHandle h) {
	uint64_t v = (uint64_t)(uintptr_t)h;
	uint64_t slot = (v & 0xffff);
	if (slot == 0 || slot > MAX_TASKS) {
		return NULL;
	}
	task* t = &tasks[slot - 1];
	if (!t->used || (uint32_t)(v >> 16) != t->gen) {
		return NULL;
	}
	return t;
}

static int eq_nocase(const char* a, const char* b) {
	for (; *a && *b; a++, b++) {
		if (tolower((unsigned char)*a) != tolower((unsigned char)*b)) return 0;
	}
	return *a == *b;
}

static int prefix_nocase(const char* s, const char* p) {
	for (; *p; s++, p++) {
		if (tolower((unsigned char)*s) != tolower((unsigned char)*p)) return 0;
	}
	return 1;
}

/* parse_uint reads a decimal number at *s, advancing it; -1 if none. */
static long parse_uint(const char** s) {
	if (!isdigit((unsigned char)**s)) return -1;
	long v = 0;
	while (isdigit((unsigned char)**s)) {
		v = v * 10 + (**s - '0');
		if (v > 1000000) return -1;
		(*s)++;
	}
	return v;
}

/* parse_device reads "DevN/" (an optional leading '/') and returns the
 * device index, or an error code. */
static int parse_device(const char** s, const char* whole) {
	if (**s == '/') (*s)++;
	if (!prefix_nocase(*s, "dev")) {
		return fail(E_INVALID_DEVICE_ID, "Device: %s\nThe virtual instrument has devices Dev1 and Dev2.", whole);
	}
	*s += 3;
	long d = parse_uint(s);
	if (d < 1 || d > NDEV || **s != '/') {
		return fail(E_INVALID_DEVICE_ID, "Device: %s\nThe virtual instrument has devices Dev1 and Dev2.", whole);
	}
	(*s)++;
	return (int)(d - 1);
}

/* trim copies [b, e) without surrounding spaces into out. */
static void trim(const char* b, const char* e, char* out, size_t cap) {
	while (b < e && isspace((unsigned char)*b)) b++;
	while (e > b && isspace((unsigned char)e[-1])) e--;
	size_t n = (size_t)(e - b) < cap - 1 ? (size_t)(e - b) : cap - 1;
	memcpy(out, b, n);
	out[n] = 0;
}

/* parse_item turns one physical channel name (no commas) into channels
 * appended to out; returns 0 or an error code. */
static int32 parse_item(const char* item, enum kind k, chan* out, int* n) {
	const char* s = item;
	int dev = parse_device(&s, item);
	if (dev < 0) return dev;
	if (k == K_AO || k == K_AI) {
		const char* p = k == K_AO ? "ao" : "ai";
		int count = k == K_AO ? NAO : NAI;
		if (!prefix_nocase(s, p)) {
			return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Physical Channel Name: %s\nExpected Dev<N>/%s<0..%d>.", item, p,
			            count - 1);
		}
		s += 2;
		long a = parse_uint(&s), b = a;
		if (*s == ':') {
			s++;
			b = parse_uint(&s);
			if (b < 0) return fail(E_INVALID_RANGE_SYNTAX, "Physical Channel Name: %s", item);
		}
		if (a < 0 || *s != 0) {
			return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Physical Channel Name: %s", item);
		}
		long lo = a < b ? a : b, hi = a < b ? b : a;
		if (hi >= count) {
			return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Physical Channel Name: %s\nDev%d has %s0..%s%d.", item, dev + 1,
			            p, p, count - 1);
		}
		for (long i = a;; i += (a <= b ? 1 : -1)) {
			if (*n >= MAX_CHANS) return fail(E_INVALID_ATTRIBUTE_VALUE, "Too many channels in one task.");
			out[(*n)++] = (chan){dev, (int)i, 0, 0, 0, 0};
			if (i == b) break;
		}
		(void)lo;
		return 0;
	}
	/* digital: portN[/lineA[:B]] */
	if (!prefix_nocase(s, "port")) {
		return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Lines: %s\nExpected Dev<N>/port<P>[/line<L>[:<M>]].", item);
	}
	s += 4;
	long port = parse_uint(&s);
	if (port < 0 || port >= NPORT) {
		return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Lines: %s\nDev%d has port0..port%d.", item, dev + 1, NPORT - 1);
	}
	int lines = port_lines[port];
	uInt32 mask = lines == 32 ? 0xffffffffu : ((1u << lines) - 1);
	if (*s == '/') {
		s++;
		if (!prefix_nocase(s, "line")) return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Lines: %s", item);
		s += 4;
		long a = parse_uint(&s), b = a;
		if (*s == ':') {
			s++;
			b = parse_uint(&s);
			if (b < 0) return fail(E_INVALID_RANGE_SYNTAX, "Lines: %s", item);
		}
		if (a < 0 || *s != 0) return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Lines: %s", item);
		long lo = a < b ? a : b, hi = a < b ? b : a;
		if (hi >= lines) {
			return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Lines: %s\nport%ld has line0..line%d.", item, port, lines - 1);
		}
		mask = 0;
		for (long i = lo; i <= hi; i++) mask |= 1u << i;
	} else if (*s != 0) {
		return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Lines: %s", item);
	}
	if (*n >= MAX_CHANS) return fail(E_INVALID_ATTRIBUTE_VALUE, "Too many channels in one task.");
	out[(*n)++] = (chan){dev, (int)port, mask, 0, 0, 0};
	return 0;
}

/* parse_list expands a comma-separated list of physical channels. */
static int32 parse_list(const char* list, enum kind k, chan* out, int* n) {
	if (list == NULL) return fail(E_NULL_PTR, "Physical channel name is NULL.");
	*n = 0;
	const char* b = list;
	for (;;) {
		const char* e = strchr(b, ',');
		if (e == NULL) e = b + strlen(b);
		char item[NAME_CAP];
		trim(b, e, item, sizeof item);
		if (item[0] == 0) {
			return fail(E_PHYSICAL_CHAN_DOES_NOT_EXIST, "Physical Channel Name: '%s'\nAn empty name in the list.", list);
		}
		int32 err = parse_item(item, k, out, n);
		if (err) return err;
		if (*e == 0) break;
		b = e + 1;
	}
	return 0;
}

/* is_pfi tells whether s names a PFI terminal of the virtual devices. */
static int is_pfi(const char* s) {
	const char* p = s;
	if (*p == '/') {
		p++;
		if (!prefix_nocase(p, "dev")) return 0;
		p += 3;
		long d = parse_uint(&p);
		if (d < 1 || d > NDEV || *p != '/') return 0;
		p++;
	}
	if (!prefix_nocase(p, "pfi")) return 0;
	p += 3;
	long i = parse_uint(&p);
	return i >= 0 && i < NPFI && *p == 0;
}

static int is_onboard(const char* s) { return s == NULL || s[0] == 0 || eq_nocase(s, "OnboardClock"); }

static int32 check_terminal(const char* s, const char* what) {
	if (is_onboard(s) || is_pfi(s)) return 0;
	return fail(E_INVALID_ROUTING_SOURCE, "Property: %s\nSource Terminal: %s\nThe virtual devices have PFI0..PFI%d.",
	            what, s, NPFI - 1);
}

static double now_s(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double since(const struct timespec* t0) {
	return now_s() - ((double)t0->tv_sec + 1e-9 * (double)t0->tv_nsec);
}

/* external tells whether the task's samples are the model's A-lines. */
static int external(const task* t) {
	return is_pfi(t->source) || (is_onboard(t->source) && is_pfi(t->tb_source));
}

/* clocked is the number of samples the task's clock has produced (mu held). */
static int64_t clocked(const task* t) {
	if (!t->running) return 0;
	if (t->free_run) {
		return (int64_t)(since(&t->t0) * t->rate);
	}
	int64_t n = vgv_now_alines();
	uInt32 div = t->tb_div > 0 && is_onboard(t->source) ? t->tb_div : 1;
	return n < 0 ? 0 : n / div;
}

static void nap(void) {
	struct timespec d = {0, 100000}; /* 100 us */
	nanosleep(&d, NULL);
}

static int is_output(enum kind k) { return k == K_AO || k == K_DO; }

/* buffer_size is the task's buffer in samples per channel. */
static int64_t buffer_size(const task* t) {
	if (t->buf > 0) return t->buf;
	if (t->samps_per_chan > 0) return (int64_t)t->samps_per_chan;
	return 10000;
}

/* ---- tasks ---- */

EXPORT int32 DAQmxCreateTask(const char* name, TaskHandle* out) {
	if (out == NULL) return fail(E_NULL_PTR, "taskHandle is NULL.");
	pthread_mutex_lock(&mu);
	char nm[NAME_CAP];
	if (name == NULL || name[0] == 0) {
		snprintf(nm, sizeof nm, "_unnamedTask<%d>", unnamed++);
	} else {
		snprintf(nm, sizeof nm, "%s", name);
	}
	int slot = -1;
	for (int i = 0; i < MAX_TASKS; i++) {
		if (tasks[i].used && eq_nocase(tasks[i].name, nm)) {
			pthread_mutex_unlock(&mu);
			return fail(E_DUPLICATE_TASK, "Task Name: %s", nm);
		}
		if (!tasks[i].used && slot < 0) slot = i;
	}
	if (slot < 0) {
		pthread_mutex_unlock(&mu);
		return fail(E_INVALID_ATTRIBUTE_VALUE, "The virtual instrument holds at most %d tasks.", MAX_TASKS);
	}
	task* t = &tasks[slot];
	uint32_t gen = t->gen + 1;
	memset(t, 0, sizeof *t);
	t->gen = gen;
	t->used = 1;
	t->regen = 1;
	t->tb_div = 1;
	snprintf(t->name, sizeof t->name, "%s", nm);
	*out = handle_of(slot);
	pthread_mutex_unlock(&mu);
	return ok();
}

static void stop_locked(task* t) {
	if (t->kind == K_AO && (t->running || t->written > 0)) {
		for (int ch = 0; ch < t->nchan; ch++) {
			if (t->chans[ch].index <= 1) { /* it published the galvo timeline: the next run starts a new one */
				vgv_galvo_reset();
				break;
			}
		}
	}
	t->running = 0;
	t->run_gen++;
	t->written = t->consumed = 0;
	t->failed = 0;
}

EXPORT int32 DAQmxClearTask(TaskHandle h) {
	pthread_mutex_lock(&mu);
	task* t = lookup(h);
	if (t == NULL) {
		pthread_mutex_unlock(&mu);
		return fail(E_INVALID_TASK, NULL);
	}
	stop_locked(t);
	if (t->rec) fclose(t->rec);
	t->rec = NULL;
	t->used = 0;
	t->gen++;
	pthread_mutex_unlock(&mu);
	return ok();
}

/* reserved tells whether another running task uses one of t's channels. */
static const task* reserved(const task* t, const chan** which) {
	for (int i = 0; i < MAX_TASKS; i++) {
		const task* o = &tasks[i];
		if (!o->used || o == t || !o->running) continue;
		int digital = t->kind == K_DO || t->kind == K_DI, odigital = o->kind == K_DO || o->kind == K_DI;
		if (digital != odigital || (!digital && o->kind != t->kind)) continue;
		for (int a = 0; a < t->nchan; a++) {
			for (int b = 0; b < o->nchan; b++) {
				const chan *x = &t->chans[a], *y = &o->chans[b];
				if (x->dev == y->dev && x->index == y->index && (!digital || (x->mask & y->mask))) {
					*which = x;
					return o;
				}
			}
		}
	}
	return NULL;
}

EXPORT int32 DAQmxStartTask(TaskHandle h) {
	pthread_mutex_lock(&mu);
	task* t = lookup(h);
	int32 err = 0;
	if (t == NULL) {
		err = fail(E_INVALID_TASK, NULL);
	} else if (t->running) {
		err = ok();
	} else if (t->nchan == 0) {
		err = fail(E_NO_CHANS_IN_TASK, "Task Name: %s", t->name);
	} else if (is_output(t->kind) && t->timed && t->written == 0) {
		err = fail(E_OUTPUT_BUFFER_EMPTY, "Task Name: %s", t->name);
	} else {
		const chan* c = NULL;
		const task* o = reserved(t, &c);
		if (o != NULL) {
			err = fail(E_PAL_RESOURCE_RESERVED, "Task Name: %s\nDev%d/%s%d is used by the running task %s.", t->name,
			           c->dev + 1, t->kind == K_DO || t->kind == K_DI ? "port" : kind_name[t->kind], c->index, o->name);
		} else {
			const char* trig = getenv("VGV_TRIGGER");
			t->free_run = !external(t) || (trig != NULL && eq_nocase(trig, "free"));
			clock_gettime(CLOCK_MONOTONIC, &t->t0);
			t->running = 1;
			t->failed = 0;
			t->consumed = 0;
			err = ok();
		}
	}
	pthread_mutex_unlock(&mu);
	return err;
}

EXPORT int32 DAQmxStopTask(TaskHandle h) {
	pthread_mutex_lock(&mu);
	task* t = lookup(h);
	if (t == NULL) {
		pthread_mutex_unlock(&mu);
		return fail(E_INVALID_TASK, NULL);
	}
	stop_locked(t);
	pthread_mutex_unlock(&mu);
	return ok();
}

/* ---- channels ---- */

static int32 add_channels(TaskHandle h, enum kind k, const char* names, float64 min, float64 max, int32 terminal) {
	chan cs[MAX_CHANS];
	int n = 0;
	pthread_mutex_lock(&mu);
	task* t = lookup(h);
	int32 err = 0;
	if (t == NULL) {
		err = fail(E_INVALID_TASK, NULL);
	} else if (t->running) {
		err = fail(E_CANNOT_SET_WHEN_RUNNING, "Task Name: %s", t->name);
	} else if (t->kind != K_NONE && t->kind != k) {
		err = fail(E_MULTI_CHAN_TYPES_IN_TASK, "Task Name: %s\nThe task holds %s channels; adding %s.", t->name,
		           kind_name[t->kind], kind_name[k]);
	} else if ((err = parse_list(names, k, cs, &n)) == 0) {
		for (int i = 0; i < n && err == 0; i++) {
			cs[i].min = min;
			cs[i].max = max;
			cs[i].terminal = terminal;
			for (int j = 0; j < t->nchan + i && err == 0; j++) {
				const chan* o = j < t->nchan ? &t->chans[j] : &cs[j - t->nchan];
				int digital = k == K_DO || k == K_DI;
				if (o->dev == cs[i].dev && o->index == cs[i].index && (!digital || (o->mask & cs[i].mask))) {
					err = fail(E_CHAN_ALREADY_IN_TASK, "Task Name: %s\nPhysical Channel Name: %s", t->name, names);
				}
			}
		}
		if (err == 0 && t->nchan + n > MAX_CHANS) {
			err = fail(E_INVALID_ATTRIBUTE_VALUE, "Too many channels in one task.");
		}
		if (err == 0) {
			memcpy(&t->chans[t->nchan], cs, (size_t)n * sizeof(chan));
			t->nchan += n;
			t->kind = k;
			err = ok();
		}
	}
	pthread_mutex_unlock(&mu);
	return err;
}

static int32 check_voltage(float64 min, float64 max, int32 units, const char* scale) {
	if (!(min < max)) return fail(E_MIN_NOT_LESS_THAN_MAX, "Minimum: %g\nMaximum: %g", min, max);
	if (min < -10 || max > 10) {
		return fail(E_INVALID_ATTRIBUTE_VALUE, "Property: Range\nRequested: [%g, %g] V\nThe virtual channels span "
		            "-10..10 V.", min, max);
	}
	if (units != VAL_VOLTS) return fail(E_INVALID_ATTRIBUTE_VALUE, "Property: Units\nRequested Value: %d", units);
	if (scale != NULL && scale[0] != 0) {
		return fail(E_INVALID_ATTRIBUTE_VALUE, "Property: Custom Scale Name\nRequested Value: %s\nThe virtual "
		            "instrument has no custom scales.", scale);
	}
	return 0;
}

EXPORT int32 DAQmxCreateAOVoltageChan(TaskHandle h, const char* physical, const char* assign, float64 min, float64 max,
                                      int32 units, const char* scale) {
	(void)assign;
	int32 err = check_voltage(min, max, units, scale);
	return err ? err : add_channels(h, K_AO, physical, min, max, 0);
}

EXPORT int32 DAQmxCreateAIVoltageChan(TaskHandle h, const char* physical, const char* assign, int32 terminal,
                                      float64 min, float64 max, int32 units, const char* scale) {
	(void)assign;
	if (terminal != VAL_CFG_DEFAULT && terminal != VAL_RSE && terminal != VAL_NRSE && terminal != VAL_DIFF &&
	    terminal != VAL_PSEUDODIFF) {
		return fail(E_INVALID_ATTRIBUTE_VALUE, "Property: Terminal Configuration\nRequested Value: %d", terminal);
	}
	int32 err = check_voltage(min, max, units, scale);
	return err ? err : add_channels(h, K_AI, physical, min, max, terminal);
}

static int32 check_grouping(int32 g) {
	if (g != VAL_CHAN_PER_LINE && g != VAL_CHAN_FOR_ALL_LINES) {
		return fail(E_INVALID_LINE_GROUPING, "Requested Value: %d", g);
	}
	return 0;
}

EXPORT int32 DAQmxCreateDOChan(TaskHandle h, const char* lines, const char* assign, int32 grouping) {
	(void)assign;
	int32 err = check_grouping(grouping);
	return err ? err : add_channels(h, K_DO, lines, 0, 0, 0);
}

EXPORT int32 DAQmxCreateDIChan(TaskHandle h, const char* lines, const char* assign, int32 grouping) {
	(void)assign;
	int32 err = check_grouping(grouping);
	return err ? err : add_channels(h, K_DI, lines, 0, 0, 0);
}

/* ---- timing ---- */

/* with_task runs the setter under mu with the task checked (not running). */
#define WITH_TASK(h, body)                                                        \
	do {                                                                          \
		pthread_mutex_lock(&mu);                                                  \
		task* t = lookup(h);                                                      \
		int32 err_;                                                               \
		if (t == NULL) {                                                          \
			err_ = fail(E_INVALID_TASK, NULL);                                    \
		} else if (t->running) {                                                  \
			err_ = fail(E_CANNOT_SET_WHEN_RUNNING, "Task Name: %s", t->name);     \
		} else {                                                                  \
			err_ = ok();                                                          \
			body                                                                  \
		}                                                                         \
		pthread_mutex_unlock(&mu);                                                \
		return err_;                                                              \
	} while (0)

EXPORT int32 DAQmxCfgSampClkTiming(TaskHandle h, const char* source, float64 rate, int32 edge, int32 mode,
                                   uInt64 samps) {
	WITH_TASK(h, {
		if (t->nchan == 0) {
			err_ = fail(E_NO_CHANS_IN_TASK, "Task Name: %s", t->name);
		} else if ((err_ = check_terminal(source, "SampClk.Src")) != 0) {
		} else if (!(rate > 0) || rate > MAX_RATE) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: SampClk.Rate\nRequested Value: %g\nThe virtual devices "
			            "clock 0 < rate <= %g samples/s.", rate, MAX_RATE);
		} else if (edge != VAL_RISING && edge != VAL_FALLING) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: SampClk.ActiveEdge\nRequested Value: %d", edge);
		} else if (mode != VAL_FINITE && mode != VAL_CONTINUOUS && mode != VAL_HW_SINGLE_POINT) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: SampQuant.SampMode\nRequested Value: %d", mode);
		} else {
			snprintf(t->source, sizeof t->source, "%s", source ? source : "");
			t->rate = rate;
			t->edge = edge;
			t->mode = mode;
			t->samps_per_chan = samps;
			t->timed = 1;
		}
	});
}

EXPORT int32 DAQmxCfgDigEdgeStartTrig(TaskHandle h, const char* source, int32 edge) {
	WITH_TASK(h, {
		if (!is_pfi(source ? source : "")) {
			err_ = fail(E_INVALID_ROUTING_SOURCE, "Property: StartTrig.DigEdge.Src\nSource Terminal: %s\nThe virtual "
			            "devices have PFI0..PFI%d.", source ? source : "(null)", NPFI - 1);
		} else if (edge != VAL_RISING && edge != VAL_FALLING) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: StartTrig.DigEdge.Edge\nRequested Value: %d", edge);
		} else {
			snprintf(t->trig, sizeof t->trig, "%s", source);
		}
	});
}

EXPORT int32 DAQmxSetSampClkTimebaseSrc(TaskHandle h, const char* source) {
	WITH_TASK(h, {
		if ((err_ = check_terminal(source, "SampClk.Timebase.Src")) == 0) {
			snprintf(t->tb_source, sizeof t->tb_source, "%s", source ? source : "");
		}
	});
}

EXPORT int32 DAQmxSetSampClkTimebaseRate(TaskHandle h, float64 rate) {
	WITH_TASK(h, {
		if (!(rate > 0)) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: SampClk.Timebase.Rate\nRequested Value: %g", rate);
		}
	});
}

EXPORT int32 DAQmxSetSampClkTimebaseDiv(TaskHandle h, uInt32 div) {
	WITH_TASK(h, {
		if (div < 1) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: SampClk.Timebase.Div\nRequested Value: %u", div);
		} else {
			t->tb_div = div;
		}
	});
}

/* ---- buffers and regeneration ---- */

EXPORT int32 DAQmxCfgOutputBuffer(TaskHandle h, uInt32 samps) {
	WITH_TASK(h, {
		if (t->kind != K_AO && t->kind != K_DO) {
			err_ = fail(E_NOT_OUTPUT_TASK, "Task Name: %s", t->name);
		} else {
			t->buf = samps;
		}
	});
}

EXPORT int32 DAQmxCfgInputBuffer(TaskHandle h, uInt32 samps) {
	WITH_TASK(h, {
		if (t->kind != K_AI && t->kind != K_DI) {
			err_ = fail(E_NOT_INPUT_TASK, "Task Name: %s", t->name);
		} else {
			t->buf = samps;
		}
	});
}

EXPORT int32 DAQmxSetWriteRegenMode(TaskHandle h, int32 mode) {
	WITH_TASK(h, {
		if (mode != VAL_ALLOW_REGEN && mode != VAL_DONT_ALLOW_REGEN) {
			err_ = fail(E_INVALID_ATTRIBUTE_VALUE, "Property: Write.RegenMode\nRequested Value: %d", mode);
		} else {
			t->regen = mode == VAL_ALLOW_REGEN;
		}
	});
}

/* ---- write ---- */

static void record(task* t, const void* rows, size_t size, int64_t n) {
	if (t->rec == NULL) {
		const char* dir = getenv("VGV_DAQMX_RECORD");
		if (dir == NULL || dir[0] == 0) return;
		char path[1024];
		snprintf(path, sizeof path, "%s/%s.%s", dir, t->name, t->kind == K_AO ? "ao" : "do");
		t->rec = fopen(path, "ab");
		if (t->rec == NULL) return;
	}
	fwrite(rows, size, (size_t)(n * t->nchan), t->rec);
	fflush(t->rec);
}

/* write_samples is the common body of the writes: wait for space, check
 * underflow, publish and record. data holds n samples of every channel in
 * layout; kind is what the writer writes (K_AO or K_DO). */
static int32 write_samples(TaskHandle h, enum kind kind, int32 n, bool32 autostart, float64 timeout, int32 layout,
                           const void* data, int32* written) {
	if (written) *written = 0;
	if (data == NULL) return fail(E_NULL_PTR, "writeArray is NULL.");
	if (layout != VAL_GROUP_BY_CHANNEL && layout != VAL_GROUP_BY_SCAN) {
		return fail(E_INVALID_ATTRIBUTE_VALUE, "Property: dataLayout\nRequested Value: %d", layout);
	}
	pthread_mutex_lock(&mu);
	task* t = lookup(h);
	int32 err = 0;
	if (t == NULL) {
		err = fail(E_INVALID_TASK, NULL);
	} else if (t->kind != kind) {
		err = fail(t->kind == K_AO || t->kind == K_DO ? E_INCORRECT_READ_FUNCTION : E_NOT_OUTPUT_TASK,
		           "Task Name: %s\nThe task holds %s channels.", t->name, kind_name[t->kind]);
	} else if (n < 0) {
		err = fail(E_INVALID_NUM_SAMPS_TO_WRITE, "Task Name: %s\nRequested: %d", t->name, n);
	}
	if (err) {
		pthread_mutex_unlock(&mu);
		return err;
	}
	/* the values must fit the channels */
	for (int64_t i = 0; i < (int64_t)n * t->nchan; i++) {
		int c = layout == VAL_GROUP_BY_SCAN ? (int)(i % t->nchan) : (int)(i / n);
		const chan* ch = &t->chans[c];
		if (kind == K_AO) {
			double v = ((const double*)data)[i];
			if (!(v >= ch->min && v <= ch->max)) {
				err = fail(E_INVALID_AO_DATA_WRITE, "Task Name: %s\nChannel: Dev%d/ao%d\nValue: %g\nRange: [%g, %g]",
				           t->name, ch->dev + 1, ch->index, v, ch->min, ch->max);
				break;
			}
		} else if (((const uInt32*)data)[i] & ~ch->mask) {
			err = fail(E_INVALID_DIG_DATA_WRITE, "Task Name: %s\nChannel: Dev%d/port%d\nValue: 0x%x\nLines: 0x%x",
			           t->name, ch->dev + 1, ch->index, ((const uInt32*)data)[i], ch->mask);
			break;
		}
	}
	if (err) {
		pthread_mutex_unlock(&mu);
		return err;
	}
	uint32_t run_gen = t->run_gen, gen = t->gen;
	double deadline = timeout < 0 ? -1 : now_s() + timeout;
	int64_t done = 0;
	size_t size = kind == K_AO ? sizeof(double) : sizeof(uInt32);
	unsigned char* rows = malloc((size_t)(n > 0 ? n : 1) * (size_t)t->nchan * size);
	while (done < n) {
		if (!t->used || t->gen != gen || t->run_gen != run_gen) {
			err = fail(E_OPERATION_ABORTED, "Task Name: %s\nThe task was stopped or cleared during the write.", t->name);
			break;
		}
		int64_t c = clocked(t);
		if (t->running && !t->regen && (t->failed || c > t->written)) {
			t->failed = E_GEN_STOPPED_REGEN;
			err = fail(E_GEN_STOPPED_REGEN, "Task Name: %s\nSamples generated: %lld\nSamples written: %lld", t->name,
			           (long long)c, (long long)t->written);
			break;
		}
		int64_t pending = t->written - (t->running ? (c < t->written ? c : t->written) : 0);
		int64_t space = buffer_size(t) - pending;
		if (space > 0) {
			int64_t m = n - done < space ? n - done : space;
			/* rows in scan order, for the model and the recording */
			for (int64_t s = 0; s < m; s++) {
				for (int ch = 0; ch < t->nchan; ch++) {
					int64_t src = layout == VAL_GROUP_BY_SCAN ? (done + s) * t->nchan + ch : (int64_t)ch * n + done + s;
					memcpy(rows + ((size_t)(s * t->nchan + ch)) * size, (const unsigned char*)data + (size_t)src * size,
					       size);
				}
			}
			if (kind == K_AO) {
				double* col = malloc((size_t)m * sizeof(double));
				for (int ch = 0; ch < t->nchan; ch++) {
					if (t->chans[ch].index > 1) continue;
					for (int64_t s = 0; s < m; s++) col[s] = ((double*)rows)[s * t->nchan + ch];
					vgv_galvo_write(t->chans[ch].index, t->written, col, m);
				}
				free(col);
			}
			record(t, rows, size, m);
			t->written += m;
			done += m;
			continue;
		}
		if (deadline >= 0 && now_s() >= deadline) {
			err = fail(E_SAMPLES_CAN_NOT_YET_BE_WRITTEN, "Task Name: %s\nBuffer: %lld samples per channel\nWritten: "
			           "%lld of %d samples in this call", t->name, (long long)buffer_size(t), (long long)done, n);
			break;
		}
		pthread_mutex_unlock(&mu);
		nap();
		pthread_mutex_lock(&mu);
	}
	free(rows);
	if (written) *written = (int32)done;
	if (err == 0 && autostart && t->used && t->gen == gen && !t->running) {
		pthread_mutex_unlock(&mu);
		return DAQmxStartTask(h);
	}
	if (err == 0) err = ok();
	pthread_mutex_unlock(&mu);
	return err;
}

EXPORT int32 DAQmxWriteAnalogF64(TaskHandle h, int32 n, bool32 autostart, float64 timeout, bool32 layout,
                                 const float64* data, int32* written, bool32* reserved_) {
	(void)reserved_;
	return write_samples(h, K_AO, n, autostart, timeout, (int32)layout, data, written);
}

EXPORT int32 DAQmxWriteDigitalU32(TaskHandle h, int32 n, bool32 autostart, float64 timeout, bool32 layout,
                                  const uInt32* data, int32* written, bool32* reserved_) {
	(void)reserved_;
	return write_samples(h, K_DO, n, autostart, timeout, (int32)layout, data, written);
}

/* ---- read ---- */

static int32 read_samples(TaskHandle h, enum kind kind, int32 n, float64 timeout, int32 layout, void* data,
                          uInt32 cap, int32* got) {
	if (got) *got = 0;
	if (data == NULL) return fail(E_NULL_PTR, "readArray is NULL.");
	if (layout != VAL_GROUP_BY_CHANNEL && layout != VAL_GROUP_BY_SCAN) {
		return fail(E_INVALID_ATTRIBUTE_VALUE, "Property: fillMode\nRequested Value: %d", layout);
	}
	pthread_mutex_lock(&mu);
	task* t = lookup(h);
	int32 err = 0;
	if (t == NULL) {
		err = fail(E_INVALID_TASK, NULL);
	} else if (t->kind != kind) {
		err = fail(t->kind == K_AI || t->kind == K_DI ? E_INCORRECT_READ_FUNCTION : E_NOT_INPUT_TASK,
		           "Task Name: %s\nThe task holds %s channels.", t->name, kind_name[t->kind]);
	} else if (n < 0 || (uint64_t)n * (uint64_t)t->nchan > cap) {
		err = fail(E_BUFFER_TOO_SMALL_FOR_STRING, "Task Name: %s\nRequested: %d samples of %d channels into %u values",
		           t->name, n, t->nchan, cap);
	} else if (!t->running) {
		err = fail(E_SAMPLES_NOT_YET_AVAILABLE, "Task Name: %s\nThe task is not running.", t->name);
	}
	if (err) {
		pthread_mutex_unlock(&mu);
		return err;
	}
	uint32_t run_gen = t->run_gen, gen = t->gen;
	double deadline = timeout < 0 ? -1 : now_s() + timeout;
	for (;;) {
		if (!t->used || t->gen != gen || t->run_gen != run_gen) {
			err = fail(E_OPERATION_ABORTED, "Task Name: %s\nThe task was stopped or cleared during the read.", t->name);
			break;
		}
		int64_t c = clocked(t);
		if (t->failed || c - t->consumed > buffer_size(t)) {
			t->failed = E_SAMPLES_NO_LONGER_AVAILABLE;
			err = fail(E_SAMPLES_NO_LONGER_AVAILABLE, "Task Name: %s\nSamples acquired: %lld\nSamples read: %lld",
			           t->name, (long long)c, (long long)t->consumed);
			break;
		}
		if (c - t->consumed >= n) break;
		if (deadline >= 0 && now_s() >= deadline) {
			err = fail(E_SAMPLES_NOT_YET_AVAILABLE, "Task Name: %s\nRequested: %d\nAvailable: %lld", t->name, n,
			           (long long)(c - t->consumed));
			break;
		}
		pthread_mutex_unlock(&mu);
		nap();
		pthread_mutex_lock(&mu);
	}
	if (err == 0) {
		for (int64_t s = 0; s < n; s++) {
			double x = 0, y = 0;
			if (kind == K_AI) vgv_galvo_at(t->consumed + s, &x, &y);
			for (int ch = 0; ch < t->nchan; ch++) {
				int64_t dst = layout == VAL_GROUP_BY_SCAN ? s * t->nchan + ch : (int64_t)ch * n + s;
				if (kind == K_AI) {
					int idx = t->chans[ch].index;
					((double*)data)[dst] = idx == 0 ? x : idx == 1 ? y : 0;
				} else {
					((uInt32*)data)[dst] = 0;
				}
			}
		}
		t->consumed += n;
		if (got) *got = n;
		err = ok();
	}
	pthread_mutex_unlock(&mu);
	return err;
}

EXPORT int32 DAQmxReadAnalogF64(TaskHandle h, int32 n, float64 timeout, bool32 layout, float64* data, uInt32 cap,
                                int32* got, bool32* reserved_) {
	(void)reserved_;
	return read_samples(h, K_AI, n, timeout, (int32)layout, data, cap, got);
}

EXPORT int32 DAQmxReadDigitalU32(TaskHandle h, int32 n, float64 timeout, bool32 layout, uInt32* data, uInt32 cap,
                                 int32* got, bool32* reserved_) {
	(void)reserved_;
	return read_samples(h, K_DI, n, timeout, (int32)layout, data, cap, got);
}

/* ---- errors ---- */

/* copy_out is NI's string convention: with no buffer, the size needed
 * (terminator included); else the text, truncated to fit. */
static int32 copy_out(const char* s, char* buf, uInt32 size) {
	size_t need = strlen(s) + 1;
	if (buf == NULL || size == 0) return (int32)need;
	snprintf(buf, size, "%s", s);
	return 0;
}

/* The driver's version, as NI-DAQmx 2023 Q3 reports it (23.5.0); a driver
   version check or a hardware report reads it. */
EXPORT int32 DAQmxGetSysNIDAQMajorVersion(uInt32* v) { if (!v) return E_NULL_PTR; *v = 23; return 0; }
EXPORT int32 DAQmxGetSysNIDAQMinorVersion(uInt32* v) { if (!v) return E_NULL_PTR; *v = 5; return 0; }
EXPORT int32 DAQmxGetSysNIDAQUpdateVersion(uInt32* v) { if (!v) return E_NULL_PTR; *v = 0; return 0; }

EXPORT int32 DAQmxGetErrorString(int32 code, char* buf, uInt32 size) { return copy_out(message_of(code), buf, size); }

EXPORT int32 DAQmxGetExtendedErrorInfo(char* buf, uInt32 size) { return copy_out(last_error, buf, size); }
