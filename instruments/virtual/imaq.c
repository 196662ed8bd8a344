/* imaq.c: libniimaq.so of the virtual OCT instrument, a fake NI frame
 * grabber with a line-scan camera (a spectrometer's), with the NI-IMAQ C
 * API's symbol names, over the shared model (vgvirtual.h).
 *
 * It implements the functions vortex's IMAQ driver calls (vortex's
 * src/vortex/driver/imaq.cpp): interfaces and sessions, attributes, the
 * region of interest, the ring of user buffers, start/stop, examine and
 * release of a ring buffer, line and frame triggers, trigger outputs, the
 * error texts and the interface names. Signatures, attribute keys,
 * constants and error codes follow NI's public headers niimaq.h and
 * niimaq_errors.h (NI-IMAQ, as redistributed in public repositories, e.g.
 * the copies the search corpus holds) and NI-IMAQ's function reference
 * (documentation.help/NI-IMAQ); the error texts here are our own
 * paraphrases. No NI code is copied.
 *
 * The frame grabber, as far as a driver can observe it:
 * - Interfaces img0 .. img<N-1> (VGV_IMAQ_INTERFACES, default 1), each
 *   with one camera: line scan, VGV_IMAQ_WIDTH pixels (default 4096) of
 *   VGV_IMAQ_BITS bits (default 16, 2 bytes a pixel; 32 gives 4 bytes,
 *   which vortex's uint16 acquisition refuses), an acquisition window of
 *   that width by 65535 lines (the most lines a frame may hold). One
 *   session per interface: each imgInterfaceOpen returns its own handle,
 *   and a second imgSessionOpen on the interface fails with
 *   IMG_ERR_DEVICE_IN_USE until the first session (or its handle) closes.
 * - The region of interest: left and width multiples of 4 pixels, inside
 *   the window (IMG_ERR_BAD_USER_RECT otherwise; imgSessionFitROI with
 *   IMG_ROI_FIT_LARGER widens a region to that alignment and clips it to
 *   the window). IMG_ATTR_ROWPIXELS (the buffer's row stride) must be at
 *   least the width. A frame is `height` lines; a ring buffer holds
 *   rowpixels x height pixels (imgSessionGetBufferSize).
 * - Lines are the model's A-lines: line n of the capture is A-line n
 *   (vgv_now_alines counts them in real time from imgSessionStartAcquisition
 *   at the model's line rate, VGV_ALINE_RATE_HZ); line i of frame k is
 *   A-line k*height + i. Its pixels are vgv_spectrum(n) over the region's
 *   width: the virtual spectrometer images the band onto the region's
 *   pixels, so a region of W pixels sees the spectrum SimulatedAcquisition
 *   has for samples_per_record = W (equal within the model's tolerance).
 * - The ring: frame k goes to buffer k mod n. imgSessionExamineBuffer2(k)
 *   waits for frame k up to IMG_ATTR_FRAMEWAIT_MSEC (IMG_ERR_TIMEOUT); once
 *   the camera has begun frame k + n (the host fell behind), buffer k holds
 *   a later frame and the call returns the newest complete frame's number
 *   instead, as NI-IMAQ does: the caller sees the overrun by the number
 *   (IMG_ATTR_LOST_FRAMES counts the frames lost). Frames are synthesized
 *   into the user's buffer when examined (only their time is real), so an
 *   examined buffer is always whole; the time that synthesis takes (the
 *   phantom's first volume is computed, later ones cached) is the model's,
 *   not the host's, and does not count towards an overrun. One buffer may be examined at a time
 *   (IMG_ERR_BUFFER_NOT_RELEASED); imgSessionStopAcquisition ends a wait
 *   with IMG_ERR_ACQ_STOPPED.
 * - Triggers: imgSessionLineTrigSource2, imgSessionTriggerConfigure2 and
 *   imgSessionTriggerDrive2 check the signal type (IMG_SIGNAL_*), the line
 *   (external 0..3, RTSI 0..6, ISO 0..1), the polarity, the drive source
 *   (IMG_TRIG_DRIVE_*) and the action (IMG_TRIG_ACTION_*) and fail with
 *   IMG_ERR_BAD_TRIGGER_MODE; the swept source's line trigger is assumed
 *   wired, so they change nothing else.
 * - Configuration while capturing fails with IMG_ERR_BOARD_RUNNING.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vgvirtual.h"

typedef uint32_t uInt32;
typedef int32_t Int32;
typedef int32_t IMG_ERR;
typedef char Int8;

#define EXPORT __attribute__((visibility("default")))

/* niimaq.h: attribute keys (_IMG_BASE + offset) */
#define IMG_BASE 0x3FF60000u
#define ATTR_INTERFACE_TYPE (IMG_BASE + 0x0001)
#define ATTR_HORZ_RESOLUTION (IMG_BASE + 0x0009)
#define ATTR_VERT_RESOLUTION (IMG_BASE + 0x000A)
#define ATTR_LINESCAN (IMG_BASE + 0x000C)
#define ATTR_BITSPERPIXEL (IMG_BASE + 0x0066)
#define ATTR_BYTESPERPIXEL (IMG_BASE + 0x0067)
#define ATTR_ACQWINDOW_LEFT (IMG_BASE + 0x0068)
#define ATTR_ACQWINDOW_TOP (IMG_BASE + 0x0069)
#define ATTR_ACQWINDOW_WIDTH (IMG_BASE + 0x006A)
#define ATTR_ACQWINDOW_HEIGHT (IMG_BASE + 0x006B)
#define ATTR_ACQ_IN_PROGRESS (IMG_BASE + 0x0074)
#define ATTR_FRAME_COUNT (IMG_BASE + 0x0076)
#define ATTR_FRAMEWAIT_MSEC (IMG_BASE + 0x007D)
#define ATTR_LOST_FRAMES (IMG_BASE + 0x0088)
#define ATTR_GETSERIAL (IMG_BASE + 0x00C0)
#define ATTR_ROWPIXELS (IMG_BASE + 0x00C1)
#define ATTR_CALIBRATION_DATE (IMG_BASE + 0x00D7)

/* niimaq.h: constants */
#define CURRENT_BUFFER 0xFFFFFFFCu
#define LAST_BUFFER 0xFFFFFFFEu
#define TIMEOUT_INFINITE 0xFFFFFFFFu
#define SIGNAL_NONE 0xFFFFFFFFu
#define SIGNAL_EXTERNAL 0u
#define SIGNAL_RTSI 1u
#define SIGNAL_ISO_IN 2u
#define SIGNAL_ISO_OUT 3u
#define SIGNAL_SOFTWARE_TRIGGER 6u
#define ROI_FIT_LARGER 0u
#define ROI_FIT_SMALLER 1u

/* niimaq_errors.h */
#define ERR_GOOD 0
#define ERR_NOT_SUPPORTED ((IMG_ERR)0xBFF60001)
#define ERR_BAD_INTERFACE_FILE ((IMG_ERR)0xBFF60015)
#define ERR_BAD_USER_RECT ((IMG_ERR)0xBFF60017)
#define ERR_NO_BUFFERS_CONFIGURED ((IMG_ERR)0xBFF6001A)
#define ERR_BAD_BUFFER_POINTER ((IMG_ERR)0xBFF6001D)
#define ERR_BOARD_NOT_RUNNING ((IMG_ERR)0xBFF6001E)
#define ERR_BOARD_RUNNING ((IMG_ERR)0xBFF60021)
#define ERR_TIMEOUT ((IMG_ERR)0xBFF60022)
#define ERR_NO_INTERFACE_FOUND ((IMG_ERR)0xBFF60027)
#define ERR_ATTRIBUTE_NOT_SETTABLE ((IMG_ERR)0xBFF60044)
#define ERR_BUFFER_NOT_RELEASED ((IMG_ERR)0xBFF60051)
#define ERR_INVALID_ATTRIBUTE ((IMG_ERR)0xBFF60056)
#define ERR_BAD_TRIGGER_MODE ((IMG_ERR)0xBFF6005D)
#define ERR_BAD_POINTER ((IMG_ERR)0xBFF6009D)
#define ERR_ACQ_STOPPED ((IMG_ERR)0xBFF600A6)
#define ERR_DEVICE_IN_USE ((IMG_ERR)0xBFF600BD)

#define MAX_IFACES 8
#define WINDOW_LINES 65535u
#define ALIGN 4u

typedef struct {
	int open;          /* some handle has it open (imgInterfaceOpen) */
	int owner;         /* the handle whose session it is, or -1 */
	uInt32 width, bits;
	uInt32 top, left, height, roi_width, rowpixels;
	uInt32 framewait_ms;
	void** ring;
	uInt32 ring_n;
	int running;
	int64_t examined;  /* the frame examined and not released yet, or -1 */
	uInt32 lost;
	double debt;       /* lines the model spent synthesizing: not the host's lateness */
} iface;

#define MAX_HANDLES 64

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static iface ifs[MAX_IFACES];
static int handles[MAX_HANDLES]; /* interface index + 1 of each open handle, 0 when free */
static int n_ifaces = 1;
static uInt32 env_width = 4096, env_bits = 16;

static uInt32 env_u32(const char* name, uInt32 def, uInt32 lo, uInt32 hi) {
	const char* s = getenv(name);
	if (!s || !*s) return def;
	char* end = NULL;
	unsigned long v = strtoul(s, &end, 10);
	if (*end || v < lo || v > hi) return def;
	return (uInt32)v;
}

__attribute__((constructor)) static void init_env(void) {
	n_ifaces = (int)env_u32("VGV_IMAQ_INTERFACES", 1, 0, MAX_IFACES);
	env_width = env_u32("VGV_IMAQ_WIDTH", 4096, ALIGN, 1u << 16);
	env_bits = env_u32("VGV_IMAQ_BITS", 16, 8, 32);
}

/* Each imgInterfaceOpen returns its own handle (1 + slot); the session a
 * handle opens is 0x100 + slot. One session per interface: the camera's
 * state lives with the interface. */
static iface* by_interface(uInt32 id) {
	if (id < 1 || id > MAX_HANDLES || !handles[id - 1]) return NULL;
	return &ifs[handles[id - 1] - 1];
}
static iface* by_session(uInt32 id) {
	if (id < 0x100 || id >= 0x100u + MAX_HANDLES || !handles[id - 0x100]) return NULL;
	iface* f = &ifs[handles[id - 0x100] - 1];
	return f->owner == (int)(id - 0x100) ? f : NULL;
}

static uInt32 bytes_per_pixel(const iface* f) { return (f->bits + 7) / 8; }

EXPORT IMG_ERR imgInterfaceQueryNames(uInt32 index, Int8* name) {
	if (!name) return ERR_BAD_POINTER;
	if (index >= (uInt32)n_ifaces) return ERR_NO_INTERFACE_FOUND;
	snprintf(name, 256, "img%u", index);
	return ERR_GOOD;
}

EXPORT IMG_ERR imgInterfaceOpen(const Int8* name, uInt32* ifid) {
	if (!name || !ifid) return ERR_BAD_POINTER;
	unsigned idx;
	char tail;
	if (sscanf(name, "img%u%c", &idx, &tail) != 1 || idx >= (unsigned)n_ifaces) return ERR_NO_INTERFACE_FOUND;
	pthread_mutex_lock(&mu);
	int h = 0;
	while (h < MAX_HANDLES && handles[h]) h++;
	if (h == MAX_HANDLES) {
		pthread_mutex_unlock(&mu);
		return ERR_NOT_SUPPORTED;
	}
	iface* f = &ifs[idx];
	if (!f->open) {
		memset(f, 0, sizeof *f);
		f->open = 1;
		f->owner = -1;
		f->width = env_width;
		f->bits = env_bits;
		f->roi_width = f->rowpixels = env_width;
		f->height = 1;
		f->framewait_ms = 5000;
		f->examined = -1;
	}
	handles[h] = (int)idx + 1;
	pthread_mutex_unlock(&mu);
	*ifid = (uInt32)h + 1;
	return ERR_GOOD;
}

EXPORT IMG_ERR imgSessionOpen(uInt32 ifid, uInt32* sid) {
	if (!sid) return ERR_BAD_POINTER;
	pthread_mutex_lock(&mu);
	iface* f = by_interface(ifid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else if (f->owner >= 0) {
		e = ERR_DEVICE_IN_USE;
	} else {
		f->owner = (int)ifid - 1;
		*sid = 0x100 + (ifid - 1);
	}
	pthread_mutex_unlock(&mu);
	return e;
}

static void stop_locked(iface* f) {
	if (f->running) {
		f->running = 0;
		vgv_clock_stop();
		pthread_cond_broadcast(&cv);
	}
}

static void close_session_locked(iface* f) {
	stop_locked(f);
	f->owner = -1;
	f->ring_n = 0;
	free(f->ring);
	f->ring = NULL;
}

EXPORT IMG_ERR imgClose(uInt32 id, uInt32 free_resources) {
	(void)free_resources;
	pthread_mutex_lock(&mu);
	iface* f = by_session(id);
	IMG_ERR e = ERR_GOOD;
	if (f) { /* a session: stop it, forget its ring */
		close_session_locked(f);
	} else if ((f = by_interface(id)) != NULL) { /* a handle closes its session too */
		if (f->owner == (int)id - 1) close_session_locked(f);
		handles[id - 1] = 0;
		int used = 0;
		for (int h = 0; h < MAX_HANDLES; h++) used |= handles[h] == (int)(f - ifs) + 1;
		if (!used) {
			memset(f, 0, sizeof *f);
		}
	} else {
		e = ERR_BAD_INTERFACE_FILE;
	}
	pthread_mutex_unlock(&mu);
	return e;
}

/* attr_of is the session's (or interface's) attribute, or -1 when unknown. */
static int attr_of(const iface* f, uInt32 attr, uInt32* v) {
	switch (attr) {
	case ATTR_INTERFACE_TYPE: *v = 0x1473; return 0; /* a PCIe-1433-like board id */
	case ATTR_GETSERIAL: *v = 0x01A2B3C4u + (uInt32)(f - ifs); return 0;
	case ATTR_CALIBRATION_DATE: *v = 1700000000u; return 0;
	case ATTR_HORZ_RESOLUTION: *v = f->width; return 0;
	case ATTR_VERT_RESOLUTION: *v = 1; return 0;
	case ATTR_LINESCAN: *v = 1; return 0;
	case ATTR_BITSPERPIXEL: *v = f->bits; return 0;
	case ATTR_BYTESPERPIXEL: *v = bytes_per_pixel(f); return 0;
	case ATTR_ACQWINDOW_LEFT: *v = 0; return 0;
	case ATTR_ACQWINDOW_TOP: *v = 0; return 0;
	case ATTR_ACQWINDOW_WIDTH: *v = f->width; return 0;
	case ATTR_ACQWINDOW_HEIGHT: *v = WINDOW_LINES; return 0;
	case ATTR_ACQ_IN_PROGRESS: *v = (uInt32)f->running; return 0;
	case ATTR_FRAMEWAIT_MSEC: *v = f->framewait_ms; return 0;
	case ATTR_LOST_FRAMES: *v = f->lost; return 0;
	case ATTR_ROWPIXELS: *v = f->rowpixels; return 0;
	case ATTR_FRAME_COUNT: {
		int64_t n = f->running ? vgv_now_alines() : 0;
		*v = (uInt32)(n == INT64_MAX ? 0 : n / (f->top + f->height));
		return 0;
	}
	}
	return -1;
}

EXPORT IMG_ERR imgGetAttribute(uInt32 id, uInt32 attr, void* value) {
	if (!value) return ERR_BAD_POINTER;
	pthread_mutex_lock(&mu);
	iface* f = by_session(id);
	if (!f) f = by_interface(id);
	IMG_ERR e = ERR_GOOD;
	uInt32 v = 0;
	if (!f) e = ERR_BAD_INTERFACE_FILE;
	else if (attr_of(f, attr, &v) != 0) e = ERR_INVALID_ATTRIBUTE;
	else memcpy(value, &v, sizeof v);
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSetAttribute2(uInt32 id, uInt32 attr, ...) {
	va_list ap;
	va_start(ap, attr);
	uInt32 v = va_arg(ap, uInt32);
	va_end(ap);
	pthread_mutex_lock(&mu);
	iface* f = by_session(id);
	IMG_ERR e = ERR_GOOD;
	uInt32 old;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else if (attr == ATTR_FRAMEWAIT_MSEC) {
		f->framewait_ms = v;
	} else if (attr == ATTR_ROWPIXELS) {
		if (f->running) e = ERR_BOARD_RUNNING;
		else if (v < f->roi_width || v > (1u << 20)) e = ERR_BAD_USER_RECT;
		else f->rowpixels = v;
	} else if (attr_of(f, attr, &old) == 0) {
		e = ERR_ATTRIBUTE_NOT_SETTABLE;
	} else {
		e = ERR_INVALID_ATTRIBUTE;
	}
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionFitROI(uInt32 sid, uInt32 mode, uInt32 top, uInt32 left, uInt32 height, uInt32 width,
                                uInt32* ftop, uInt32* fleft, uInt32* fheight, uInt32* fwidth) {
	if (!ftop || !fleft || !fheight || !fwidth) return ERR_BAD_POINTER;
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else if ((mode != ROI_FIT_LARGER && mode != ROI_FIT_SMALLER) || left >= f->width || top >= WINDOW_LINES ||
	           width == 0 || height == 0) {
		e = ERR_BAD_USER_RECT;
	} else {
		uint64_t l = left, r = (uint64_t)left + width;
		if (mode == ROI_FIT_LARGER) {
			l = l / ALIGN * ALIGN;
			r = (r + ALIGN - 1) / ALIGN * ALIGN;
		} else {
			l = (l + ALIGN - 1) / ALIGN * ALIGN;
			r = r / ALIGN * ALIGN;
		}
		if (r > f->width) r = f->width / ALIGN * ALIGN;
		uint64_t b = (uint64_t)top + height;
		if (b > WINDOW_LINES) b = WINDOW_LINES;
		if (r <= l) {
			e = ERR_BAD_USER_RECT;
		} else {
			*ftop = top;
			*fleft = (uInt32)l;
			*fheight = (uInt32)(b - top);
			*fwidth = (uInt32)(r - l);
		}
	}
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionConfigureROI(uInt32 sid, uInt32 top, uInt32 left, uInt32 height, uInt32 width) {
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else if (f->running) {
		e = ERR_BOARD_RUNNING;
	} else if (width == 0 || height == 0 || left % ALIGN || width % ALIGN || (uint64_t)left + width > f->width ||
	           (uint64_t)top + height > WINDOW_LINES) {
		e = ERR_BAD_USER_RECT;
	} else {
		f->top = top;
		f->left = left;
		f->height = height;
		f->roi_width = width;
		if (f->rowpixels < width) f->rowpixels = width;
		f->ring_n = 0; /* the ring was sized for the old region */
	}
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionGetROI(uInt32 sid, uInt32* top, uInt32* left, uInt32* height, uInt32* width) {
	if (!top || !left || !height || !width) return ERR_BAD_POINTER;
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else {
		*top = f->top;
		*left = f->left;
		*height = f->height;
		*width = f->roi_width;
	}
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionGetBufferSize(uInt32 sid, uInt32* size) {
	if (!size) return ERR_BAD_POINTER;
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) e = ERR_BAD_INTERFACE_FILE;
	else *size = f->rowpixels * f->height * bytes_per_pixel(f);
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgRingSetup(uInt32 sid, uInt32 n, void* buffers[], uInt32 skip, uInt32 start_now);
EXPORT IMG_ERR imgSessionStartAcquisition(uInt32 sid);

EXPORT IMG_ERR imgRingSetup(uInt32 sid, uInt32 n, void* buffers[], uInt32 skip, uInt32 start_now) {
	(void)skip;
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else if (f->running) {
		e = ERR_BOARD_RUNNING;
	} else if (n == 0) {
		e = ERR_NO_BUFFERS_CONFIGURED;
	} else if (!buffers) {
		e = ERR_BAD_POINTER;
	} else {
		for (uInt32 i = 0; i < n; i++) {
			if (!buffers[i]) e = ERR_BAD_BUFFER_POINTER;
		}
		if (e == ERR_GOOD) {
			void** r = realloc(f->ring, n * sizeof *r);
			if (!r) {
				e = ERR_NOT_SUPPORTED;
			} else {
				memcpy(r, buffers, n * sizeof *r);
				f->ring = r;
				f->ring_n = n;
			}
		}
	}
	pthread_mutex_unlock(&mu);
	if (e == ERR_GOOD && start_now) e = imgSessionStartAcquisition(sid);
	return e;
}

EXPORT IMG_ERR imgSessionStartAcquisition(uInt32 sid) {
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
	} else if (f->running) {
		e = ERR_BOARD_RUNNING;
	} else if (f->ring_n == 0) {
		e = ERR_NO_BUFFERS_CONFIGURED;
	} else {
		f->running = 1;
		f->lost = 0;
		f->debt = 0;
		f->examined = -1;
		vgv_clock_start();
	}
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionStopAcquisition(uInt32 sid) {
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) e = ERR_BAD_INTERFACE_FILE;
	else if (!f->running) e = ERR_BOARD_NOT_RUNNING;
	else stop_locked(f);
	pthread_mutex_unlock(&mu);
	return e;
}

/* synth_rows makes rows lo..hi-1 of a frame of 1, 3 or 4-byte pixels,
 * widening each line from uint16 (vgv_parallel: a frame's lines on several
 * host threads, so the virtual camera keeps up at vortex's sizes). */
typedef struct {
	iface* f;
	char* buf;
	int64_t first;
	uInt32 bpp;
} frame_job;

static void synth_rows(void* ctx, int64_t lo, int64_t hi) {
	frame_job* j = ctx;
	iface* f = j->f;
	uInt32 bpp = j->bpp;
	uint16_t* line = malloc((size_t)f->roi_width * 2);
	for (int64_t i = lo; i < hi; i++) {
		char* row = j->buf + (size_t)i * f->rowpixels * bpp;
		if (!line) {
			memset(row, 0, (size_t)f->roi_width * bpp); /* out of host memory: a blank line, not a crash */
		} else {
			vgv_spectrum(j->first + i, line, (int32_t)f->roi_width);
			for (uInt32 c = 0; c < f->roi_width; c++) {
				uint32_t v = line[c];
				memcpy(row + (size_t)c * bpp, &v, bpp < 4 ? bpp : 4);
			}
		}
	}
	free(line);
}

/* synthesize writes frame k into its ring buffer (mu held). */
static void synthesize(iface* f, int64_t k) {
	uInt32 bpp = bytes_per_pixel(f);
	frame_job job = {f, f->ring[k % f->ring_n], k * (int64_t)(f->top + f->height) + f->top, bpp};
	if (bpp == 2) { /* the rows are the spectra themselves */
		vgv_spectra(job.first, (int64_t)f->height, (uint16_t*)(void*)job.buf, f->rowpixels, (int32_t)f->roi_width);
		return;
	}
	vgv_parallel((int64_t)f->height, vgv_min_per_worker((int32_t)f->roi_width), synth_rows, &job);
}

EXPORT IMG_ERR imgSessionExamineBuffer2(uInt32 sid, uInt32 which, uInt32* number, void** addr) {
	if (!number || !addr) return ERR_BAD_POINTER;
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) {
		e = ERR_BAD_INTERFACE_FILE;
		goto out;
	}
	if (f->examined >= 0) {
		e = ERR_BUFFER_NOT_RELEASED;
		goto out;
	}
	if (!f->running) {
		e = ERR_BOARD_NOT_RUNNING;
		goto out;
	}
	uInt32 wait = f->framewait_ms;
	if (wait != TIMEOUT_INFINITE) {
		deadline.tv_sec += wait / 1000;
		deadline.tv_nsec += (long)(wait % 1000) * 1000000L;
		if (deadline.tv_nsec >= 1000000000L) {
			deadline.tv_sec++;
			deadline.tv_nsec -= 1000000000L;
		}
	}
	int64_t per = (int64_t)f->top + f->height;
	for (;;) {
		int64_t lines = vgv_now_alines();
		int free_run = lines == INT64_MAX; /* line rate 0: as fast as the host reads */
		int64_t done = free_run ? INT64_MAX : lines / per; /* frames complete */
		int64_t k = which == CURRENT_BUFFER || which == LAST_BUFFER ? (done > 0 ? done - 1 : 0) : (int64_t)which;
		if (k < done) {
			int64_t got = k;
			/* frame k's buffer is rewritten once frame k + n has begun; the
			 * time the model spent synthesizing earlier frames is not the
			 * host's lateness, so it does not count */
			int64_t host_done = free_run ? done : (lines - (int64_t)f->debt) / per;
			if (!free_run && host_done >= k + (int64_t)f->ring_n) {
				got = done - 1;
				f->lost += (uInt32)(got - k);
			}
			struct timespec t0, t1;
			clock_gettime(CLOCK_MONOTONIC, &t0);
			synthesize(f, got);
			clock_gettime(CLOCK_MONOTONIC, &t1);
			vgv_config c;
			vgv_config_get(&c);
			f->debt += ((double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9) * c.aline_rate_hz;
			f->examined = got;
			*number = (uInt32)got;
			*addr = f->ring[got % f->ring_n];
			goto out;
		}
		/* sleep until frame k is due (or a stop, or the deadline) */
		struct timespec now, until;
		clock_gettime(CLOCK_REALTIME, &now);
		vgv_config c;
		vgv_config_get(&c);
		double due = c.aline_rate_hz > 0 ? (double)((k + 1) * per - lines) / c.aline_rate_hz : 0.001;
		if (due < 0.0005) due = 0.0005;
		if (due > 0.05) due = 0.05;
		until = now;
		until.tv_nsec += (long)(due * 1e9);
		while (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (wait != TIMEOUT_INFINITE && (now.tv_sec > deadline.tv_sec ||
		                                 (now.tv_sec == deadline.tv_sec && now.tv_nsec >= deadline.tv_nsec))) {
			e = ERR_TIMEOUT;
			goto out;
		}
		if (wait != TIMEOUT_INFINITE && (until.tv_sec > deadline.tv_sec ||
		                                 (until.tv_sec == deadline.tv_sec && until.tv_nsec > deadline.tv_nsec))) {
			until = deadline;
		}
		pthread_cond_timedwait(&cv, &mu, &until);
		if (!f->running || f->owner < 0) {
			e = ERR_ACQ_STOPPED;
			goto out;
		}
	}
out:
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionReleaseBuffer(uInt32 sid) {
	pthread_mutex_lock(&mu);
	iface* f = by_session(sid);
	IMG_ERR e = ERR_GOOD;
	if (!f) e = ERR_BAD_INTERFACE_FILE;
	else f->examined = -1;
	pthread_mutex_unlock(&mu);
	return e;
}

static int line_ok(uInt32 signal, uInt32 line) {
	switch (signal) {
	case SIGNAL_NONE: return 1;
	case SIGNAL_EXTERNAL: return line < 4;
	case SIGNAL_RTSI: return line < 7;
	case SIGNAL_ISO_IN:
	case SIGNAL_ISO_OUT: return line < 2;
	case 4: case 5: case SIGNAL_SOFTWARE_TRIGGER: return line < 4; /* status, scaled encoder, software */
	}
	return 0;
}

static IMG_ERR check_trigger(uInt32 sid, uInt32 signal, uInt32 line, uInt32 polarity) {
	iface* f = by_session(sid);
	if (!f) return ERR_BAD_INTERFACE_FILE;
	if (f->running) return ERR_BOARD_RUNNING;
	if (!line_ok(signal, line) || polarity > 1) return ERR_BAD_TRIGGER_MODE;
	return ERR_GOOD;
}

EXPORT IMG_ERR imgSessionLineTrigSource2(uInt32 sid, uInt32 signal, uInt32 line, uInt32 polarity, uInt32 skip) {
	(void)skip;
	pthread_mutex_lock(&mu);
	IMG_ERR e = check_trigger(sid, signal, line, polarity);
	if (e == ERR_GOOD && (signal == SIGNAL_ISO_OUT || signal == SIGNAL_SOFTWARE_TRIGGER)) e = ERR_BAD_TRIGGER_MODE;
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionTriggerConfigure2(uInt32 sid, uInt32 signal, uInt32 line, uInt32 polarity, uInt32 timeout,
                                           uInt32 action) {
	(void)timeout;
	pthread_mutex_lock(&mu);
	IMG_ERR e = check_trigger(sid, signal, line, polarity);
	if (e == ERR_GOOD && (action > 4 || signal == SIGNAL_ISO_OUT)) e = ERR_BAD_TRIGGER_MODE;
	pthread_mutex_unlock(&mu);
	return e;
}

EXPORT IMG_ERR imgSessionTriggerDrive2(uInt32 sid, uInt32 signal, uInt32 line, uInt32 polarity, uInt32 source) {
	pthread_mutex_lock(&mu);
	IMG_ERR e = check_trigger(sid, signal, line, polarity);
	if (e == ERR_GOOD && (source > 10 || signal == SIGNAL_ISO_IN)) e = ERR_BAD_TRIGGER_MODE;
	pthread_mutex_unlock(&mu);
	return e;
}

static const struct {
	IMG_ERR code;
	const char* text;
} texts[] = {
    {ERR_GOOD, "No error."},
    {ERR_NOT_SUPPORTED, "The operation is not supported."},
    {ERR_BAD_INTERFACE_FILE, "The interface or session id is not valid."},
    {ERR_BAD_USER_RECT, "The region of interest does not fit the acquisition window or its alignment."},
    {ERR_NO_BUFFERS_CONFIGURED, "No buffers are configured for the session."},
    {ERR_BAD_BUFFER_POINTER, "A buffer of the buffer list is missing."},
    {ERR_BOARD_NOT_RUNNING, "No acquisition is in progress."},
    {ERR_BOARD_RUNNING, "The request cannot be done while an acquisition is in progress."},
    {ERR_TIMEOUT, "The frame did not arrive within the frame timeout."},
    {ERR_NO_INTERFACE_FOUND, "No interface of that name was found."},
    {ERR_ATTRIBUTE_NOT_SETTABLE, "The attribute cannot be set."},
    {ERR_BUFFER_NOT_RELEASED, "A buffer is still examined: release it first."},
    {ERR_INVALID_ATTRIBUTE, "The attribute is not valid."},
    {ERR_BAD_TRIGGER_MODE, "The trigger line, polarity, signal, source or action is not valid."},
    {ERR_BAD_POINTER, "A required pointer is NULL."},
    {ERR_ACQ_STOPPED, "The wait ended because the acquisition stopped."},
    {ERR_DEVICE_IN_USE, "The image acquisition device is already in use."},
};

EXPORT IMG_ERR imgShowError(IMG_ERR code, Int8* text) {
	if (!text) return ERR_BAD_POINTER;
	for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
		if (texts[i].code == code) {
			snprintf(text, 256, "%s", texts[i].text);
			return ERR_GOOD;
		}
	}
	snprintf(text, 256, "Unknown NI-IMAQ error %d.", code);
	return ERR_NOT_SUPPORTED;
}
