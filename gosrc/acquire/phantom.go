package acquire

import (
	"math"
	"math/rand/v2"
)

// Reflector is one interface of the simulated sample seen by one A-scan.
type Reflector struct {
	// Depth is the position in output bins: after resampling with
	// ResamplingPositions and an inverse FFT of SamplesPerRecord points,
	// the reflector's peak sits at this (fractional) bin.
	Depth float64
	// Reflectivity is the power reflectivity relative to the reference arm.
	Reflectivity float64
}

// layer is a retina-like interface. Depths are fractions of the unaliased
// depth range (SamplesPerRecord/2 bins).
type layer struct {
	depth        float64 // at the fovea-free centre
	pit          float64 // how much of the foveal pit this layer follows
	reflectivity float64
}

// The layers mimic a retina: a bright inner limiting membrane, weaker inner
// layers that thin towards a foveal pit, and the bright photoreceptor and
// RPE bands. Values are loosely modelled on published OCT B-scans.
var retina = []layer{
	{0.30, 1.0, 3e-3},   // ILM
	{0.35, 0.8, 5e-4},   // nerve fibre layer boundary
	{0.43, 0.5, 3e-4},   // inner plexiform layer
	{0.51, 0.2, 4e-4},   // outer plexiform layer
	{0.61, 0.0, 2e-3},   // IS/OS junction
	{0.67, 0.0, 4e-3},   // RPE
	{0.76, 0.0, 2.5e-4}, // choroid
}

// scatterer is a point-like inclusion (a vessel cross-section, a floater).
type scatterer struct {
	x, y, depth, reflectivity float64
}

// phantom is the 3D sample: smooth curved layers plus point scatterers,
// moved axially a little from volume to volume (breathing, pulse) so a
// replayed ring looks alive.
type phantom struct {
	half       float64 // unaliased depth range in bins
	ascans     int
	bscans     int
	volumes    int
	scatterers []scatterer
}

func newPhantom(cfg *SimulatedConfig) *phantom {
	p := &phantom{
		half:    float64(cfg.SamplesPerRecord) / 2,
		ascans:  cfg.AscansPerBscan,
		bscans:  cfg.BscansPerVolume,
		volumes: cfg.Volumes,
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x9e3779b97f4a7c15))
	for range 8 {
		p.scatterers = append(p.scatterers, scatterer{
			x:            0.1 + 0.8*rng.Float64(),
			y:            0.1 + 0.8*rng.Float64(),
			depth:        0.25 + 0.55*rng.Float64(),
			reflectivity: 1e-3 + 4e-3*rng.Float64(),
		})
	}
	return p
}

// reflectors appends the interfaces seen by A-scan (volume, bscan, ascan)
// to buf and returns it.
func (p *phantom) reflectors(volume, bscan, ascan int, buf []Reflector) []Reflector {
	x := (float64(ascan) + 0.5) / float64(p.ascans)
	y := (float64(bscan) + 0.5) / float64(p.bscans)
	cx, cy := x-0.5, y-0.5
	r2 := cx*cx + cy*cy
	// Shared shape: the eye's curvature (deeper at the edges), a slow
	// undulation, and the per-volume axial motion.
	shape := 0.16*r2 + 0.012*math.Sin(2*math.Pi*(1.5*x+0.7*y))
	if p.volumes > 1 {
		shape += 0.02 * math.Sin(2*math.Pi*float64(volume)/float64(p.volumes))
	}
	// The foveal pit pushes inner layers down by up to 6% of the range.
	pit := 0.06 * math.Exp(-r2/(2*0.08*0.08))
	for _, l := range retina {
		buf = append(buf, Reflector{
			Depth:        p.half * (l.depth + shape + l.pit*pit),
			Reflectivity: l.reflectivity,
		})
	}
	// Scatterers fall off laterally as a Gaussian beam of ~1.2 A-scan
	// spacings; beyond 3 sigma they are left out.
	sx, sy := 1.2/float64(p.ascans), 1.2/float64(p.bscans)
	for _, s := range p.scatterers {
		dx, dy := (x-s.x)/sx, (y-s.y)/sy
		q := dx*dx + dy*dy
		if q > 9 {
			continue
		}
		buf = append(buf, Reflector{
			Depth:        p.half * (s.depth + shape),
			Reflectivity: s.reflectivity * math.Exp(-q/2),
		})
	}
	return buf
}
