package acquire

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/teledyne"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// The TeledyneAcquisition against the virtual ADQ (make virtual): a fast
// periodic trigger, noiseless spectra and a 32 x 32 phantom.
func teledyneRequire(t *testing.T) {
	t.Helper()
	virtualtest.Require(t, alazarEnv)
	if _, ok := os.LookupEnv(teledyne.EnvLibrary); !ok {
		t.Setenv(teledyne.EnvLibrary, virtualtest.Library(t, "libadq.so"))
	}
}

func teledyneConfig(samples, records int) TeledyneConfig {
	c := DefaultTeledyneConfig()
	c.SamplesPerRecord, c.RecordsPerBlock = samples, records
	c.Inputs = []int{0}
	c.TriggerSource, c.PeriodicTriggerFrequency = teledyne.TriggerPeriodic, 200e3
	return c
}

func TestTeledyneConfigIsValidatedAsVortexDoes(t *testing.T) {
	teledyneRequire(t)
	cases := []struct {
		name string
		edit func(c *TeledyneConfig)
		msg  string
	}{
		{"no inputs", func(c *TeledyneConfig) { c.Inputs = nil }, "no inputs are configured"},
		{"one channel twice", func(c *TeledyneConfig) { c.Inputs = []int{0, 0} },
			"cannot configure the same channel as two different inputs: inputs[1] = Channel #0 and inputs[0] = Channel #0"},
		{"sample skip", func(c *TeledyneConfig) { c.SampleSkipFactor = 0 }, "sample skip factor must be positive"},
		{"trigger skip", func(c *TeledyneConfig) { c.TriggerSkipFactor = 0 }, "trigger skip factor must be positive"},
		{"unaligned", func(c *TeledyneConfig) { c.SamplesPerRecord = 250 }, "record length of 250 is not a multiple of 8 (FWOCT requirement)"},
		{"fft capacity", func(c *TeledyneConfig) {
			c.EnableFWOCT, c.FFTMode, c.SamplesPerRecord = true, teledyne.FFTMagnitude, 16384
		}, "required FFT size of 16384 exceeds capacity of 8192"},
		{"filter length", func(c *TeledyneConfig) { c.EnableFWOCT, c.SpectralFilter = true, make([]complex64, 3) },
			"spectral filter and record length mismatch: 3 vs 256"},
		{"background length", func(c *TeledyneConfig) { c.EnableFWOCT, c.Background = true, make([]int16, 3) },
			"background and record length mismatch: 3 vs 256"},
		{"another board", func(c *TeledyneConfig) { c.Device = 2 }, "teledyne: device index is out of range: 2 >= 1"},
		{"periodic at 0 Hz", func(c *TeledyneConfig) { c.PeriodicTriggerFrequency = 0 }, "teledyne: ADQ SetParameters() failed: -1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := teledyneConfig(256, 16)
			c.edit(&cfg)
			_, err := NewTeledyneAcquisition(cfg)
			require.EqualError(t, err, c.msg)
		})
	}
	cfg := teledyneConfig(256, 16)
	cfg.RecordsPerBlock = 0
	_, err := NewTeledyneAcquisition(cfg)
	require.ErrorIs(t, err, backend.ErrInvalid)
}

// TestTeledyneFillDeliversThePhantom: the blocks equal SimulatedAcquisition's
// records, over two sessions (stop leaves the board ready).
func TestTeledyneFillDeliversThePhantom(t *testing.T) {
	teledyneRequire(t)
	const samples, records = 256, 16
	a, err := NewTeledyneAcquisition(teledyneConfig(samples, records))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, a.Close()) })
	require.Equal(t, samples, a.SamplesPerRecord())
	require.NoError(t, a.Prepare())

	simCfg := DefaultSimulatedConfig()
	simCfg.SamplesPerRecord, simCfg.AscansPerBscan, simCfg.BscansPerVolume, simCfg.Volumes, simCfg.NoiseLevel = samples, 32, 32, 1, 0
	sim, err := NewSimulatedAcquisition(simCfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, sim.Close()) })
	require.NoError(t, sim.Prepare())

	got := make([]uint16, records*samples)
	want := make([]uint16, records*samples)
	for session := range 2 {
		require.NoError(t, sim.Start())
		require.NoError(t, a.Start())
		_, err := a.Fill(got, records-1)
		require.ErrorContains(t, err, "block is not exactly equal to the configured size: 15 != 16")
		for k := range 40 { // more blocks than the board's 16 buffers
			n, err := a.Fill(got, records)
			require.NoError(t, err, "session %d block %d", session, k)
			require.Equal(t, records, n)
			_, err = sim.Fill(want, records)
			require.NoError(t, err)
			require.LessOrEqual(t, virtualtest.MaxDiff(got, want), 1, "session %d block %d", session, k)
		}
		require.NoError(t, a.Stop())
		_, err = a.Fill(got, records)
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, sim.Stop())
		sim.pos, sim.sent = 0, 0
	}
}

// TestTeledyneOverflowStops: a host that falls behind sees vortex's
// overflow error once the blocks completed before are read, and
// stop_on_error stops the board.
func TestTeledyneOverflowStops(t *testing.T) {
	teledyneRequire(t)
	cfg := teledyneConfig(256, 16)
	cfg.PeriodicTriggerFrequency = 1e6 // the 64 MiB FIFO holds 0.13 s
	cfg.AcquireTimeout = 200_000_000
	a, err := NewTeledyneAcquisition(cfg)
	require.NoError(t, err)
	defer a.Close()
	require.NoError(t, a.Start())
	buf := make([]uint16, 16*256)
	_, err = a.Fill(buf, 16)
	require.NoError(t, err)
	time.Sleep(400 * time.Millisecond)
	for range 32 {
		if _, err = a.Fill(buf, 16); err != nil {
			break
		}
	}
	require.ErrorIs(t, err, teledyne.ErrOverflow)
	require.ErrorContains(t, err, "hardware buffer overflow at buffer")
	require.False(t, a.board.Running())
	_, err = a.Fill(buf, 16)
	require.ErrorIs(t, err, io.EOF, "stopped on the error")
}
