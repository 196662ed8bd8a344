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

#include <stddef.h>
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


/* --- Additions (issue 26, the Alazar slice; additive only) --------------- */

/* The phantom the spectra show: vortexgo's simulated retina
 * (gosrc/acquire/phantom.go, spectrum.go), laid over the scan field. Its
 * fields are SimulatedConfig's (the same names and defaults, so one config
 * describes both sources), plus where the phantom's grid sits in scan
 * units: ascans points along y (channel 1) spanning [y_min, y_max] by
 * bscans points along x (channel 0) spanning [x_min, x_max], both ends included (vortex's raster convention), so a raster scan of
 * that extent and shape lands on the grid exactly. A galvo position is
 * converted to scan units (volts / volts_per_unit) and snapped to the
 * nearest grid point (ascan, bscan); points outside the field extrapolate
 * the phantom. vgv_spectrum of that point equals record bscan*ascans+ascan
 * of SimulatedAcquisition's first volume, within the tolerance
 * instruments/virtual/README.md states (noise_level 0: at most 1 count). */
typedef struct {
	int32_t ascans;            /* AscansPerBscan: grid points along x */
	int32_t bscans;            /* BscansPerVolume: grid points along y */
	int32_t volumes;           /* Volumes: the phantom's axial motion cycle */
	uint64_t seed;             /* Seed */
	double noise_level;        /* NoiseLevel (the model's own generator: equal spectra need 0) */
	double reference_level;    /* ReferenceLevel, counts */
	double dark_level;         /* DarkLevel, counts */
	double center_wavelength;  /* CenterWavelength, metres */
	double wavelength_span;    /* WavelengthSpan, metres */
	double source_bandwidth;   /* SourceBandwidth, metres */
	double dispersion;         /* Dispersion, radians at the band edges */
	/* Where the grid lies, in scan units, as vortex's raster lays its
	 * A-scans: along galvo channel 1 (y, the segment axis: extents[1]) the
	 * ascans points span [y_min, y_max]; along channel 0 (x, the volume
	 * axis: extents[0]) the bscans points span [x_min, x_max]. (Issue 26's
	 * closed loop: before, ascans ran along x, transposing vortex's raster.) */
	double x_min, x_max;       /* scan units the B-scans span along x (channel 0) */
	double y_min, y_max;       /* scan units the A-scans span along y (channel 1) */
	/* free_raster: while no galvo sample has been written since the last
	 * vgv_galvo_reset (no scanner attached), A-line n sees grid point
	 * n mod (ascans*bscans) of volume (n / (ascans*bscans)) mod volumes,
	 * in raster order: the digitizer alone then delivers what
	 * SimulatedAcquisition replays. 0: the beam stays at (0, 0) volts. */
	int32_t free_raster;
} vgv_phantom;

/* vgv_phantom_configure replaces the phantom (0 on success, -1 on a bad
 * value; cached spectra are dropped); vgv_phantom_get reads it. */
int vgv_phantom_configure(const vgv_phantom* p);
void vgv_phantom_get(vgv_phantom* p);

/* Faults, for tests of what the driver does when the hardware fails.
 * VGV_FAULT_BOARD_REMOVED: from A-line at on, the digitizer behaves as a
 * board pulled from the bus (every call on its handle fails, enumeration
 * no longer finds it) until vgv_fault_set(VGV_FAULT_NONE, 0). The
 * environment variable VGV_FAULT="board_removed@<aline>" sets it when the
 * library loads. vgv_fault_at returns the fault active at A-line n. */
enum { VGV_FAULT_NONE = 0, VGV_FAULT_BOARD_REMOVED = 1 };
void vgv_fault_set(int kind, int64_t at_aline);
int vgv_fault_at(int64_t n);

/* --- Additions (issue 26, the closed loop; additive only) ---------------- */

/* vgv_clock_stop ends the triggers (the digitizer's capture aborted): from
 * then vgv_now_alines reads 0 until the next vgv_clock_start, so each
 * capture counts its A-lines from 0, as a DAQmx task started before it
 * (its sample clock on a PFI terminal) counts its samples from 0: AO sample
 * k is A-line k of every run, and a task armed for the next run sees no
 * trigger of the last one. */
void vgv_clock_stop(void);

/* The environment variables the model reads when it loads (tests and
 * vortex's demos set them without code): VGV_ALINE_RATE_HZ,
 * VGV_VOLTS_PER_UNIT (default 10/15: vortex's demos' galvo, whose DAQmx
 * channels scale by logical_units_per_physical_unit = 15/10), VGV_IO_DELAY, VGV_FAULT; the phantom's
 * VGV_PHANTOM="ascans,bscans,x_min,x_max,y_min,y_max", VGV_NOISE_LEVEL and VGV_THREADS (read
 * when first used). */

/* --- Additions (issue 26, vortex's demos at their own sizes; additive only) --- */

/* vgv_spectrum is safe to call from many threads at once; these spread
 * work over the CPUs (VGV_THREADS, default the CPUs the process may use, at
 * most 16), as a board's DMA engine is not held to one host core.
 * vgv_parallel calls fn(ctx, lo, hi) on disjoint ranges covering
 * [0, count), at least min_per_worker items each, one range on the calling
 * thread, and returns when all are done. vgv_spectra writes spectra of
 * A-lines first .. first+count-1 to out, spectrum i at out + i*stride
 * values. vgv_min_per_worker is the items of samples values worth a thread. */
typedef void (*vgv_range_fn)(void* ctx, int64_t lo, int64_t hi);
void vgv_parallel(int64_t count, int64_t min_per_worker, vgv_range_fn fn, void* ctx);
void vgv_spectra(int64_t first, int64_t count, uint16_t* out, size_t stride, int32_t samples);
int64_t vgv_min_per_worker(int32_t samples);

#ifdef __cplusplus
}
#endif
#endif
