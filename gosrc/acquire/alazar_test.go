package acquire

import (
	"io"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// The AlazarAcquisition against the virtual digitizer (make virtual):
// a fast clock, noiseless spectra and a 32 x 32 phantom.
var alazarEnv = map[string]string{"VGV_ALINE_RATE_HZ": "200000", "VGV_NOISE_LEVEL": "0", "VGV_PHANTOM": "32,32,-1,1,-1,1"}

func alazarConfig(samples, records int) AlazarConfig {
	c := DefaultAlazarConfig()
	c.SamplesPerRecord, c.RecordsPerBlock = samples, records
	c.Inputs = []AlazarInput{{Channel: alazar.ChannelB, RangeMillivolts: 400, ImpedanceOhms: 50, Coupling: alazar.CouplingDC}}
	c.Options = []AlazarOption{{Kind: AlazarAuxIOTriggerOut}}
	return c
}

func TestAlazarConfigIsValidatedAsVortexDoes(t *testing.T) {
	virtualtest.Require(t, alazarEnv)
	b := alazar.ChannelB
	in := AlazarInput{Channel: b, RangeMillivolts: 400, ImpedanceOhms: 50, Coupling: alazar.CouplingDC}
	cases := []struct {
		name string
		edit func(c *AlazarConfig)
		msg  string
	}{
		{"no inputs", func(c *AlazarConfig) { c.Inputs = nil }, "no inputs are configured"},
		{"one channel twice", func(c *AlazarConfig) { c.Inputs = []AlazarInput{in, in} },
			"cannot configure the same channel as two different inputs: input 1 = B and input 0 = B"},
		{"unaligned record", func(c *AlazarConfig) { c.SamplesPerRecord = 1000 }, "samples per record must be evenly divisible by 128: 1000"},
		{"short record", func(c *AlazarConfig) { c.SamplesPerRecord = 128 }, "samples per record must equal or exceed 256: 128"},
		{"resampling", func(c *AlazarConfig) { c.Resampling = []int{1, 2, 3} },
			"samples per record does not match number of resampled samples: 256 vs 3"},
		{"dual-edge sampling", func(c *AlazarConfig) {
			c.Clock = AlazarClock{Kind: AlazarExternalClock, Coupling: alazar.CouplingAC, Dual: true}
		},
			"dual edge sampling is requested but is not supported by the ATS9360"},
		{"a rate the board has not", func(c *AlazarConfig) { c.Clock.SamplesPerSecond = 250_000_000 },
			"failed to configure internal clock at 250000000 samples/s and decimation 0: (574) ApiInvalidData"},
		{"another board", func(c *AlazarConfig) { c.BoardIndex = 3 }, "unable to open Alazar board 1-3: board not found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := alazarConfig(256, 16)
			c.edit(&cfg)
			_, err := NewAlazarAcquisition(cfg)
			require.EqualError(t, err, c.msg)
		})
	}
	cfg := alazarConfig(256, 16)
	cfg.RecordsPerBlock = 0
	_, err := NewAlazarAcquisition(cfg)
	require.ErrorIs(t, err, backend.ErrInvalid)
}

// TestAlazarPostFillDeliversThePhantom drives the source as the engine
// does (Poster: post ahead, fill the oldest) and compares its blocks with
// SimulatedAcquisition's records.
func TestAlazarPostFillDeliversThePhantom(t *testing.T) {
	virtualtest.Require(t, alazarEnv)
	const samples, records = 256, 16
	a, err := NewAlazarAcquisition(alazarConfig(samples, records))
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

	const blocks = 3
	mem, err := cpu.Default().AllocPinned(blocks * records * samples * 2)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, mem.Free()) })
	all := unsafe.Slice((*uint16)(ptrOf(mem.Ptr())), blocks*records*samples)
	block := func(i int) []uint16 { return all[i*records*samples : (i+1)*records*samples] }

	for session := range 2 { // stop leaves the board ready for the next session
		require.NoError(t, sim.Start())
		require.NoError(t, a.Start())
		require.ErrorContains(t, a.Post(all[:samples]), "block is not exactly equal to the configured size: 1 != 16")
		for i := range blocks {
			require.NoError(t, a.Post(block(i)))
		}
		_, err := a.Fill(block(1), records)
		require.ErrorContains(t, err, "is not the oldest posted buffer")
		want := make([]uint16, records*samples)
		for k := range 2 * blocks {
			i := k % blocks
			n, err := a.Fill(block(i), records)
			require.NoError(t, err, "session %d block %d", session, k)
			require.Equal(t, records, n)
			_, err = sim.Fill(want, records)
			require.NoError(t, err)
			require.LessOrEqual(t, virtualtest.MaxDiff(block(i), want), 1, "session %d block %d", session, k)
			require.NoError(t, a.Post(block(i)))
		}
		require.NoError(t, a.Stop())
		_, err = a.Fill(block(0), records)
		require.ErrorIs(t, err, io.EOF)
		require.NoError(t, sim.Stop())
		sim.pos, sim.sent = 0, 0 // the board's A-lines restart at 0 too
	}
}

// Two acquisitions of one board: a capture is refused while the other
// captures, and each applies its configuration again when the other's is
// the board's (the SDK shares one handle and one configuration).
func TestAlazarBoardSharedByTwoAcquisitions(t *testing.T) {
	virtualtest.Require(t, alazarEnv)
	first, err := NewAlazarAcquisition(alazarConfig(256, 16))
	require.NoError(t, err)
	defer first.Close()
	applied := map[*AlazarAcquisition]int{}
	count := func(a *AlazarAcquisition) {
		apply := a.apply
		a.apply = func() error { applied[a]++; return apply() }
	}
	count(first)

	require.NoError(t, first.Start())
	_, err = NewAlazarAcquisition(alazarConfig(512, 16))
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorContains(t, err, "board 1-1 is capturing for another AlazarAcquisition; stop that one first")
	require.NoError(t, first.Stop())

	second, err := NewAlazarAcquisition(alazarConfig(512, 16))
	require.NoError(t, err)
	defer second.Close()
	count(second)
	require.NoError(t, second.Start())
	err = first.Start()
	require.ErrorIs(t, err, backend.ErrInUse, "a capture under another's DMA")
	require.NoError(t, second.Stop())
	require.Equal(t, 0, applied[second], "second's configuration was the board's")

	require.NoError(t, first.Start())
	require.Equal(t, 1, applied[first], "first's configuration applied again after second's")
	require.NoError(t, first.Stop())
	require.NoError(t, first.Start())
	require.Equal(t, 1, applied[first], "and only then")
	require.NoError(t, first.Stop())

	// Closing drops the board's record of it: nothing keeps a closed source.
	require.NoError(t, first.Close())
	require.NoError(t, second.Close())
	boardUse.Lock()
	defer boardUse.Unlock()
	require.Empty(t, boardUse.by)
}
