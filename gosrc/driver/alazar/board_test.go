package alazar_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
	"github.com/vortexgo/vortexgo/gosrc/internal/virtualtest"
)

// The driver's tests run against the virtual digitizer
// (instruments/virtual/atsapi.c), built here with `make virtual`.
// Cases that need the library configured differently when it loads (a
// fault, a small FIFO, no library at all) re-run this test binary in a
// child process with the environment they need.

// env is the model's configuration for these tests: a fast A-line clock,
// noiseless spectra, a small phantom (quick to synthesise).
var env = map[string]string{"VGV_ALINE_RATE_HZ": "200000", "VGV_NOISE_LEVEL": "0", "VGV_PHANTOM": "32,32,-1,1,-1,1"}

func open(t *testing.T) *alazar.Board {
	t.Helper()
	virtualtest.Require(t, env)
	b, err := alazar.Open(1, 1)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, b.Close()) })
	return b
}

// pinned is n bytes outside the Go heap, as the engine's pinned blocks are.
func pinned(t *testing.T, n int) []byte {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Munmap(mem) })
	return mem
}

func addr(b []byte) uintptr { return virtualtest.Addr(b) }

func configure(t *testing.T, b *alazar.Board, samples, records uint32) {
	t.Helper()
	require.NoError(t, b.ConfigureClockInternal(800_000_000, 0))
	require.NoError(t, b.ConfigureSingleTriggerExternal(2500, 0.09, 80, alazar.TriggerSlopePositive, alazar.CouplingDC))
	require.NoError(t, b.ConfigureInput(alazar.ChannelB, alazar.CouplingDC, 400, 50))
	require.NoError(t, b.ConfigureAuxIOTriggerOut())
	require.NoError(t, b.ConfigureCapture(alazar.ChannelB, samples, records, alazar.InfiniteAcquisition, 0))
}

func TestInfoOfTheVirtualBoard(t *testing.T) {
	b := open(t)
	in := b.Info()
	require.Equal(t, "ATS9360", in.Type.Model)
	require.Equal(t, uint32(25), in.Type.ID)
	require.Equal(t, []alazar.Channel{alazar.ChannelA, alazar.ChannelB}, in.SupportedChannels)
	require.Equal(t, uint32(128), in.SampleAlignmentDivisor)
	require.Equal(t, uint32(256), in.MinSamplesPerRecord)
	require.Equal(t, uint8(12), in.BitsPerSample)
	require.Equal(t, 1_800_000_000, in.MaxSamplingRate())
	require.Equal(t, uint32(2816), in.SmallestAlignedSamplesPerRecord(2752))
	require.Equal(t, uint32(2688), in.NearestAlignedSamplesPerRecord(2700))
	require.Equal(t, 50_000_000, in.Features.ADCCalibrationSamplingRate)
	require.Equal(t, 5.0, in.PCIe.SpeedGbps)
	boards, err := alazar.Enumerate()
	require.NoError(t, err)
	require.Len(t, boards, 1)
	_, err = alazar.Open(1, 2)
	require.EqualError(t, err, "unable to open Alazar board 1-2: board not found")
}

func TestSettingsAreValidatedWithTheSDKsCodes(t *testing.T) {
	b := open(t)
	cases := []struct {
		name string
		call func() error
		code alazar.ReturnCode // 0: a lookup error before the SDK
		msg  string
	}{
		{"internal clock 800 MS/s", func() error { return b.ConfigureClockInternal(800_000_000, 0) }, alazar.ApiSuccess, ""},
		{"a rate the SDK has not", func() error { return b.ConfigureClockInternal(123, 0) }, 0,
			`"123" is not a supported value for sampling rate`},
		{"a rate this board has not", func() error { return b.ConfigureClockInternal(25_000_000, 0) }, alazar.ApiInvalidData,
			"failed to configure internal clock at 25000000 samples/s and decimation 0: (574) ApiInvalidData"},
		{"external clock", func() error {
			return b.ConfigureClockExternal(0.5, alazar.CouplingAC, alazar.ClockEdgeRising, 0)
		}, alazar.ApiSuccess, ""},
		{"input B", func() error { return b.ConfigureInput(alazar.ChannelB, alazar.CouplingDC, 400, 50) }, alazar.ApiSuccess, ""},
		{"input C on a 2-channel board", func() error { return b.ConfigureInput(alazar.ChannelC, alazar.CouplingDC, 400, 50) },
			alazar.ApiNotSupportThisChannel, "failed to configure channel C with coupling DC, range 400, and impedance 50: (561) ApiNotSupportThisChannel"},
		{"a range this board has not", func() error { return b.ConfigureInput(alazar.ChannelA, alazar.CouplingDC, 1000, 50) },
			alazar.ApiInvalidData, ""},
		{"an impedance the SDK has not", func() error { return b.ConfigureInput(alazar.ChannelA, alazar.CouplingDC, 400, 51) },
			0, `"51" is not a supported value for impedance (Ohms)`},
		{"trigger", func() error {
			return b.ConfigureSingleTriggerExternal(2500, 0.09, 80, alazar.TriggerSlopePositive, alazar.CouplingDC)
		}, alazar.ApiSuccess, ""},
		{"an unaligned trigger delay", func() error {
			return b.ConfigureSingleTriggerExternal(2500, 0.09, 81, alazar.TriggerSlopePositive, alazar.CouplingDC)
		}, alazar.ApiInvalidData, "failed set trigger delay to 81 samples (check trigger delay alignment): (574) ApiInvalidData"},
		{"dual trigger", func() error {
			return b.ConfigureDualTriggerExternal(0, 0.1, 0.1, 0, alazar.TriggerSlopeNegative, alazar.CouplingDC)
		}, alazar.ApiSuccess, ""},
		{"pacer divider 1", func() error { return b.ConfigureAuxIOPacerOut(1) }, alazar.ApiInvalidData, ""},
		{"dual-edge sampling on an ATS9360", func() error { return b.SetDualEdgeSampling(1, true) }, alazar.ApiUnsupportedFunction, ""},
		{"an unaligned record", func() error {
			return b.ConfigureCapture(alazar.ChannelB, 300, 10, alazar.InfiniteAcquisition, 0)
		}, alazar.ApiInvalidData, "failed to set record size to zero pre-trigger samples and 300 post-trigger samples: (574) ApiInvalidData"},
		{"no records per buffer", func() error {
			return b.ConfigureCapture(alazar.ChannelB, 256, 0, alazar.InfiniteAcquisition, 0)
		}, 584, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			switch c.code {
			case alazar.ApiSuccess:
				require.NoError(t, err)
				return
			case 0:
				require.Error(t, err)
				require.False(t, alazar.IsDriverError(err))
			default:
				var e *alazar.Error
				require.ErrorAs(t, err, &e)
				require.Equal(t, c.code, e.Code)
			}
			if c.msg != "" {
				require.EqualError(t, err, c.msg)
			}
		})
	}
	require.ErrorIs(t, b.SetDualEdgeSampling(1, true), alazar.ErrUnsupported)
}

// TestCaptureDeliversThePhantom: the virtual board with no scanner
// attached delivers SimulatedAcquisition's records in order (its free
// raster), through the real driver's DMA calls.
func TestCaptureDeliversThePhantom(t *testing.T) {
	b := open(t)
	const samples, records, buffers = 256, 16, 4
	configure(t, b, samples, records)
	bytes := samples * records * 2
	mem := pinned(t, bytes*buffers)
	bufs := make([]uintptr, buffers)
	for i := range bufs {
		bufs[i] = addr(mem[i*bytes:])
		require.NoError(t, b.PostBuffer(bufs[i], bytes))
	}
	cfg := acquire.DefaultSimulatedConfig()
	cfg.SamplesPerRecord, cfg.Volumes, cfg.NoiseLevel = samples, 1, 0
	cfg.AscansPerBscan, cfg.BscansPerVolume = 32, 32 // VGV_PHANTOM's grid
	sim, err := acquire.NewSimulatedAcquisition(cfg)
	require.NoError(t, err)
	require.NoError(t, sim.Prepare())
	require.NoError(t, sim.Start())
	require.NoError(t, b.StartCapture())
	require.True(t, b.Running())
	want := make([]uint16, samples*records)
	for k := range 3 * buffers {
		i := k % buffers
		require.NoError(t, b.WaitBuffer(bufs[i], time.Second), "buffer %d", k)
		_, err := sim.Fill(want, records)
		require.NoError(t, err)
		got := virtualtest.Uint16s(mem[i*bytes : (i+1)*bytes])
		require.LessOrEqual(t, virtualtest.MaxDiff(got, want), 1, "buffer %d differs from SimulatedAcquisition's records", k)
		require.NoError(t, b.PostBuffer(bufs[i], bytes))
	}
	n, err := b.RecordCaptureCount()
	require.NoError(t, err)
	require.GreaterOrEqual(t, n, 3*buffers*records)
	require.NoError(t, b.StopCapture())
	require.False(t, b.Running())
	require.NoError(t, sim.Close())
}

func TestWaitTimesOutAndKeepsOrder(t *testing.T) {
	b := open(t)
	const samples, records = 256, 8
	configure(t, b, samples, records)
	bytes := samples * records * 2
	mem := pinned(t, 2*bytes)
	first, second := addr(mem), addr(mem[bytes:])
	require.NoError(t, b.PostBuffer(first, bytes))
	require.NoError(t, b.PostBuffer(second, bytes))
	// Not started: nothing arrives.
	err := b.WaitBuffer(first, 30*time.Millisecond)
	require.ErrorIs(t, err, alazar.ErrWaitTimeout)
	require.NoError(t, b.StartCapture())
	require.ErrorIs(t, b.WaitBuffer(second, time.Second), alazar.ErrBufferNotReady, "the oldest buffer first")
	require.NoError(t, b.WaitBuffer(first, time.Second))
	require.NoError(t, b.WaitBuffer(second, time.Second))
	require.ErrorContains(t, b.PostBuffer(first, bytes-1), "ApiBufferTooSmall")
	require.NoError(t, b.StopCapture())
}

// TestStopEndsAWaitAndTheBoardStartsAgain: an abort from another goroutine
// ends a wait in progress, and the board runs again after a new
// ConfigureCapture.
func TestStopEndsAWaitAndTheBoardStartsAgain(t *testing.T) {
	b := open(t)
	const samples, records = 256, 8
	configure(t, b, samples, records)
	bytes := samples * records * 2
	mem := pinned(t, bytes)
	require.NoError(t, b.PostBuffer(addr(mem), bytes))
	done := make(chan error, 1)
	go func() { done <- b.WaitBuffer(addr(mem), 5*time.Second) }() // never started: waits
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, b.StopCapture())
	select {
	case err := <-done:
		require.Error(t, err)
	case <-time.After(2 * time.Second):
		t.Fatal("the wait did not end at the abort")
	}
	for range 2 {
		configure(t, b, samples, records)
		require.NoError(t, b.PostBuffer(addr(mem), bytes))
		require.NoError(t, b.StartCapture())
		require.NoError(t, b.WaitBuffer(addr(mem), time.Second))
		require.NoError(t, b.StopCapture())
	}
}

// child re-runs test name in a process whose library loads with env.
func child(t *testing.T, name string, childEnv ...string) {
	t.Helper()
	virtualtest.Require(t, env)
	if os.Getenv("VGV_CHILD") == name {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), append(childEnv, "VGV_CHILD="+name)...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child %s:\n%s", name, out)
	require.Contains(t, string(out), "PASS")
	t.Skipf("ran in a child process")
}

func TestOverflowWhenTheHostFallsBehind(t *testing.T) {
	child(t, "TestOverflowWhenTheHostFallsBehind", "VGV_ALAZAR_FIFO_BYTES=65536")
	b := open(t)
	const samples, records = 256, 16
	configure(t, b, samples, records)
	bytes := samples * records * 2
	mem := pinned(t, bytes)
	require.NoError(t, b.PostBuffer(addr(mem), bytes))
	require.NoError(t, b.StartCapture())
	require.NoError(t, b.WaitBuffer(addr(mem), time.Second))
	time.Sleep(50 * time.Millisecond) // 10,000 A-lines with a FIFO of 128 records and no buffer
	require.NoError(t, b.PostBuffer(addr(mem), bytes))
	err := b.WaitBuffer(addr(mem), time.Second)
	require.ErrorIs(t, err, alazar.ErrBufferOverflow)
	require.ErrorContains(t, err, "(582) ApiBufferOverflow")
	require.NoError(t, b.StopCapture())
	// The overflow ended that acquisition only.
	configure(t, b, samples, records)
	require.NoError(t, b.PostBuffer(addr(mem), bytes))
	require.NoError(t, b.StartCapture())
	require.NoError(t, b.WaitBuffer(addr(mem), time.Second))
}

func TestBoardRemovedMidRun(t *testing.T) {
	child(t, "TestBoardRemovedMidRun", "VGV_FAULT=board_removed@40")
	b, err := alazar.Open(1, 1)
	require.NoError(t, err)
	const samples, records = 256, 16
	configure(t, b, samples, records)
	bytes := samples * records * 2
	mem := pinned(t, 4*bytes)
	for i := range 4 {
		require.NoError(t, b.PostBuffer(addr(mem[i*bytes:]), bytes))
	}
	require.NoError(t, b.StartCapture())
	require.NoError(t, b.WaitBuffer(addr(mem), time.Second))
	require.NoError(t, b.WaitBuffer(addr(mem[bytes:]), time.Second))
	err = b.WaitBuffer(addr(mem[2*bytes:]), time.Second) // A-lines 32..47 cross the removal
	var e *alazar.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, alazar.ApiFailed, e.Code)
	require.Error(t, b.StopCapture())
	_, err = alazar.Open(1, 1)
	require.EqualError(t, err, "unable to open Alazar board 1-1: board not found")
}

func TestMissingLibrary(t *testing.T) {
	child(t, "TestMissingLibrary", alazar.EnvLibrary+"=/nonexistent/libATSApi.so")
	_, err := alazar.Open(1, 1)
	require.ErrorIs(t, err, alazar.ErrNoLibrary)
	require.ErrorContains(t, err, alazar.EnvLibrary)
	require.ErrorContains(t, err, "/nonexistent/libATSApi.so")
	require.Equal(t, "", alazar.Library())
}

// An ATS-SDK older than the driver's functions is refused at load with the
// version it reported, and nothing is opened; the next Load tries again.
func TestUnsupportedSDKVersion(t *testing.T) {
	child(t, "TestUnsupportedSDKVersion", "VGV_ALAZAR_SDK_VERSION=6.3.1")
	_, err := alazar.Open(1, 1)
	require.ErrorIs(t, err, alazar.ErrUnsupportedVersion)
	require.ErrorContains(t, err, "is ATS-SDK 6.3.1, expected 7.0 or newer")
	require.Equal(t, "", alazar.Library())
	_, err = alazar.Load()
	require.ErrorIs(t, err, alazar.ErrUnsupportedVersion)
}
