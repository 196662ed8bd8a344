/* model_standin.c: a stand-in for the rest of the shared model
 * (vgvirtual.h: configuration, the A-line clock, spectra), so that the
 * virtual DAQmx card builds and is tested on its own. The full model
 * (libvgvirtual.so from the Makefile's `virtual` target) replaces it: its
 * explicit rule wins over daqmx.mk's fallback pattern rule. Spectra here
 * are flat (no phantom): nothing of the DAQmx card reads them.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "vgvirtual.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static vgv_config cfg = {100000.0, 1024, 1.0, 0};
static struct timespec t0;
static int started;

int vgv_configure(const vgv_config* c) {
	if (c == NULL || c->aline_rate_hz < 0 || c->samples_per_aline <= 0 || c->io_delay < 0) {
		return -1;
	}
	pthread_mutex_lock(&mu);
	cfg = *c;
	pthread_mutex_unlock(&mu);
	return 0;
}

void vgv_config_get(vgv_config* c) {
	pthread_mutex_lock(&mu);
	*c = cfg;
	pthread_mutex_unlock(&mu);
}

void vgv_clock_start(void) {
	pthread_mutex_lock(&mu);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	started = 1;
	pthread_mutex_unlock(&mu);
}

int64_t vgv_now_alines(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	pthread_mutex_lock(&mu);
	int64_t n = 0;
	if (started && cfg.aline_rate_hz > 0) {
		double s = (double)(t.tv_sec - t0.tv_sec) + 1e-9 * (double)(t.tv_nsec - t0.tv_nsec);
		n = (int64_t)(s * cfg.aline_rate_hz);
	}
	pthread_mutex_unlock(&mu);
	return n;
}

void vgv_spectrum(int64_t n, uint16_t* out, int32_t samples) {
	(void)n;
	for (int32_t i = 0; i < samples; i++) {
		out[i] = 32768;
	}
}
