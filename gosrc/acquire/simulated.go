package acquire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/guard"
)

// SimulatedConfig configures a SimulatedAcquisition. Start from
// DefaultSimulatedConfig and change what you need: every field is checked
// by NewSimulatedAcquisition.
type SimulatedConfig struct {
	// SamplesPerRecord is the number of spectrometer pixels per A-scan (>= 16).
	SamplesPerRecord int
	// AscansPerBscan is the number of A-scans across one B-scan (x).
	AscansPerBscan int
	// BscansPerVolume is the number of B-scans in one volume (y).
	BscansPerVolume int
	// Volumes is how many distinct volumes are synthesised once, at
	// Prepare, and replayed in a ring. Memory: Volumes*BscansPerVolume*
	// AscansPerBscan*SamplesPerRecord*2 bytes.
	Volumes int
	// TotalVolumes is how many volumes Fill delivers before io.EOF; 0 means
	// endless replay.
	TotalVolumes int
	// Rate is the A-scan rate in A-scans per second; 0 delivers as fast as
	// Fill is called (Fill is then a memcpy).
	Rate float64
	// Seed makes the phantom's scatterers and the noise reproducible.
	Seed uint64
	// NoiseLevel scales shot noise: Gaussian with standard deviation
	// NoiseLevel*sqrt(counts). 0 gives noiseless spectra, 1 is a detector
	// with one count per photo-electron.
	NoiseLevel float64
	// ReferenceLevel is the reference arm's signal in counts at the peak of
	// the source spectrum.
	ReferenceLevel float64
	// DarkLevel is the detector's constant offset in counts.
	DarkLevel float64
	// CenterWavelength is the centre of the spectrometer's range in metres.
	CenterWavelength float64
	// WavelengthSpan is the range of wavelengths across the pixels in
	// metres; pixels are evenly spaced in wavelength.
	WavelengthSpan float64
	// SourceBandwidth is the full width at half maximum of the Gaussian
	// source spectrum, in metres.
	SourceBandwidth float64
	// Dispersion is the quadratic phase mismatch between the arms, in
	// radians at the band edges. DispersionCompensation undoes it.
	Dispersion float64
}

// DefaultSimulatedConfig is an 840 nm spectrometer of 1024 pixels imaging a
// 256 x 256 A-scan retina phantom, two volumes in the ring, no rate limit.
func DefaultSimulatedConfig() SimulatedConfig {
	return SimulatedConfig{
		SamplesPerRecord: 1024,
		AscansPerBscan:   256,
		BscansPerVolume:  256,
		Volumes:          2,
		Seed:             1,
		NoiseLevel:       1,
		ReferenceLevel:   20000,
		DarkLevel:        500,
		CenterWavelength: 840e-9,
		WavelengthSpan:   100e-9,
		SourceBandwidth:  50e-9,
		Dispersion:       30,
	}
}

// Validate reports the first field that is out of range.
func (c *SimulatedConfig) Validate() error {
	bad := func(field string, v any, want string) error {
		return engine.Invalid("acquire: SimulatedConfig.%s=%v, expected %s", field, v, want)
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.SamplesPerRecord < 16:
		return bad("SamplesPerRecord", c.SamplesPerRecord, ">= 16")
	case c.AscansPerBscan < 1:
		return bad("AscansPerBscan", c.AscansPerBscan, ">= 1")
	case c.BscansPerVolume < 1:
		return bad("BscansPerVolume", c.BscansPerVolume, ">= 1")
	case c.Volumes < 1:
		return bad("Volumes", c.Volumes, ">= 1")
	case c.TotalVolumes < 0:
		return bad("TotalVolumes", c.TotalVolumes, ">= 0 (0 = endless)")
	case !finite(c.NoiseLevel) || c.NoiseLevel < 0:
		return bad("NoiseLevel", c.NoiseLevel, ">= 0")
	case !finite(c.ReferenceLevel) || c.ReferenceLevel <= 0 || c.ReferenceLevel > 50000:
		return bad("ReferenceLevel", c.ReferenceLevel, "in (0, 50000] counts so fringes stay within uint16")
	case !finite(c.DarkLevel) || c.DarkLevel < 0 || c.DarkLevel > 10000:
		return bad("DarkLevel", c.DarkLevel, "in [0, 10000] counts")
	case !finite(c.CenterWavelength) || c.CenterWavelength <= 0:
		return bad("CenterWavelength", c.CenterWavelength, "> 0 metres")
	case !finite(c.WavelengthSpan) || c.WavelengthSpan <= 0 || c.WavelengthSpan >= c.CenterWavelength:
		return bad("WavelengthSpan", c.WavelengthSpan, fmt.Sprintf("in (0, CenterWavelength=%g) metres", c.CenterWavelength))
	case !finite(c.SourceBandwidth) || c.SourceBandwidth <= 0:
		return bad("SourceBandwidth", c.SourceBandwidth, "> 0 metres")
	case !finite(c.Dispersion):
		return bad("Dispersion", c.Dispersion, "a finite number of radians")
	}
	if err := checkRate(c.Rate); err != nil {
		return err
	}
	// The ring is synthesised into Go memory: bound it before Prepare
	// allocates, as Go dies (it does not return an error) when make asks
	// for more than the machine has.
	bytes, ok := engine.MulSize(c.Volumes, c.BscansPerVolume, c.AscansPerBscan, c.SamplesPerRecord, 2)
	if limit := maxRingBytes(); !ok || bytes > limit {
		// Named as the Python user wrote them (SimulatedAcquisitionConfig's
		// fields): this is the one error a plain constructor call can hit.
		return engine.TooLarge("acquire: SimulatedConfig: a ring of volumes=%d x bscans_per_volume=%d x ascans_per_bscan=%d x "+
			"samples_per_record=%d uint16 spectra is more than %d bytes (half the host's memory), expected a smaller "+
			"ring (fewer volumes replay endlessly: set total_volumes for the run's length)",
			c.Volumes, c.BscansPerVolume, c.AscansPerBscan, c.SamplesPerRecord, limit)
	}
	return nil
}

// SimulatedAcquisition synthesises spectral-domain OCT interferograms of a
// retina-like 3D phantom: curved layers whose depths vary smoothly across x
// and y plus a few point scatterers, seen through a Gaussian source
// spectrum, a spectrometer evenly spaced in wavelength (so resampling to
// even wavenumber matters), a quadratic dispersion mismatch, a DC term from
// the reference arm, a dark offset and shot noise, quantised to uint16.
//
// The ring of volumes is synthesised once by Prepare and replayed by Fill
// as a plain copy, so the source can outrun any processing pipeline.
// Cross-correlation terms between sample reflectors are left out: they are
// weaker than the reference fringes by the reflectivities themselves.
type SimulatedAcquisition struct {
	cfg     SimulatedConfig
	spec    *spectrometer
	phantom *phantom

	ring    []uint16       // Volumes*BscansPerVolume*AscansPerBscan records (+ wrap copy once pinned)
	pinned  backend.Buffer // the ring's pinned memory after PinTo, else nil
	wrap    int            // records copied past the ring's end by PinTo
	records int            // records in the ring
	pos     int            // next record of the ring to deliver
	sent    int            // records delivered so far
	limit   int            // records to deliver before io.EOF; 0 = endless

	run runState

	claim engine.Claim // refuses Close while an engine uses the ring
}

var _ engine.Claimer = (*SimulatedAcquisition)(nil)

// NewSimulatedAcquisition validates cfg and returns the source. The ring is
// synthesised by Prepare.
func NewSimulatedAcquisition(cfg SimulatedConfig) (*SimulatedAcquisition, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	perVolume := cfg.AscansPerBscan * cfg.BscansPerVolume
	a := &SimulatedAcquisition{
		cfg:     cfg,
		spec:    newSpectrometer(&cfg),
		phantom: newPhantom(&cfg),
		records: cfg.Volumes * perVolume,
		limit:   cfg.TotalVolumes * perVolume,
	}
	a.claim.Name("SimulatedAcquisition")
	return a, nil
}

// Claims reports the claim an engine takes while it uses the source
// (engine.Claimer): Close is refused until that engine's run ends.
func (a *SimulatedAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// Config returns the configuration the source was built with.
func (a *SimulatedAcquisition) Config() SimulatedConfig { return a.cfg }

// SamplesPerRecord returns the number of spectrometer pixels per A-scan.
func (a *SimulatedAcquisition) SamplesPerRecord() int { return a.cfg.SamplesPerRecord }

// RecordsPerVolume returns AscansPerBscan*BscansPerVolume.
func (a *SimulatedAcquisition) RecordsPerVolume() int {
	return a.cfg.AscansPerBscan * a.cfg.BscansPerVolume
}

// ResamplingPositions returns, for each of SamplesPerRecord output samples
// evenly spaced in wavenumber, its fractional position among the raw
// pixels: ProcessorConfig's ResamplingSamples for this spectrometer.
func (a *SimulatedAcquisition) ResamplingPositions() []float32 {
	return append([]float32(nil), a.spec.positions...)
}

// DispersionCompensation returns the phasor that cancels the simulated
// dispersion on the resampled (even-k) spectrum, for the depth peaks at
// bins d < SamplesPerRecord/2 of the inverse FFT (their mirror images at
// SamplesPerRecord-d broaden instead, as on a real system):
// QuadraticPhasor(SamplesPerRecord, -Dispersion). Multiply a spectral
// window into it to build ProcessorConfig's SpectralFilter.
func (a *SimulatedAcquisition) DispersionCompensation() []complex64 {
	return QuadraticPhasor(a.cfg.SamplesPerRecord, -a.cfg.Dispersion)
}

// Reflectors returns the interfaces seen by one A-scan: their depths in
// output bins (where the processed A-scan peaks) and reflectivities.
func (a *SimulatedAcquisition) Reflectors(volume, bscan, ascan int) ([]Reflector, error) {
	switch {
	case volume < 0 || volume >= a.cfg.Volumes:
		return nil, engine.Invalid("acquire: Reflectors: volume=%d, expected in [0, %d)", volume, a.cfg.Volumes)
	case bscan < 0 || bscan >= a.cfg.BscansPerVolume:
		return nil, engine.Invalid("acquire: Reflectors: bscan=%d, expected in [0, %d)", bscan, a.cfg.BscansPerVolume)
	case ascan < 0 || ascan >= a.cfg.AscansPerBscan:
		return nil, engine.Invalid("acquire: Reflectors: ascan=%d, expected in [0, %d)", ascan, a.cfg.AscansPerBscan)
	}
	return a.phantom.reflectors(volume, bscan, ascan, nil), nil
}

// Prepare synthesises the ring of volumes (once; later calls do nothing).
// It uses every CPU: about a nanosecond per sample per reflector per core.
// A closed source fails with backend.ErrClosed.
func (a *SimulatedAcquisition) Prepare() error {
	if err := a.claim.Err("acquire: SimulatedAcquisition.Prepare"); err != nil {
		return err
	}
	if a.ring != nil {
		return nil
	}
	n := a.cfg.SamplesPerRecord
	a.ring = make([]uint16, a.records*n)
	bscans := a.cfg.Volumes * a.cfg.BscansPerVolume
	var next atomic.Int64
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), bscans)
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A panic is Prepare's error, not the process's end.
			defer guard.Recover(&errs[w], "acquire: SimulatedAcquisition.Prepare: synthesis")
			g := newSynth(a)
			for {
				i := int(next.Add(1) - 1)
				if i >= bscans {
					return
				}
				g.bscan(i/a.cfg.BscansPerVolume, i%a.cfg.BscansPerVolume)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		a.ring = nil // half synthesised: the next Prepare starts over
		return err
	}
	return nil
}

// Start arms the source. Replay resumes where Stop left it.
func (a *SimulatedAcquisition) Start() error {
	if a.ring == nil {
		return fmt.Errorf("acquire: SimulatedAcquisition.Start before Prepare")
	}
	a.run.start(a.cfg.Rate)
	return nil
}

// Stop disarms the source; a Fill waiting for the rate limiter returns io.EOF.
func (a *SimulatedAcquisition) Stop() error {
	a.run.halt()
	return nil
}

// PinTo moves the ring into pinned memory of dev (engine.Lender), followed
// by a copy of its first maxRecords records, so that every run of up to
// maxRecords records Lend hands out is contiguous even where the replay
// wraps. Calling it again re-pins (on another device, or for larger
// blocks); Close frees the pinned ring.
func (a *SimulatedAcquisition) PinTo(dev backend.Device, maxRecords int) error {
	if a.ring == nil {
		return fmt.Errorf("acquire: SimulatedAcquisition.PinTo before Prepare")
	}
	if dev == nil || maxRecords <= 0 {
		return fmt.Errorf("acquire: SimulatedAcquisition.PinTo: dev=%v maxRecords=%d, expected a device and maxRecords > 0", dev, maxRecords)
	}
	n := a.cfg.SamplesPerRecord
	wrap := min(maxRecords, a.records)
	buf, err := dev.AllocPinned((a.records + wrap) * n * 2)
	if err != nil {
		return fmt.Errorf("acquire: pinning the replay ring (%d MiB): %w", (a.records+wrap)*n*2>>20, err)
	}
	ring := unsafe.Slice((*uint16)(ptrOf(buf.Ptr())), (a.records+wrap)*n)
	copy(ring, a.ring[:a.records*n])
	copy(ring[a.records*n:], a.ring[:wrap*n])
	if a.pinned != nil {
		if err := a.pinned.Free(); err != nil {
			return errors.Join(err, buf.Free())
		}
	}
	a.ring, a.pinned, a.wrap = ring, buf, wrap
	return nil
}

// Lend returns the address of the next records spectra in the pinned ring
// (engine.Lender): no copy. The ring is never rewritten, so the memory
// stays valid for the life of the source.
func (a *SimulatedAcquisition) Lend(records int) (uintptr, int, error) {
	if a.pinned == nil {
		return 0, 0, fmt.Errorf("acquire: SimulatedAcquisition.Lend before PinTo")
	}
	if records <= 0 || records > a.wrap {
		return 0, 0, fmt.Errorf("acquire: Lend: records=%d, expected 1..%d (PinTo's maxRecords)", records, a.wrap)
	}
	want := records
	if a.limit > 0 {
		want = min(want, a.limit-a.sent)
		if want == 0 {
			return 0, 0, io.EOF
		}
	}
	if err := a.run.admit(want); err != nil {
		return 0, 0, err
	}
	src := a.pinned.Ptr() + uintptr(a.pos*a.cfg.SamplesPerRecord*2)
	a.pos = (a.pos + want) % a.records
	a.sent += want
	return src, want, nil
}

// Close frees the pinned ring. While an engine that was prepared with the
// source has not finished, it refuses with backend.ErrInUse (the engine
// uploads straight from the ring). Closing twice is a no-op; a closed
// source cannot be prepared by an engine again (backend.ErrClosed).
func (a *SimulatedAcquisition) Close() error {
	return a.claim.Close(func() error {
		if a.pinned == nil {
			a.ring = nil
			return nil
		}
		err := a.pinned.Free()
		a.pinned, a.ring, a.wrap = nil, nil, 0
		return err
	})
}

// Fill copies the next records spectra of the ring into dst.
func (a *SimulatedAcquisition) Fill(dst []uint16, records int) (int, error) {
	n := a.cfg.SamplesPerRecord
	if err := checkFill(dst, records, n); err != nil {
		return 0, err
	}
	want := records
	if a.limit > 0 {
		want = min(want, a.limit-a.sent)
		if want == 0 {
			return 0, io.EOF
		}
	}
	if err := a.run.admit(want); err != nil {
		return 0, err
	}
	for done := 0; done < want; {
		c := min(want-done, a.records-a.pos)
		copy(dst[done*n:(done+c)*n], a.ring[a.pos*n:(a.pos+c)*n])
		done += c
		a.pos = (a.pos + c) % a.records
	}
	a.sent += want
	return want, nil
}

// synth is one worker's scratch for synthesising B-scans.
type synth struct {
	a     *SimulatedAcquisition
	fr    []float64
	refl  []Reflector
	noise float64
}

func newSynth(a *SimulatedAcquisition) *synth {
	return &synth{a: a, fr: make([]float64, a.cfg.SamplesPerRecord), noise: a.cfg.NoiseLevel}
}

// bscan synthesises one B-scan into the ring. Its noise stream is seeded by
// (Seed, volume, bscan), so the ring is the same whatever the number of
// workers.
func (g *synth) bscan(volume, bscan int) {
	cfg := &g.a.cfg
	spec := g.a.spec
	n := cfg.SamplesPerRecord
	rng := rand.New(rand.NewPCG(cfg.Seed, uint64(volume)<<32|uint64(bscan)))
	base := (volume*cfg.BscansPerVolume + bscan) * cfg.AscansPerBscan
	for x := range cfg.AscansPerBscan {
		g.refl = g.a.phantom.reflectors(volume, bscan, x, g.refl[:0])
		clear(g.fr)
		dc := 1.0
		for _, r := range g.refl {
			// I = Iref*S(k)*(1 + R + 2*sqrt(R)*cos(2kz + theta(k))).
			dc += r.Reflectivity
			amp := 2 * math.Sqrt(r.Reflectivity)
			for i := range n {
				g.fr[i] += amp * fastCos(spec.kappa[i]*r.Depth+spec.theta[i])
			}
		}
		out := g.a.ring[(base+x)*n : (base+x+1)*n]
		for i := range n {
			v := cfg.DarkLevel + cfg.ReferenceLevel*spec.envelope[i]*(dc+g.fr[i])
			if g.noise > 0 {
				v += g.noise * math.Sqrt(max(v, 0)) * rng.NormFloat64()
			}
			out[i] = uint16(min(max(math.Round(v), 0), math.MaxUint16))
		}
	}
}

// ptrOf turns the address of memory that is not on the Go heap (pinned,
// owned by a backend) into a pointer. Through a pointer-to-pointer
// conversion, as vet's uintptr rule concerns Go-heap memory the collector
// could move or free. Not inlined: go1.26.8 miscompiled an inlined variant
// of this pattern (ssa.disjointTypes), see gosrc/cuda's tests.
//
//go:noinline
func ptrOf(addr uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&addr)) }
