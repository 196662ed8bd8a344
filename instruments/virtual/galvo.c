/* galvo.c: the galvo timeline of the virtual instrument's shared model
 * (vgvirtual.h: vgv_galvo_write, vgv_galvo_at, vgv_galvo_reset).
 *
 * Written for libvgvirtual.so: the virtual DAQmx card appends what its
 * analog outputs 0 (x) and 1 (y) generate, sample by sample, and the
 * virtual digitizer asks where the galvos were at A-line n. The timeline
 * keeps a bounded ring of the latest samples (GALVO_RING per channel):
 * the digitizer reads A-lines close to what the card generates now (at
 * most a few buffers behind), so an older sample is never asked for; one
 * that is answers with the oldest kept.
 *
 * Thread safety: one mutex; the DAQmx writer and the digitizer's reader
 * run on different host threads.
 */
#include <pthread.h>
#include <string.h>

#include "vgvirtual.h"

#define GALVO_RING (1 << 20)

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static double ring[2][GALVO_RING];
static int64_t end[2];     /* one past the last sample written, per channel */
static int64_t begin[2];   /* the first sample written since the reset */
static int any[2];         /* a sample of the channel was written */

void vgv_galvo_write(int ch, int64_t first, const double* volts, int64_t n) {
	if (ch < 0 || ch > 1 || volts == NULL || n <= 0 || first < 0) {
		return;
	}
	pthread_mutex_lock(&mu);
	if (!any[ch]) {
		begin[ch] = first;
		any[ch] = 1;
	}
	for (int64_t i = 0; i < n; i++) {
		ring[ch][(first + i) % GALVO_RING] = volts[i];
	}
	if (first + n > end[ch]) {
		end[ch] = first + n;
	}
	pthread_mutex_unlock(&mu);
}

/* sample_at is channel ch at sample k, clamped to what the ring holds;
 * called with mu held. */
static double sample_at(int ch, int64_t k) {
	if (!any[ch]) {
		return 0;
	}
	int64_t lo = end[ch] - GALVO_RING > begin[ch] ? end[ch] - GALVO_RING : begin[ch];
	if (k < lo) {
		k = lo;
	}
	if (k >= end[ch]) {
		k = end[ch] - 1;
	}
	return ring[ch][k % GALVO_RING];
}

int vgv_galvo_at(int64_t n, double* x, double* y) {
	vgv_config c;
	vgv_config_get(&c);
	int64_t k = n - c.io_delay;
	pthread_mutex_lock(&mu);
	double vx = sample_at(0, k), vy = sample_at(1, k);
	/* beyond what was written: the output underflowed (the host fell behind) */
	int under = (any[0] && k >= end[0]) || (any[1] && k >= end[1]) || (!any[0] && !any[1]);
	pthread_mutex_unlock(&mu);
	if (x) *x = vx;
	if (y) *y = vy;
	return under;
}

void vgv_galvo_reset(void) {
	pthread_mutex_lock(&mu);
	memset(end, 0, sizeof end);
	memset(begin, 0, sizeof begin);
	memset(any, 0, sizeof any);
	pthread_mutex_unlock(&mu);
}
