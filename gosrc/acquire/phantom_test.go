package acquire

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The phantom is what users look at first (the demo's en-face image): these
// tests pin the features that make it read as a retina.

func testPhantom(t *testing.T) *phantom {
	cfg := DefaultSimulatedConfig()
	cfg.AscansPerBscan, cfg.BscansPerVolume = 128, 128
	require.NoError(t, cfg.Validate())
	return newPhantom(&cfg)
}

// rpe is the reflectivity of the RPE (the brightest band, below the vessels).
func rpe(p *phantom, bscan, ascan int) float64 {
	return p.reflectors(0, bscan, ascan, nil)[5].Reflectivity
}

func TestPhantomVesselsShadowTheLayersBelow(t *testing.T) {
	p := testPhantom(t)
	require.NotEmpty(t, p.vessels)
	require.LessOrEqual(t, len(p.vessels), maxVesselSegs)
	var inside, outside, nIn, nOut float64
	for b := range p.bscans {
		for a := range p.ascans {
			v := p.vesselAt((float64(a)+0.5)/float64(p.ascans), (float64(b)+0.5)/float64(p.bscans))
			switch {
			case v > 0.9:
				inside += rpe(p, b, a)
				nIn++
			case v < 0.01:
				outside += rpe(p, b, a)
				nOut++
			}
		}
	}
	require.Positive(t, nIn, "some A-scans cross a vessel's axis")
	require.Positive(t, nOut)
	ratio := (inside / nIn) / (outside / nOut)
	assert.InDelta(t, 1-vesselShadow, ratio, 0.05, "the RPE under a vessel keeps 1-vesselShadow of its light")
}

func TestPhantomFoveaHasNoInnerLayers(t *testing.T) {
	p := testPhantom(t)
	centre := p.reflectors(0, 64, 64, nil)
	edge := p.reflectors(0, 64, 4, nil)
	// The ILM (pit 1.0) fades to a tenth at the centre; the RPE (pit 0) does not fade.
	ilmRatio := centre[0].Reflectivity / p.speckle(64, 64, 0) / (edge[0].Reflectivity / p.speckle(64, 4, 0))
	assert.Less(t, ilmRatio, 0.15)
	assert.Greater(t, centre[0].Depth, edge[0].Depth-p.half*0.16*0.25, "the pit pushes the ILM down at the centre")
}

func TestPhantomSpeckleAndJitter(t *testing.T) {
	p := testPhantom(t)
	var sum float64
	n := 0
	for b := range 64 {
		for a := range 64 {
			s := p.speckle(b, a, 3)
			require.GreaterOrEqual(t, s, speckleFloor)
			sum += s
			j := p.jitter(b, a, 3)
			require.True(t, j >= -1 && j < 1, "jitter %v outside [-1, 1)", j)
			n++
		}
	}
	assert.InDelta(t, 1, sum/float64(n), 0.05, "speckle keeps each layer's mean reflectivity")
	assert.Equal(t, p.speckle(7, 9, 2), p.speckle(7, 9, 2), "still tissue: the same in every volume")
	assert.NotEqual(t, p.speckle(7, 9, 2), p.speckle(7, 10, 2))
	assert.False(t, math.IsNaN(p.jitter(0, 0, 0)))
}
