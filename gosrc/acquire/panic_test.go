package acquire

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSimulatedPrepareSynthPanic: a panic in one of Prepare's synthesis
// goroutines is Prepare's error (with the panic and its stack), not the
// end of the process; the half-made ring is dropped, so the next Prepare
// synthesises it whole.
func TestSimulatedPrepareSynthPanic(t *testing.T) {
	cfg := DefaultSimulatedConfig()
	cfg.SamplesPerRecord, cfg.AscansPerBscan, cfg.BscansPerVolume, cfg.Volumes = 16, 4, 8, 1
	a, err := NewSimulatedAcquisition(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	spec := a.spec
	a.spec = nil // every synthesis goroutine faults on it
	err = a.Prepare()
	require.ErrorContains(t, err, "acquire: SimulatedAcquisition.Prepare: synthesis: internal error (Go panic: runtime error: invalid memory address or nil pointer dereference)")
	require.ErrorContains(t, err, "goroutine ", "the stack is in the error")
	require.Nil(t, a.ring, "the half-made ring is dropped")
	a.spec = spec
	require.NoError(t, a.Prepare())
	require.Len(t, a.ring, 16*4*8)
}
