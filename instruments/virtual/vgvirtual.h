/* vgvirtual.h: the virtual OCT instrument's shared model (libvgvirtual.so).
 *
 * The fake vendor libraries (libATSApi.so for the AlazarTech digitizer,
 * libnidaqmx.so for the NI-DAQmx card) are thin layers with the vendors'
 * symbol names over this one model, so the two devices share one timeline
 * the way the real ones share a trigger: A-line n of the digitizer is
 * acquired while the DAQmx analog outputs hold their sample n - io_delay.
 * They are plain C, never Go: the extension's Go runtime must be the only
 * one in the process.
 *
 * Timeline: the model counts A-lines (trigger events) from the moment the
 * digitizer starts capturing; the DAQmx output task's sample clock is that
 * trigger (vortex's wiring: the galvo waveforms are paced by the swept
 * source's A-line trigger), so its sample k is A-line k. Samples are paced
 * in real time at the A-line rate (vgv_configure), so a host that falls
 * behind sees the digitizer overflow and the DAQmx underflow as it would
 * on the hardware.
 */
#ifndef VGVIRTUAL_H
#define VGVIRTUAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The optical and scanner model, set by whoever starts first (the
 * digitizer's configuration sets the A-line rate and spectrum length; the
 * defaults are vortexgo's simulated source's). */
typedef struct {
	double aline_rate_hz;     /* trigger rate; 0 = as fast as the host reads */
	int32_t samples_per_aline; /* spectrum length the digitizer records */
	double volts_per_unit;    /* galvo scale: output volts per scan unit */
	int64_t io_delay;         /* A-lines between an AO sample and the light it steers */
} vgv_config;

/* vgv_configure replaces the model's configuration (0 on success, -1 on a
 * bad value); vgv_config_get reads it. */
int vgv_configure(const vgv_config* c);
void vgv_config_get(vgv_config* c);

/* The galvo timeline, written by the virtual DAQmx. vgv_galvo_write appends
 * n samples of analog output channel ch (0: x, 1: y) at sample index
 * first (the task's write position). vgv_galvo_at returns the position in
 * volts at A-line n (with io_delay applied): 0 and x, y set when that
 * sample was written; 1 when n is beyond what was written (the output
 * underflowed: the host fell behind); x, y hold the last written values
 * then. vgv_galvo_reset forgets the timeline (a task cleared). */
void vgv_galvo_write(int ch, int64_t first, const double* volts, int64_t n);
int vgv_galvo_at(int64_t n, double* x, double* y);
void vgv_galvo_reset(void);

/* vgv_spectrum synthesizes the raw spectrum of A-line n into out
 * (samples_per_aline uint16 codes, the digitizer's format) for the galvo
 * position the timeline holds at n: vortexgo's simulated phantom
 * (gosrc/acquire/phantom.go) seen at that position. */
void vgv_spectrum(int64_t n, uint16_t* out, int32_t samples);

/* vgv_now_alines is the number of A-lines the real-time clock has produced
 * since vgv_clock_start (the digitizer's start of capture). */
void vgv_clock_start(void);
int64_t vgv_now_alines(void);

#ifdef __cplusplus
}
#endif
#endif
