package acquire

import (
	"io"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/aravis"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

func needAravis(t *testing.T) {
	t.Helper()
	if err := aravis.Load(); err != nil {
		t.Skipf("Aravis is not installed: %v", err)
	}
}

// blocks is n blocks of pixels uint16 outside the Go heap (as pinned ones).
func genicamBlocks(t *testing.T, n, pixels int) [][]uint16 {
	t.Helper()
	mem, err := syscall.Mmap(-1, 0, n*2*pixels, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	out := make([][]uint16, n)
	for i := range out {
		out[i] = unsafe.Slice((*uint16)(unsafe.Pointer(&mem[i*2*pixels])), pixels)
	}
	return out
}

// TestGenICamFakeCamera drives the source as the engine does (Start, Post
// ahead, Fill in order, Stop) against Aravis's Fake_1: every block is the
// camera's ramp for its frame id, frames consecutive, counted.
func TestGenICamFakeCamera(t *testing.T) {
	needAravis(t)
	for _, tc := range []struct {
		format aravis.PixelFormat
		want   func(x, y int, id uint64) uint16
	}{
		{aravis.Mono8, func(x, y int, id uint64) uint16 { return uint16((uint64(x+y) + id) % 255) }},
		{aravis.Mono16, func(x, y int, id uint64) uint16 { return uint16((256 * (uint64(x+y) + id)) % 65535) }},
	} {
		t.Run(tc.format.String(), func(t *testing.T) {
			const w, h, preload, n = 128, 16, 3, 8
			cfg := DefaultGenICamConfig()
			cfg.Camera, cfg.SamplesPerRecord, cfg.RecordsPerBlock, cfg.PixelFormat = "Fake_1", w, h, tc.format
			cfg.LineRate, cfg.ExposureTimeUs = 30*h, 10000 // slow enough that a loaded -race run never drops a frame
			cfg.Features = []GenICamFeature{{"GainRaw", "0"}}
			a, err := NewGenICamAcquisition(cfg)
			require.NoError(t, err)
			defer func() { require.NoError(t, a.Close()) }()
			require.Equal(t, "AcquisitionFrameRate", a.LineRateFeature(), "the fake is an area camera")
			rate, err := a.Camera().FrameRate()
			require.NoError(t, err)
			require.InDelta(t, 30, rate, 1)
			require.Equal(t, w, a.SamplesPerRecord())
			bl := genicamBlocks(t, preload+1, w*h)
			require.NoError(t, a.Prepare())
			require.NoError(t, a.Start())
			for i := range preload {
				require.NoError(t, a.Post(bl[i]))
			}
			var first uint64
			for i := range n {
				b := bl[i%len(bl)]
				if i+preload < n {
					require.NoError(t, a.Post(bl[(i+preload)%len(bl)]))
				}
				got, err := a.Fill(b, h)
				require.NoError(t, err)
				require.Equal(t, h, got)
				id := uint64(b[0]) // pixel (0, 0) of frame id is id % 255 (Mono8), 256*id % 65535 (Mono16)
				if tc.format == aravis.Mono16 {
					id = uint64(b[0]) * 256 % 65535 // 256 is its own inverse modulo 65535
				}
				if i == 0 {
					first = id
				}
				require.Equal(t, (first+uint64(i))%255, id%255, "block %d: consecutive frames", i)
				for y := range h {
					for x := range w {
						require.Equal(t, tc.want(x, y, first+uint64(i)), b[y*w+x], "block %d (%d, %d)", i, x, y)
					}
				}
			}
			require.Equal(t, engine.FrameCounts{Received: n}, a.FrameCounts())
			require.NoError(t, a.Stop())
			_, err = a.Fill(bl[0], h)
			require.ErrorIs(t, err, io.EOF)
		})
	}
}

// TestGenICamTimeoutAndStop: a camera slower than the timeout (the fake at
// one frame in 5 s) times out loudly; a Stop ends a Fill waiting at once.
func TestGenICamTimeoutAndStop(t *testing.T) {
	needAravis(t)
	cfg := DefaultGenICamConfig()
	cfg.Camera, cfg.SamplesPerRecord, cfg.RecordsPerBlock, cfg.PixelFormat = "Fake_1", 64, 4, aravis.Mono8
	cfg.LineRate = 0.2 * 4
	cfg.AcquireTimeout = 300 * time.Millisecond
	a, err := NewGenICamAcquisition(cfg)
	require.NoError(t, err)
	defer a.Close()
	bl := genicamBlocks(t, 2, 64*4)
	require.NoError(t, a.Start())
	require.NoError(t, a.Post(bl[0]))
	_, err = a.Fill(bl[0], 4)
	if err == nil { // the fake may send its first frame at once; its next is 5 s away
		require.NoError(t, a.Post(bl[0]))
		_, err = a.Fill(bl[0], 4)
	}
	require.ErrorContains(t, err, "no frame from the camera")

	require.NoError(t, a.Start())
	require.NoError(t, a.Post(bl[1]))
	a.cfg.AcquireTimeout = time.Minute
	done := make(chan error, 1)
	go func() { _, err := a.Fill(bl[1], 4); done <- err }()
	time.Sleep(150 * time.Millisecond)
	t0 := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- a.Stop() }()
	require.ErrorIs(t, <-done, io.EOF)
	require.Less(t, time.Since(t0), time.Second, "the Fill ends at once")
	// Stop returns once the stream's thread is joined: the fake's sleeps
	// until its next frame (up to its 5 s period) before it sees the stop.
	require.NoError(t, <-stopped)
}

func TestGenICamConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(c *GenICamConfig)
		want string
	}{
		{"width", func(c *GenICamConfig) { c.SamplesPerRecord = 0 }, "SamplesPerRecord=0"},
		{"height", func(c *GenICamConfig) { c.RecordsPerBlock = -1 }, "RecordsPerBlock=-1"},
		{"format", func(c *GenICamConfig) { c.PixelFormat = 99 }, "PixelFormat=99"},
		{"rate", func(c *GenICamConfig) { c.LineRate = -1 }, "LineRate=-1"},
		{"timeout", func(c *GenICamConfig) { c.AcquireTimeout = 0 }, "AcquireTimeout=0s"},
		{"feature", func(c *GenICamConfig) { c.Features = []GenICamFeature{{"", "1"}} }, "Features[0] has no name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultGenICamConfig()
			tc.mod(&c)
			_, err := NewGenICamAcquisition(c)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
	needAravis(t)
	c := DefaultGenICamConfig()
	c.Camera, c.PixelFormat = "Fake_1", aravis.Mono12p
	c.SamplesPerRecord, c.RecordsPerBlock = 64, 4
	_, err := NewGenICamAcquisition(c)
	require.ErrorContains(t, err, "PixelFormat")
	require.Equal(t, uint64(0), frameGap(5, 6))
	require.Equal(t, uint64(2), frameGap(5, 8))
	require.Equal(t, uint64(0), frameGap(65535, 1))
	require.Equal(t, uint64(2), frameGap(65534, 2))
}
