package aravis

import (
	"errors"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// needAravis skips when Aravis 0.8 is not installed (CI installs it:
// .ci/run; apt-get install libaravis-0.8-0 aravis-tools).
func needAravis(t *testing.T) {
	t.Helper()
	if err := Load(); err != nil {
		require.ErrorIs(t, err, ErrNoLibrary)
		t.Skipf("Aravis is not installed: %v", err)
	}
}

// pinned is memory outside the Go heap, as the engine's blocks are.
func pinned(t *testing.T, n int) []byte {
	t.Helper()
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { _ = syscall.Munmap(b) })
	return b
}

// TestFakeCameraFrames: Aravis's in-process Fake_1 fills user memory with
// its diagonal ramp, frame after frame, for Mono8 and Mono16.
func TestFakeCameraFrames(t *testing.T) {
	needAravis(t)
	for _, tc := range []struct {
		format PixelFormat
		want   func(x, y int, id uint64) uint16
	}{
		{Mono8, func(x, y int, id uint64) uint16 { return uint16((uint64(x+y) + id) % 255) }},
		{Mono16, func(x, y int, id uint64) uint16 { return uint16((256 * (uint64(x+y) + id)) % 65535) }},
	} {
		t.Run(tc.format.String(), func(t *testing.T) {
			const w, h, frames = 64, 8, 6
			c, err := Open("Fake_1")
			require.NoError(t, err)
			defer c.Close()
			require.Equal(t, "Aravis", c.Vendor)
			require.False(t, c.GigEVision)
			require.NoError(t, c.SetInteger("Width", w))
			require.NoError(t, c.SetInteger("Height", h))
			require.NoError(t, c.SetPixelFormat(tc.format.String()))
			require.NoError(t, c.SetExposureTime(10000)) // the ramp's scale is 1 at 10 ms and gain 0
			require.NoError(t, c.SetInteger("GainRaw", 0))
			require.NoError(t, c.SetFrameRate(200))
			require.NoError(t, c.SetContinuous())
			p, err := c.Payload()
			require.NoError(t, err)
			require.Equal(t, tc.format.FrameBytes(w*h), p)
			s, err := c.CreateStream(false)
			require.NoError(t, err)
			defer s.Close()
			mem := pinned(t, frames*2*w*h)
			for i := range frames {
				require.NoError(t, s.Push(uintptr(unsafe.Pointer(&mem[i*2*w*h+tc.format.LandingOffset(w*h)])), p))
			}
			require.NoError(t, c.StartAcquisition())
			var last uint64
			for i := range frames {
				f, ok := s.Pop(2 * time.Second)
				require.True(t, ok, "frame %d", i)
				require.Equal(t, BufferSuccess, f.Status)
				require.Equal(t, [3]int{w, h, int(tc.format.PFNC())}, [3]int{f.Width, f.Height, int(f.PixelFormat)})
				block := unsafe.Slice((*uint16)(unsafe.Pointer(&mem[i*2*w*h])), w*h)
				require.Equal(t, uintptr(unsafe.Pointer(&mem[i*2*w*h+tc.format.LandingOffset(w*h)])), f.Data, "zero-copy: in order, in our memory")
				tc.format.Widen(block)
				for y := range h {
					for x := range w {
						require.Equal(t, tc.want(x, y, f.ID), block[y*w+x], "frame %d (id %d) pixel (%d, %d)", i, f.ID, x, y)
					}
				}
				if i > 0 {
					require.Equal(t, last+1, f.ID)
				}
				last = f.ID
			}
			require.NoError(t, c.StopAcquisition())
			done, failed, _ := s.Statistics()
			require.GreaterOrEqual(t, done, uint64(frames))
			require.Zero(t, failed)
		})
	}
}

// TestOpenErrors: an unknown camera names what was found; features a
// camera lacks are Aravis's errors, not crashes.
func TestOpenErrors(t *testing.T) {
	needAravis(t)
	_, err := Open("Fake_1-no-such-camera")
	var ae *Error
	require.ErrorAs(t, err, &ae)
	require.Contains(t, err.Error(), "the ids found")
	c, err := Open("Fake_1")
	require.NoError(t, err)
	defer c.Close()
	ok, err := c.Available("AcquisitionLineRate")
	require.NoError(t, err)
	require.False(t, ok, "the fake is an area camera")
	require.Error(t, c.SetFloat("AcquisitionLineRate", 1000))
	require.Error(t, c.SetPixelFormat("Mono12p"), "the fake offers Mono8 and Mono16 (and color)")
	ids, err := DeviceIDs()
	require.NoError(t, err)
	require.Contains(t, ids, "Fake_1")
	require.NotEmpty(t, Version())
	require.NoError(t, c.Close())
	require.NoError(t, c.Close())
	require.True(t, errors.Is(c.SetInteger("Width", 1), ErrClosed))
}

// TestWiden: the in-place widening of each format equals a plain unpack
// into separate memory, for every length around the packing groups.
func TestWiden(t *testing.T) {
	ref := func(f PixelFormat, src []byte, n int) []uint16 {
		out := make([]uint16, n)
		switch f {
		case Mono8:
			for i := range n {
				out[i] = uint16(src[i])
			}
		default: // a little-endian bit stream of Bits()-bit values
			bits := f.Bits()
			for i := range n {
				var v uint16
				for b := range bits {
					bit := i*bits + b
					if src[bit/8]>>(bit%8)&1 != 0 {
						v |= 1 << b
					}
				}
				out[i] = v
			}
		}
		return out
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, f := range []PixelFormat{Mono8, Mono10p, Mono12p} {
		for n := 1; n <= 41; n++ {
			frame := make([]byte, f.FrameBytes(n))
			for i := range frame {
				frame[i] = byte(r.Uint32())
			}
			block := make([]uint16, n)
			raw := unsafe.Slice((*byte)(unsafe.Pointer(&block[0])), 2*n)
			copy(raw[f.LandingOffset(n):], frame)
			f.Widen(block)
			require.Equal(t, ref(f, frame, n), block, "%s n=%d", f, n)
		}
	}
	// 16-bit formats land at the start and stay.
	for _, f := range []PixelFormat{Mono10, Mono12, Mono16} {
		require.Equal(t, 0, f.LandingOffset(10))
		b := []uint16{1, 2, 3}
		f.Widen(b)
		require.Equal(t, []uint16{1, 2, 3}, b)
	}
	for _, name := range []string{"Mono8", "Mono10", "Mono12", "Mono16", "Mono10p", "Mono12p"} {
		f, ok := ParsePixelFormat(name)
		require.True(t, ok)
		require.Equal(t, name, f.String())
	}
	_, ok := ParsePixelFormat("RGB8")
	require.False(t, ok)
}
