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

// The layers mimic a retina: an inner limiting membrane, weaker inner
// layers that thin towards a foveal pit, and the brightest bands, photoreceptor and
// RPE bands. Values are loosely modelled on published OCT B-scans.
var retina = []layer{
	{0.30, 1.0, 1e-3},   // ILM
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

// vessel is one straight piece of a retinal vessel, in lateral coordinates
// (0..1 across the scan); radius is its half-width.
type vessel struct {
	x0, y0, x1, y1, radius float64
	// bounding box grown by 3 radii: most A-scans skip the vessel at once
	minX, minY, maxX, maxY float64
}

// Why vessels, a foveal dip and speckle: an en-face projection of smooth
// layers alone shows only the bands where layers cross depth bins (moire),
// nothing a person recognises. Real en-face OCT of a retina shows the
// vessel tree (vessels shadow the layers beneath them), a dark foveal pit
// with no inner layers, and grainy speckle that is stable for still tissue.

const (
	vesselDepth   = 0.33 // vessels sit in the nerve fibre layer
	vesselShadow  = 0.85 // fraction of the light a vessel takes from layers below it
	foveaRadius   = 0.07 // where the inner layers fade out
	speckleFloor  = 0.6  // speckle intensity = floor + (1-floor) * Exp(1), mean 1
	maxVesselSegs = 512  // a bound on the tree's pieces, whatever the seed
)

// phantom is the 3D sample: smooth curved layers, a vessel tree, point
// scatterers and static speckle, moved axially a little from volume to
// volume (breathing, pulse) so a replayed ring looks alive.
type phantom struct {
	half       float64 // unaliased depth range in bins
	ascans     int
	bscans     int
	volumes    int
	seed       uint64
	scatterers []scatterer
	vessels    []vessel
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
	p.seed = cfg.Seed
	p.growVessels(rng)
	return p
}

// growVessels draws a retina's vessel tree: four arcades leave the optic
// disc (left of the field), arch above and below the fovea and meet again
// towards the right, branching as they go; branches run straight-ish and
// thin at each branch.
func (p *phantom) growVessels(rng *rand.Rand) {
	type tip struct {
		x, y, angle, radius float64
		side, reach         float64 // arcades: above (-1) or below (+1) and how far they arch; 0 for branches
	}
	var tips []tip
	for _, a := range [][2]float64{{-1, 0.36}, {-1, 0.22}, {1, 0.22}, {1, 0.36}} {
		tips = append(tips, tip{x: -0.12, y: 0.5 + 0.03*a[0], angle: a[0] * 0.9, radius: 0.011 + 0.003*rng.Float64(), side: a[0], reach: a[1]})
	}
	const step = 0.02
	// Breadth first, so that every arcade is drawn before the budget of
	// pieces goes to the branches of one of them.
	for len(tips) > 0 && len(p.vessels) < maxVesselSegs {
		t := tips[0]
		tips = tips[1:]
		for range 90 {
			if t.x > 1.15 || t.x < -0.2 || t.y < -0.15 || t.y > 1.15 || t.radius < 0.003 || len(p.vessels) >= maxVesselSegs {
				break
			}
			wander := 0.15 * (rng.Float64() - 0.5)
			if t.side != 0 {
				// Steer onto the arch y(x) = 0.5 + side*(0.04 + reach*sin(pi*u)).
				u := math.Max(0, math.Min(1, (t.x+0.12)/1.3))
				target := 0.5 + t.side*(0.04+t.reach*math.Sin(math.Pi*u))
				slope := t.side * t.reach * math.Pi / 1.3 * math.Cos(math.Pi*u)
				want := math.Atan(slope + 3*(target-t.y))
				t.angle += 0.3*(want-t.angle) + wander
			} else {
				t.angle += wander
				// Branches stop at the vessel-free zone around the fovea.
				if fx, fy := t.x-0.5, t.y-0.5; fx*fx+fy*fy < 0.12*0.12 {
					break
				}
			}
			nx, ny := t.x+step*math.Cos(t.angle), t.y+step*math.Sin(t.angle)
			p.vessels = append(p.vessels, newVessel(t.x, t.y, nx, ny, t.radius))
			t.x, t.y = nx, ny
			if rng.Float64() < 0.14 {
				turn := math.Copysign(0.5+0.5*rng.Float64(), rng.Float64()-0.5)
				tips = append(tips, tip{x: t.x, y: t.y, angle: t.angle + turn, radius: t.radius * 0.7})
				t.radius *= 0.9
			}
		}
	}
}

func newVessel(x0, y0, x1, y1, r float64) vessel {
	m := 3 * r
	return vessel{x0, y0, x1, y1, r,
		math.Min(x0, x1) - m, math.Min(y0, y1) - m, math.Max(x0, x1) + m, math.Max(y0, y1) + m}
}

// vesselAt is how much vessel the beam at (x, y) sees: 1 at a vessel's axis,
// falling off as a Gaussian of its radius (at least one A-scan spacing, so
// that thin vessels stay visible on coarse scans).
func (p *phantom) vesselAt(x, y float64) float64 {
	minR := 1 / float64(max(p.ascans, p.bscans))
	v := 0.0
	for i := range p.vessels {
		s := &p.vessels[i]
		if x < s.minX || x > s.maxX || y < s.minY || y > s.maxY {
			continue
		}
		// distance from (x, y) to the segment
		dx, dy := s.x1-s.x0, s.y1-s.y0
		t := ((x-s.x0)*dx + (y-s.y0)*dy) / (dx*dx + dy*dy)
		t = math.Max(0, math.Min(1, t))
		ex, ey := x-(s.x0+t*dx), y-(s.y0+t*dy)
		r := math.Max(s.radius, minR)
		v = math.Max(v, math.Exp(-(ex*ex+ey*ey)/(2*r*r)))
	}
	return v
}

// speckle is the intensity factor of layer k at one A-scan: exponentially
// distributed (fully developed speckle) above a floor, mean 1, the same in
// every volume (still tissue), from a hash so no state is kept.
func (p *phantom) speckle(bscan, ascan, k int) float64 {
	h := p.seed ^ uint64(bscan)*0x9e3779b97f4a7c15 ^ uint64(ascan)*0xc2b2ae3d27d4eb4f ^ uint64(k)*0x165667b19e3779f9
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	u := (float64(h>>11) + 0.5) / (1 << 53)
	return speckleFloor + (1-speckleFloor)*-math.Log(u)
}

// jitter is a fixed random depth offset in [-1, 1) bins for layer k at one
// A-scan. Why: smooth planes make coherent bands in an en-face projection,
// both from the window's scalloping (a plane's peak height depends on where
// it falls between two bins, up to ~1.4 dB with a Hann window) and from
// background subtraction, which removes most of a layer that stays at one
// depth over the averaging window. Real tissue scatters throughout a
// layer's thickness, so the offset varies from A-scan to A-scan and the
// bands become speckle.
func (p *phantom) jitter(bscan, ascan, k int) float64 {
	s := p.speckle(bscan, ascan, k+len(retina)+1) // another stream of the same hash
	return 2*math.Mod(s*7.31, 1) - 1
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
	// The foveal pit pushes inner layers down by up to 6% of the range, and
	// they fade out inside it.
	pit := 0.06 * math.Exp(-r2/(2*0.08*0.08))
	fovea := math.Exp(-r2 / (2 * foveaRadius * foveaRadius))
	v := p.vesselAt(x, y)
	for k, l := range retina {
		refl := l.reflectivity * p.speckle(bscan, ascan, k)
		refl *= 1 - 0.9*l.pit*fovea
		if l.depth > vesselDepth {
			refl *= 1 - vesselShadow*v
		}
		buf = append(buf, Reflector{
			Depth:        p.half*(l.depth+shape+l.pit*pit) + p.jitter(bscan, ascan, k),
			Reflectivity: refl,
		})
	}
	if v > 0.01 {
		buf = append(buf, Reflector{
			Depth:        p.half * (vesselDepth + shape + pit),
			Reflectivity: 6e-4 * v,
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
