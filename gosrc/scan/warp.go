package scan

import (
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// WarpKind says which of vortex's warps a Warp is.
type WarpKind uint8

// The warps of vortex.scan.warp.
const (
	// WarpNone is vortex's NoWarp: positions pass unchanged.
	WarpNone WarpKind = iota
	// WarpAngular is vortex's Angular: sample angle = galvo angle * Factor.
	WarpAngular
	// WarpTelecentric is vortex's Telecentric: sample position =
	// GalvoLensSpacing * tan(galvo angle * Scale).
	WarpTelecentric
)

// Warp maps galvo coordinates to sample coordinates (Forward) and back
// (Inverse); waypoints are generated in sample coordinates and warped
// inversely into galvo coordinates. One plain struct for all kinds, so that
// a config stays a value that copies and compares.
type Warp struct {
	// Kind picks the warp.
	Kind WarpKind
	// Factor is Angular's factor (vortex's default 2).
	Factor float64
	// GalvoLensSpacing is Telecentric's galvo_lens_spacing (default 100).
	GalvoLensSpacing float64
	// Scale is Telecentric's scale, galvo units to radians (default 2*pi/180).
	Scale float64
}

// NoWarp is vortex's warp.NoWarp().
func NoWarp() Warp { return Warp{Kind: WarpNone} }

// Angular is vortex's warp.Angular(factor).
func Angular(factor float64) Warp { return Warp{Kind: WarpAngular, Factor: factor} }

// DefaultAngular is vortex's warp.Angular() (factor 2).
func DefaultAngular() Warp { return Angular(2) }

// Telecentric is vortex's warp.Telecentric(galvo_lens_spacing, scale).
func Telecentric(galvoLensSpacing, scale float64) Warp {
	return Warp{Kind: WarpTelecentric, GalvoLensSpacing: galvoLensSpacing, Scale: scale}
}

// DefaultTelecentric is vortex's warp.Telecentric() (spacing 100, scale 2*pi/180).
func DefaultTelecentric() Warp { return Telecentric(100, 2*math.Pi/180) }

// String is vortex's repr.
func (w Warp) String() string {
	switch w.Kind {
	case WarpNone:
		return "NoWarp"
	case WarpAngular:
		return fmt.Sprintf("Angular(factor=%g)", w.Factor)
	case WarpTelecentric:
		return fmt.Sprintf("Telecentric(galvo_lens_spacing=%g, scale=%g)", w.GalvoLensSpacing, w.Scale)
	}
	return fmt.Sprintf("Warp(kind=%d)", w.Kind)
}

// Validate checks the kind and that the warp is invertible; field names
// the config field holding it (e.g. "RasterScanConfig.warp").
func (w Warp) Validate(field string) error {
	switch w.Kind {
	case WarpNone:
		return nil
	case WarpAngular:
		if w.Factor == 0 || !finite(w.Factor) {
			return backend.Invalidf("%s.factor: %v, expected a finite non-zero number", field, w.Factor)
		}
		return nil
	case WarpTelecentric:
		if !(w.GalvoLensSpacing > 0) || !finite(w.GalvoLensSpacing) {
			return backend.Invalidf("%s.galvo_lens_spacing: %v, expected a finite number > 0", field, w.GalvoLensSpacing)
		}
		if w.Scale == 0 || !finite(w.Scale) {
			return backend.Invalidf("%s.scale: %v, expected a finite non-zero number", field, w.Scale)
		}
		return nil
	}
	return backend.Invalidf("%s: unknown warp kind %d, expected NoWarp, Angular or Telecentric", field, w.Kind)
}

// Forward maps galvo coordinates in to sample coordinates in out
// (elementwise; len(out) >= len(in); out may be in).
func (w Warp) Forward(in, out []float64) {
	out = out[:len(in)]
	switch w.Kind {
	case WarpAngular:
		for i, v := range in {
			out[i] = v * w.Factor
		}
	case WarpTelecentric:
		for i, v := range in {
			out[i] = w.GalvoLensSpacing * math.Tan(v*w.Scale)
		}
	default:
		copy(out, in)
	}
}

// Inverse maps sample coordinates in to galvo coordinates in out
// (elementwise; len(out) >= len(in); out may be in).
func (w Warp) Inverse(in, out []float64) {
	out = out[:len(in)]
	switch w.Kind {
	case WarpAngular:
		for i, v := range in {
			out[i] = v / w.Factor
		}
	case WarpTelecentric:
		for i, v := range in {
			out[i] = math.Atan2(v, w.GalvoLensSpacing) / w.Scale
		}
	default:
		copy(out, in)
	}
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }
