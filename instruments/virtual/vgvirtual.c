/* vgvirtual.c: the virtual OCT instrument's shared model (vgvirtual.h).
 *
 * One process-wide model: the configuration, the A-line clock, the galvo
 * timeline the virtual DAQmx writes, and the phantom the virtual digitizer
 * reads. The phantom is a port of vortexgo's simulated retina
 * (gosrc/acquire/phantom.go and spectrum.go): the same random streams
 * (Go's math/rand/v2 PCG-DXSM and Float64), the same formulas in the same
 * order of operations, built without floating-point contraction, so a grid
 * point's spectrum equals SimulatedAcquisition's record to within libm's
 * last-bit differences (at most 1 count once quantised; README.md). Keep
 * the two in step: tests_py/test_virtual_alazar.py compares them.
 */
#define _GNU_SOURCE
#include "vgvirtual.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Go's math/rand/v2: PCG with the DXSM output, and Rand.Float64. */

typedef struct {
	uint64_t hi, lo;
} pcg;

static uint64_t pcg_uint64(pcg* p) {
	const uint64_t mulHi = 2549297995355413924ULL, mulLo = 4865540595714422341ULL;
	const uint64_t incHi = 6364136223846793005ULL, incLo = 1442695040888963407ULL;
	unsigned __int128 m = (unsigned __int128)p->lo * mulLo;
	uint64_t hi = (uint64_t)(m >> 64), lo = (uint64_t)m;
	hi += p->hi * mulLo + p->lo * mulHi;
	unsigned __int128 s = (unsigned __int128)lo + incLo;
	lo = (uint64_t)s;
	hi = hi + incHi + (uint64_t)(s >> 64);
	p->hi = hi;
	p->lo = lo;
	hi ^= hi >> 32;
	hi *= 0xda942042e4dd58b5ULL;
	hi ^= hi >> 48;
	hi *= (lo | 1);
	return hi;
}

static double pcg_float64(pcg* p) { return (double)(pcg_uint64(p) << 11 >> 11) / 9007199254740992.0; }

/* ------------------------------------------------------------------ */
/* The phantom (phantom.go). */

typedef struct {
	double depth, pit, reflectivity;
} layer;

static const layer retina[] = {
	{0.30, 1.0, 1e-3}, {0.35, 0.8, 5e-4}, {0.43, 0.5, 3e-4}, {0.51, 0.2, 4e-4},
	{0.61, 0.0, 2e-3}, {0.67, 0.0, 4e-3}, {0.76, 0.0, 2.5e-4},
};
enum { NLAYERS = sizeof(retina) / sizeof(retina[0]), MAX_VESSELS = 512, MAX_REFL = 64 };

#define VESSEL_DEPTH 0.33
#define VESSEL_SHADOW 0.85
#define SPECKLE_FLOOR 0.6
/* Go folds its constant expressions exactly and rounds once; these are
 * those roundings (1-speckleFloor, 2*0.08*0.08, 2*foveaRadius^2). */
#define ONE_MINUS_FLOOR 0.4
#define PIT_VAR 0.0128
#define FOVEA_VAR 0.0098
#define TWO_PI 6.283185307179586
#define INV_TWO_PI 0x1.45f306dc9c883p-3

typedef struct {
	double x, y, depth, reflectivity;
} scatterer;
typedef struct {
	double x0, y0, x1, y1, radius, minX, minY, maxX, maxY;
} vessel;
typedef struct {
	double depth, reflectivity;
} reflector;

typedef struct {
	double half;
	int ascans, bscans, volumes;
	uint64_t seed;
	scatterer scat[8];
	vessel ves[MAX_VESSELS];
	int nves;
} phantom;

static void add_vessel(phantom* p, double x0, double y0, double x1, double y1, double r) {
	double m = 3 * r;
	vessel v = {x0, y0, x1, y1, r, fmin(x0, x1) - m, fmin(y0, y1) - m, fmax(x0, x1) + m, fmax(y0, y1) + m};
	p->ves[p->nves++] = v;
}

typedef struct {
	double x, y, angle, radius, side, reach;
} tip;

static void grow_vessels(phantom* p, pcg* rng) {
	/* Breadth first, as phantom.go: a queue of tips. Each step adds at most
	 * one tip, and steps are bounded by MAX_VESSELS, so the queue is too. */
	static const double arcs[4][2] = {{-1, 0.36}, {-1, 0.22}, {1, 0.22}, {1, 0.36}};
	tip q[4 + MAX_VESSELS];
	int head = 0, tail = 0;
	for (int a = 0; a < 4; a++) {
		tip t = {-0.12, 0.5 + 0.03 * arcs[a][0], arcs[a][0] * 0.9, 0.011 + 0.003 * pcg_float64(rng), arcs[a][0], arcs[a][1]};
		q[tail++] = t;
	}
	const double step = 0.02;
	while (head < tail && p->nves < MAX_VESSELS) {
		tip t = q[head++];
		for (int i = 0; i < 90; i++) {
			if (t.x > 1.15 || t.x < -0.2 || t.y < -0.15 || t.y > 1.15 || t.radius < 0.003 || p->nves >= MAX_VESSELS) {
				break;
			}
			double wander = 0.15 * (pcg_float64(rng) - 0.5);
			if (t.side != 0) {
				double u = fmax(0, fmin(1, (t.x + 0.12) / 1.3));
				double target = 0.5 + t.side * (0.04 + t.reach * sin(M_PI * u));
				double slope = t.side * t.reach * M_PI / 1.3 * cos(M_PI * u);
				double want = atan(slope + 3 * (target - t.y));
				t.angle += 0.3 * (want - t.angle) + wander;
			} else {
				t.angle += wander;
				double fx = t.x - 0.5, fy = t.y - 0.5;
				if (fx * fx + fy * fy < 0.0144) { /* Go folds 0.12*0.12 exactly */
					break;
				}
			}
			double nx = t.x + step * cos(t.angle), ny = t.y + step * sin(t.angle);
			add_vessel(p, t.x, t.y, nx, ny, t.radius);
			t.x = nx;
			t.y = ny;
			if (pcg_float64(rng) < 0.14) {
				double mag = 0.5 + 0.5 * pcg_float64(rng); /* Go evaluates the arguments left to right */
				double sgn = pcg_float64(rng) - 0.5;
				double turn = copysign(mag, sgn);
				tip b = {t.x, t.y, t.angle + turn, t.radius * 0.7, 0, 0};
				if (tail < (int)(sizeof(q) / sizeof(q[0]))) {
					q[tail++] = b;
				}
				t.radius *= 0.9;
			}
		}
	}
}

static void phantom_init(phantom* p, int samples, int ascans, int bscans, int volumes, uint64_t seed) {
	memset(p, 0, sizeof(*p));
	p->half = (double)samples / 2;
	p->ascans = ascans;
	p->bscans = bscans;
	p->volumes = volumes;
	pcg rng = {seed, 0x9e3779b97f4a7c15ULL};
	for (int i = 0; i < 8; i++) {
		double x = 0.1 + 0.8 * pcg_float64(&rng);
		double y = 0.1 + 0.8 * pcg_float64(&rng);
		double d = 0.25 + 0.55 * pcg_float64(&rng);
		double r = 1e-3 + 4e-3 * pcg_float64(&rng);
		scatterer s = {x, y, d, r};
		p->scat[i] = s;
	}
	p->seed = seed;
	grow_vessels(p, &rng);
}

static double vessel_at(const phantom* p, double x, double y) {
	double minR = 1 / (double)(p->ascans > p->bscans ? p->ascans : p->bscans);
	double v = 0.0;
	for (int i = 0; i < p->nves; i++) {
		const vessel* s = &p->ves[i];
		if (x < s->minX || x > s->maxX || y < s->minY || y > s->maxY) {
			continue;
		}
		double dx = s->x1 - s->x0, dy = s->y1 - s->y0;
		double t = ((x - s->x0) * dx + (y - s->y0) * dy) / (dx * dx + dy * dy);
		t = fmax(0, fmin(1, t));
		double ex = x - (s->x0 + t * dx), ey = y - (s->y0 + t * dy);
		double r = fmax(s->radius, minR);
		v = fmax(v, exp(-(ex * ex + ey * ey) / (2 * r * r)));
	}
	return v;
}

static double speckle(const phantom* p, int64_t bscan, int64_t ascan, int64_t k) {
	uint64_t h = p->seed ^ (uint64_t)bscan * 0x9e3779b97f4a7c15ULL ^ (uint64_t)ascan * 0xc2b2ae3d27d4eb4fULL ^
		     (uint64_t)k * 0x165667b19e3779f9ULL;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ULL;
	h ^= h >> 33;
	double u = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
	return SPECKLE_FLOOR + ONE_MINUS_FLOOR * -log(u);
}

static double jitter(const phantom* p, int64_t bscan, int64_t ascan, int64_t k) {
	double s = speckle(p, bscan, ascan, k + NLAYERS + 1);
	return 2 * fmod(s * 7.31, 1) - 1;
}

static int reflectors(const phantom* p, int64_t volume, int64_t bscan, int64_t ascan, reflector* buf) {
	int n = 0;
	double x = ((double)ascan + 0.5) / (double)p->ascans;
	double y = ((double)bscan + 0.5) / (double)p->bscans;
	double cx = x - 0.5, cy = y - 0.5;
	double r2 = cx * cx + cy * cy;
	double shape = 0.16 * r2 + 0.012 * sin(TWO_PI * (1.5 * x + 0.7 * y));
	if (p->volumes > 1) {
		shape += 0.02 * sin(TWO_PI * (double)volume / (double)p->volumes);
	}
	double pit = 0.06 * exp(-r2 / PIT_VAR);
	double fovea = exp(-r2 / FOVEA_VAR);
	double v = vessel_at(p, x, y);
	for (int k = 0; k < NLAYERS; k++) {
		const layer* l = &retina[k];
		double refl = l->reflectivity * speckle(p, bscan, ascan, k);
		refl *= 1 - 0.9 * l->pit * fovea;
		if (l->depth > VESSEL_DEPTH) {
			refl *= 1 - VESSEL_SHADOW * v;
		}
		buf[n].depth = p->half * (l->depth + shape + l->pit * pit) + jitter(p, bscan, ascan, k);
		buf[n].reflectivity = refl;
		n++;
	}
	if (v > 0.01) {
		buf[n].depth = p->half * (VESSEL_DEPTH + shape + pit);
		buf[n].reflectivity = 6e-4 * v;
		n++;
	}
	double sx = 1.2 / (double)p->ascans, sy = 1.2 / (double)p->bscans;
	for (int i = 0; i < 8; i++) {
		const scatterer* s = &p->scat[i];
		double dx = (x - s->x) / sx, dy = (y - s->y) / sy;
		double q = dx * dx + dy * dy;
		if (q > 9) {
			continue;
		}
		buf[n].depth = p->half * (s->depth + shape);
		buf[n].reflectivity = s->reflectivity * exp(-q / 2);
		n++;
	}
	return n;
}

/* ------------------------------------------------------------------ */
/* The spectrometer (spectrum.go). */

typedef struct {
	int n;
	double *kappa, *theta, *envelope;
} spectrometer;

static void spectrometer_free(spectrometer* s) {
	free(s->kappa);
	free(s->theta);
	free(s->envelope);
	memset(s, 0, sizeof(*s));
}

static int spectrometer_init(spectrometer* s, int n, const vgv_phantom* c) {
	spectrometer_free(s);
	s->kappa = malloc(sizeof(double) * n);
	s->theta = malloc(sizeof(double) * n);
	s->envelope = malloc(sizeof(double) * n);
	if (!s->kappa || !s->theta || !s->envelope) {
		spectrometer_free(s);
		return -1;
	}
	s->n = n;
	double lambdaMin = c->center_wavelength - c->wavelength_span / 2;
	double dLambda = c->wavelength_span / (double)(n - 1);
	double kFirst = TWO_PI / lambdaMin;
	double kLast = TWO_PI / (lambdaMin + (double)(n - 1) * dLambda);
	double dk = (kFirst - kLast) / (double)(n - 1);
	double kMid = (kFirst + kLast) / 2;
	double half = (kFirst - kLast) / 2;
	double k0 = TWO_PI / c->center_wavelength;
	double fwhmK = TWO_PI * c->source_bandwidth / (c->center_wavelength * c->center_wavelength);
	for (int i = 0; i < n; i++) {
		double k = TWO_PI / (lambdaMin + (double)i * dLambda);
		s->kappa[i] = TWO_PI * (k - kMid) / ((double)n * dk);
		double u = (k - kMid) / half;
		s->theta[i] = c->dispersion * u * u;
		double x = (k - k0) / fwhmK;
		s->envelope[i] = exp(-4 * M_LN2 * x * x);
	}
	return 0;
}

static double fast_cos(double x) {
	double r = x - TWO_PI * round(x * INV_TWO_PI);
	double h = r / 2;
	double h2 = h * h;
	double s = h * (1 + h2 * (-1.0 / 6 + h2 * (1.0 / 120 + h2 * (-1.0 / 5040 + h2 * (1.0 / 362880 + h2 * (-1.0 / 39916800))))));
	return 1 - 2 * s * s;
}

/* ------------------------------------------------------------------ */
/* The model's state. */

/* cfg_mu guards cfg, read on every clock tick and galvo lookup. model_lock
 * guards ph, the phantom and its cache: held for reading while spectra are
 * synthesized, by many threads at once (vgv_parallel), and for writing only
 * while the model is rebuilt or reconfigured. One mutex over both made the
 * DAQmx clock wait behind each 0.2 ms spectrum and serialized synthesis: a
 * 2752-sample board then ran at 4 kHz, which underflowed vortex's demos at
 * their own sizes. */
static pthread_mutex_t cfg_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t model_lock = PTHREAD_RWLOCK_INITIALIZER;
/* volts_per_unit 10/15: vortex's DAQmxIO writes stream / logical_units_per_physical_unit
 * volts (vortex/io/daqmx.hpp), and its demos' galvo channels scale by 15/10, so a scan
 * unit is 10/15 V; the model reads volts / volts_per_unit back as scan units. */
static vgv_config cfg = {100000.0, 1024, 10.0 / 15.0, 0};
static vgv_phantom ph = {256, 256, 1, 1, 1.0, 20000.0, 500.0, 840e-9, 100e-9, 50e-9, 30.0, -1, 1, -1, 1, 1};

static phantom model;              /* built for (built_samples, ph) */
static spectrometer spec;
static int built_samples;          /* 0: rebuild at the next spectrum */
static uint16_t* cache;            /* volumes x bscans x ascans spectra of built_samples, or NULL */
static uint8_t* cached;            /* per grid point, atomically: CACHE_EMPTY, CACHE_FILLING, CACHE_READY */
enum { CACHE_EMPTY = 0, CACHE_FILLING = 1, CACHE_READY = 2 };
static const size_t cache_limit = (size_t)1 << 30;

static void drop_model(void) {
	built_samples = 0;
	free(cache);
	free(cached);
	cache = NULL;
	cached = NULL;
}

static int build_model(int samples) {
	if (built_samples == samples) {
		return 0;
	}
	drop_model();
	if (spectrometer_init(&spec, samples, &ph) != 0) {
		return -1;
	}
	phantom_init(&model, samples, ph.ascans, ph.bscans, ph.volumes, ph.seed);
	size_t points = (size_t)ph.volumes * (size_t)ph.bscans * (size_t)ph.ascans;
	if (points * (size_t)samples * 2 <= cache_limit) {
		cache = malloc(points * (size_t)samples * 2);
		cached = calloc(points, 1);
		if (!cache || !cached) {
			free(cache);
			free(cached);
			cache = NULL;
			cached = NULL;
		}
	}
	built_samples = samples;
	return 0;
}

/* synth writes the spectrum of grid point (volume, bscan, ascan) into out
 * (gosrc/acquire/simulated.go's synth.bscan, one A-scan of it). */
static void synth(int64_t volume, int64_t bscan, int64_t ascan, uint16_t* out, int n, int64_t aline) {
	reflector refl[MAX_REFL];
	int nr = reflectors(&model, volume, bscan, ascan, refl);
	double dc = 1.0;
	double* fr = calloc((size_t)n, sizeof(double));
	if (!fr) {
		memset(out, 0, sizeof(uint16_t) * (size_t)n);
		return;
	}
	for (int j = 0; j < nr; j++) {
		dc += refl[j].reflectivity;
		double amp = 2 * sqrt(refl[j].reflectivity);
		for (int i = 0; i < n; i++) {
			fr[i] += amp * fast_cos(spec.kappa[i] * refl[j].depth + spec.theta[i]);
		}
	}
	for (int i = 0; i < n; i++) {
		double v = ph.dark_level + ph.reference_level * spec.envelope[i] * (dc + fr[i]);
		out[i] = (uint16_t)fmin(fmax(round(v), 0), 65535);
	}
	free(fr);
}

/* Shot noise: the model's own stream per A-line, so noisy spectra differ
 * from SimulatedAcquisition's in their noise only. Normal variates come
 * from a table of GAUSS_N Box-Muller draws (made once, from a fixed seed)
 * indexed by the A-line's PCG stream, 16 bits per sample: a per-sample
 * Box-Muller (log, sqrt, cos) cost more than the spectrum itself and held
 * the board to 4 kHz at 2752 samples. The noise is added to the cached,
 * noiseless spectrum, so the cache serves noisy runs too. */
enum { GAUSS_BITS = 16, GAUSS_N = 1 << GAUSS_BITS };
static float gauss[GAUSS_N];
static pthread_once_t gauss_once = PTHREAD_ONCE_INIT;

static void gauss_init(void) {
	pcg rng = {0x853c49e6748fea9bULL, 0xda3e39cb94b95bdbULL};
	for (int i = 0; i < GAUSS_N; i += 2) {
		double u1 = pcg_float64(&rng), u2 = pcg_float64(&rng);
		double r = sqrt(-2 * log(u1 > 0 ? u1 : 1e-300));
		gauss[i] = (float)(r * cos(TWO_PI * u2));
		gauss[i + 1] = (float)(r * sin(TWO_PI * u2));
	}
}

static void add_noise(uint16_t* out, int n, int64_t aline, uint64_t seed, double level) {
	pthread_once(&gauss_once, gauss_init);
	pcg rng = {seed ^ 0x5851f42d4c957f2dULL, (uint64_t)aline};
	uint64_t bits = 0;
	float lvl = (float)level;
	for (int i = 0; i < n; i++) {
		if ((i & 3) == 0) {
			bits = pcg_uint64(&rng);
		}
		float g = gauss[bits & (GAUSS_N - 1)];
		bits >>= GAUSS_BITS;
		float v = (float)out[i];
		long q = lrintf(v + lvl * sqrtf(v) * g);
		out[i] = (uint16_t)(q < 0 ? 0 : (q > 65535 ? 65535 : q));
	}
}

/* ------------------------------------------------------------------ */
/* The galvo timeline: a ring of the last GALVO_CAP samples per channel. */

enum { GALVO_CAP = 1 << 20 };
static pthread_mutex_t galvo_mu = PTHREAD_MUTEX_INITIALIZER;
static double* galvo[2];
static int64_t galvo_end[2]; /* one past the highest sample written per channel */
static double galvo_last[2];
static int galvo_written;    /* any sample since the last reset */

void vgv_galvo_write(int ch, int64_t first, const double* volts, int64_t n) {
	if (ch < 0 || ch > 1 || volts == NULL || n <= 0 || first < 0) {
		return;
	}
	pthread_mutex_lock(&galvo_mu);
	if (!galvo[ch]) {
		galvo[ch] = calloc(GALVO_CAP, sizeof(double));
	}
	if (galvo[ch]) {
		for (int64_t i = 0; i < n; i++) {
			galvo[ch][(first + i) & (GALVO_CAP - 1)] = volts[i];
		}
		if (first + n > galvo_end[ch]) {
			galvo_end[ch] = first + n;
			galvo_last[ch] = volts[n - 1];
		}
		galvo_written = 1;
	}
	pthread_mutex_unlock(&galvo_mu);
}

void vgv_galvo_reset(void) {
	pthread_mutex_lock(&galvo_mu);
	galvo_end[0] = galvo_end[1] = 0;
	galvo_last[0] = galvo_last[1] = 0;
	galvo_written = 0;
	pthread_mutex_unlock(&galvo_mu);
}

static int64_t io_delay(void) {
	pthread_mutex_lock(&cfg_mu);
	int64_t d = cfg.io_delay;
	pthread_mutex_unlock(&cfg_mu);
	return d;
}

int vgv_galvo_at(int64_t n, double* x, double* y) {
	int64_t s = n - io_delay();
	double v[2] = {0, 0};
	int under = 0;
	pthread_mutex_lock(&galvo_mu);
	for (int ch = 0; ch < 2; ch++) {
		if (s < 0) {
			continue; /* before the first sample: the outputs rest at 0 V */
		}
		if (s >= galvo_end[ch] || s < galvo_end[ch] - GALVO_CAP || !galvo[ch]) {
			v[ch] = galvo_last[ch];
			under = 1;
		} else {
			v[ch] = galvo[ch][s & (GALVO_CAP - 1)];
		}
	}
	pthread_mutex_unlock(&galvo_mu);
	if (x) *x = v[0];
	if (y) *y = v[1];
	return under;
}

/* ------------------------------------------------------------------ */
/* Configuration. */

int vgv_configure(const vgv_config* c) {
	if (!c || !(c->aline_rate_hz >= 0) || c->samples_per_aline < 1 || !(c->volts_per_unit != 0) ||
	    !isfinite(c->volts_per_unit) || c->io_delay < 0) {
		return -1;
	}
	pthread_mutex_lock(&cfg_mu);
	cfg = *c;
	pthread_mutex_unlock(&cfg_mu);
	return 0;
}

void vgv_config_get(vgv_config* c) {
	if (!c) return;
	pthread_mutex_lock(&cfg_mu);
	*c = cfg;
	pthread_mutex_unlock(&cfg_mu);
}

int vgv_phantom_configure(const vgv_phantom* p) {
	if (!p || p->ascans < 1 || p->bscans < 1 || p->volumes < 1 || !(p->noise_level >= 0) ||
	    !(p->reference_level > 0 && p->reference_level <= 50000) || !(p->dark_level >= 0 && p->dark_level <= 10000) ||
	    !(p->center_wavelength > 0) || !(p->wavelength_span > 0 && p->wavelength_span < p->center_wavelength) ||
	    !(p->source_bandwidth > 0) || !isfinite(p->dispersion) || !isfinite(p->x_min) || !isfinite(p->x_max) ||
	    !isfinite(p->y_min) || !isfinite(p->y_max)) {
		return -1;
	}
	pthread_rwlock_wrlock(&model_lock);
	ph = *p;
	drop_model();
	pthread_rwlock_unlock(&model_lock);
	return 0;
}

void vgv_phantom_get(vgv_phantom* p) {
	if (!p) return;
	pthread_rwlock_rdlock(&model_lock);
	*p = ph;
	pthread_rwlock_unlock(&model_lock);
}

/* grid_index is the grid point nearest to position u along an axis of
 * points spanning [lo, hi], ends included. */
static int64_t grid_index(double u, double lo, double hi, int points) {
	if (points <= 1 || hi == lo) {
		return 0;
	}
	double f = (u - lo) / (hi - lo) * (double)(points - 1);
	if (!(f > -1e15 && f < 1e15)) {
		return 0;
	}
	return (int64_t)llround(f);
}

/* spectrum_locked is vgv_spectrum with model_lock held (either way) and the
 * model built for samples. */
static void spectrum_locked(int64_t n, uint16_t* out, int32_t samples, int written, double vx, double vy, double vpu) {
	int64_t volume = 0, bscan, ascan;
	int64_t per = (int64_t)ph.ascans * ph.bscans;
	if (!written && ph.free_raster) {
		int64_t r = n < 0 ? 0 : n;
		volume = (r / per) % ph.volumes;
		bscan = (r % per) / ph.ascans;
		ascan = r % ph.ascans;
	} else {
		/* vortex's raster: A-scans along its segment axis (galvo channel 1, y),
		 * B-scans along its volume axis (channel 0, x) (vortex/scan/waypoints.hpp:
		 * extents[1] is the B-scan's, extents[0] the volume's) */
		ascan = grid_index(vy / vpu, ph.y_min, ph.y_max, ph.ascans);
		bscan = grid_index(vx / vpu, ph.x_min, ph.x_max, ph.bscans);
	}
	int in_grid = ascan >= 0 && ascan < ph.ascans && bscan >= 0 && bscan < ph.bscans;
	if (in_grid && cache) {
		size_t idx = ((size_t)volume * ph.bscans + (size_t)bscan) * ph.ascans + (size_t)ascan;
		uint16_t* c = cache + idx * (size_t)samples;
		uint8_t state = __atomic_load_n(&cached[idx], __ATOMIC_ACQUIRE);
		uint8_t empty = CACHE_EMPTY;
		if (state == CACHE_READY) {
			memcpy(out, c, sizeof(uint16_t) * (size_t)samples);
		} else if (state == CACHE_EMPTY && __atomic_compare_exchange_n(&cached[idx], &empty, CACHE_FILLING, 0,
		                                                                 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
			synth(volume, bscan, ascan, c, samples, n);
			__atomic_store_n(&cached[idx], CACHE_READY, __ATOMIC_RELEASE);
			memcpy(out, c, sizeof(uint16_t) * (size_t)samples);
		} else { /* another thread is filling it: make our own rather than wait */
			synth(volume, bscan, ascan, out, samples, n);
		}
	} else {
		synth(volume, bscan, ascan, out, samples, n);
	}
	if (ph.noise_level > 0) {
		add_noise(out, samples, n, ph.seed, ph.noise_level);
	}
}

void vgv_spectrum(int64_t n, uint16_t* out, int32_t samples) {
	if (!out || samples < 2) {
		return;
	}
	double vx = 0, vy = 0;
	pthread_mutex_lock(&galvo_mu);
	int written = galvo_written;
	pthread_mutex_unlock(&galvo_mu);
	if (written) {
		vgv_galvo_at(n, &vx, &vy);
	}
	pthread_mutex_lock(&cfg_mu);
	double vpu = cfg.volts_per_unit;
	pthread_mutex_unlock(&cfg_mu);
	pthread_rwlock_rdlock(&model_lock);
	if (built_samples == samples) {
		spectrum_locked(n, out, samples, written, vx, vy, vpu);
		pthread_rwlock_unlock(&model_lock);
		return;
	}
	/* (Re)build for this length, and make this one spectrum under the write
	 * lock: a second board of another length may rebuild right after. */
	pthread_rwlock_unlock(&model_lock);
	pthread_rwlock_wrlock(&model_lock);
	if (build_model(samples) != 0) {
		memset(out, 0, sizeof(uint16_t) * (size_t)samples);
	} else {
		spectrum_locked(n, out, samples, written, vx, vy, vpu);
	}
	pthread_rwlock_unlock(&model_lock);
}

/* ------------------------------------------------------------------ */
/* Parallel synthesis. */

/* vgv_workers: VGV_THREADS, else the CPUs this process may use, at most 16. */
static int vgv_workers(void) {
	static int workers;
	int w = __atomic_load_n(&workers, __ATOMIC_RELAXED);
	if (w > 0) {
		return w;
	}
	const char* s = getenv("VGV_THREADS");
	w = s && *s ? atoi(s) : 0;
	if (w <= 0) {
		cpu_set_t set;
		w = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
	}
	w = w < 1 ? 1 : (w > 16 ? 16 : w);
	__atomic_store_n(&workers, w, __ATOMIC_RELAXED);
	return w;
}

typedef struct {
	vgv_range_fn fn;
	void* ctx;
	int64_t lo, hi;
} range_job;

static void* range_main(void* arg) {
	range_job* j = arg;
	j->fn(j->ctx, j->lo, j->hi);
	return NULL;
}

void vgv_parallel(int64_t count, int64_t min_per_worker, vgv_range_fn fn, void* ctx) {
	if (count <= 0 || !fn) {
		return;
	}
	int64_t w = vgv_workers();
	if (min_per_worker < 1) min_per_worker = 1;
	if (w > count / min_per_worker) w = count / min_per_worker;
	if (w <= 1) {
		fn(ctx, 0, count);
		return;
	}
	range_job jobs[16];
	pthread_t th[16];
	int started[16] = {0};
	for (int64_t i = 0; i < w; i++) {
		jobs[i] = (range_job){fn, ctx, count * i / w, count * (i + 1) / w};
	}
	/* ranges 1.. on new threads, range 0 on this one; a thread that cannot
	 * be made runs its range here */
	for (int64_t i = 1; i < w; i++) {
		started[i] = pthread_create(&th[i], NULL, range_main, &jobs[i]) == 0;
	}
	range_main(&jobs[0]);
	for (int64_t i = 1; i < w; i++) {
		if (started[i]) {
			pthread_join(th[i], NULL);
		} else {
			range_main(&jobs[i]);
		}
	}
}

typedef struct {
	int64_t first;
	uint16_t* out;
	size_t stride;
	int32_t samples;
} spectra_job;

static void spectra_range(void* ctx, int64_t lo, int64_t hi) {
	spectra_job* j = ctx;
	for (int64_t i = lo; i < hi; i++) {
		vgv_spectrum(j->first + i, j->out + (size_t)i * j->stride, j->samples);
	}
}

void vgv_spectra(int64_t first, int64_t count, uint16_t* out, size_t stride, int32_t samples) {
	if (!out || samples < 2 || count <= 0 || stride < (size_t)samples) {
		return;
	}
	spectra_job j = {first, out, stride, samples};
	vgv_parallel(count, vgv_min_per_worker(samples), spectra_range, &j);
}

int64_t vgv_min_per_worker(int32_t samples) {
	/* a thread per at least 64 Ki samples: below that, starting it costs more than it saves */
	return samples <= 0 ? 1 : (65536 + samples - 1) / samples;
}

/* ------------------------------------------------------------------ */
/* The A-line clock. */

static pthread_mutex_t clock_mu = PTHREAD_MUTEX_INITIALIZER;
static struct timespec clock_t0;
static int clock_running; /* set by vgv_clock_start: before it vgv_now_alines is 0 */

void vgv_clock_start(void) {
	pthread_mutex_lock(&clock_mu);
	clock_gettime(CLOCK_MONOTONIC, &clock_t0);
	clock_running = 1;
	pthread_mutex_unlock(&clock_mu);
}

void vgv_clock_stop(void) {
	pthread_mutex_lock(&clock_mu);
	clock_running = 0;
	pthread_mutex_unlock(&clock_mu);
}

int64_t vgv_now_alines(void) {
	pthread_mutex_lock(&cfg_mu);
	double rate = cfg.aline_rate_hz;
	pthread_mutex_unlock(&cfg_mu);
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	pthread_mutex_lock(&clock_mu);
	if (!clock_running) { /* no capture started: no trigger has come yet */
		pthread_mutex_unlock(&clock_mu);
		return 0;
	}
	if (rate <= 0) {
		pthread_mutex_unlock(&clock_mu);
		return INT64_MAX;
	}
	double dt = (double)(now.tv_sec - clock_t0.tv_sec) + (double)(now.tv_nsec - clock_t0.tv_nsec) * 1e-9;
	pthread_mutex_unlock(&clock_mu);
	return (int64_t)floor(dt * rate);
}

/* ------------------------------------------------------------------ */
/* Faults. */

static pthread_mutex_t fault_mu = PTHREAD_MUTEX_INITIALIZER;
static int fault_kind;
static int64_t fault_at;

void vgv_fault_set(int kind, int64_t at_aline) {
	pthread_mutex_lock(&fault_mu);
	fault_kind = kind;
	fault_at = at_aline;
	pthread_mutex_unlock(&fault_mu);
}

int vgv_fault_at(int64_t n) {
	pthread_mutex_lock(&fault_mu);
	int k = (fault_kind != VGV_FAULT_NONE && n >= fault_at) ? fault_kind : VGV_FAULT_NONE;
	pthread_mutex_unlock(&fault_mu);
	return k;
}

/* ------------------------------------------------------------------ */
/* The environment, read once when the library loads. */

__attribute__((constructor)) static void vgv_from_env(void) {
	const char* s;
	if ((s = getenv("VGV_ALINE_RATE_HZ")) && *s) cfg.aline_rate_hz = atof(s);
	if ((s = getenv("VGV_VOLTS_PER_UNIT")) && *s && atof(s) != 0) cfg.volts_per_unit = atof(s);
	if ((s = getenv("VGV_IO_DELAY")) && *s) cfg.io_delay = atoll(s);
	if ((s = getenv("VGV_NOISE_LEVEL")) && *s) ph.noise_level = atof(s);
	if ((s = getenv("VGV_PHANTOM")) && *s) {
		vgv_phantom p = ph;
		if (sscanf(s, "%d,%d,%lf,%lf,%lf,%lf", &p.ascans, &p.bscans, &p.x_min, &p.x_max, &p.y_min, &p.y_max) == 6 &&
		    p.ascans > 0 && p.bscans > 0) {
			ph = p;
		}
	}
	if ((s = getenv("VGV_FAULT")) && *s) {
		long long at = 0;
		if (sscanf(s, "board_removed@%lld", &at) == 1) {
			vgv_fault_set(VGV_FAULT_BOARD_REMOVED, at);
		}
	}
}
