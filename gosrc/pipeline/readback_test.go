package pipeline

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestReadbackDoubleBuffered renders frames on a producer stream and reads
// each back while the next is produced: the producer never waits for a
// readback, and every frame's bytes are right.
func TestReadbackDoubleBuffered(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	dev.copyDelay = 5 * time.Millisecond // readback is slow
	prod, err := dev.NewStream(0)
	require.NoError(t, err)
	rb, err := NewReadback(dev, 16, ReadbackOptions{})
	require.NoError(t, err)
	defer rb.Close()
	frame, err := dev.Alloc(16)
	require.NoError(t, err)

	var pending *ReadbackHandle
	t0 := time.Now()
	for f := range 6 {
		// "Render" frame f (memset: no copy delay).
		require.NoError(t, prod.Memset(frame.Ptr(), byte(f+1), 16))
		h, err := rb.ReadbackAsync(frame.Ptr(), 16, prod)
		require.NoError(t, err)
		if pending != nil {
			require.NoError(t, pending.Wait(time.Second))
			require.Equal(t, bytes.Repeat([]byte{byte(f)}, 16), dev.read(pending.Ptr(), 16), "frame %d", f-1)
			require.NoError(t, pending.Release())
		}
		pending = h
		// Frame f+1 must not overwrite what frame f's readback copies:
		// the producer orders itself behind the copy on the device.
		require.NoError(t, h.StreamWait(prod))
	}
	require.NoError(t, pending.Wait(-1))
	require.Equal(t, bytes.Repeat([]byte{6}, 16), dev.read(pending.Ptr(), 16))
	require.NoError(t, pending.Release())
	require.ErrorIs(t, pending.Release(), backend.ErrClosed)
	st := rb.Stats()
	total, free, held := st.Total, st.Free, st.Held
	require.Equal(t, 2, total, "double buffering needs no more than two buffers")
	require.Equal(t, 0, held)
	require.Equal(t, 2, free)
	require.Less(t, time.Since(t0), time.Second)
}

// TestReadbackReturnsAtOnce checks ReadbackAsync does not wait for the
// copy, and that a buffer released early is not reused before its copy
// completes.
func TestReadbackReturnsAtOnce(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	dev.copyDelay = 20 * time.Millisecond
	prod, err := dev.NewStream(0)
	require.NoError(t, err)
	rb, err := NewReadback(dev, 8, ReadbackOptions{Buffers: 1})
	require.NoError(t, err)
	defer rb.Close()
	src, err := dev.Alloc(8)
	require.NoError(t, err)

	t0 := time.Now()
	h, err := rb.ReadbackAsync(src.Ptr(), 8, prod)
	require.NoError(t, err)
	require.Less(t, time.Since(t0), 10*time.Millisecond)
	done, err := h.Done()
	require.NoError(t, err)
	require.False(t, done)
	require.ErrorIs(t, h.Wait(time.Millisecond), ErrTimeout)

	// All held: refused, not blocked.
	_, err = rb.ReadbackAsync(src.Ptr(), 8, prod)
	require.ErrorIs(t, err, ErrPoolExhausted)

	// Released while copying: the next readback waits (back-pressure) and
	// then reuses it.
	buf := h.Buffer()
	require.NoError(t, h.Release())
	retiring := rb.Stats().Retiring
	require.Equal(t, 1, retiring)
	h2, err := rb.ReadbackAsync(src.Ptr(), 8, prod)
	require.NoError(t, err)
	require.Equal(t, buf, h2.Buffer())
	require.NoError(t, h2.Wait(-1))
	require.NoError(t, h2.Release())
}

func TestReadbackGrowAndErrors(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	prod, err := dev.NewStream(0)
	require.NoError(t, err)
	src, err := dev.Alloc(8)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		size int
		opts ReadbackOptions
		msg  string
	}{
		{"size", 0, ReadbackOptions{}, "buffer_size=0"},
		{"buffers", 8, ReadbackOptions{Buffers: -1}, "buffers=-1"},
		{"max", 8, ReadbackOptions{Buffers: 3, MaxBuffers: 2}, "max_buffers=2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewReadback(dev, tc.size, tc.opts)
			require.ErrorContains(t, err, tc.msg)
		})
	}
	rb, err := NewReadback(dev, 8, ReadbackOptions{Buffers: 1, MaxBuffers: 3})
	require.NoError(t, err)
	_, err = rb.ReadbackAsync(src.Ptr(), 9, prod)
	require.ErrorIs(t, err, ErrHostTooSmall)
	_, err = rb.ReadbackAsync(src.Ptr(), 8, nil)
	require.ErrorContains(t, err, "producer stream is nil")
	var hs []*ReadbackHandle
	for range 3 {
		h, err := rb.ReadbackAsync(src.Ptr(), 8, prod)
		require.NoError(t, err)
		hs = append(hs, h)
	}
	_, err = rb.ReadbackAsync(src.Ptr(), 8, prod)
	require.ErrorIs(t, err, ErrPoolExhausted)
	require.ErrorContains(t, err, "all 3 pinned buffers are held")
	require.NoError(t, rb.Close())
	_, err = rb.ReadbackAsync(src.Ptr(), 8, prod)
	require.ErrorIs(t, err, backend.ErrClosed)
	require.NoError(t, hs[0].Release(), "releasing after Close is harmless")
}

// TestReadbackConcurrent is forge3d's thread-pool pattern: 8 workers, each
// with its own producer stream, sharing one readback pool.
func TestReadbackConcurrent(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	rb, err := NewReadback(dev, 32, ReadbackOptions{Buffers: 4, MaxBuffers: 16})
	require.NoError(t, err)
	defer rb.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		// Streams and buffers are made here: require may stop only the
		// test goroutine.
		s, err := dev.NewStream(0)
		require.NoError(t, err)
		defer s.Close()
		src, err := dev.Alloc(32)
		require.NoError(t, err)
		defer src.Free()
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				for i := range 20 {
					v := byte(w*20 + i)
					if err := s.Memset(src.Ptr(), v, 32); err != nil {
						return err
					}
					h, err := rb.ReadbackAsync(src.Ptr(), 32, s)
					if err != nil {
						return err
					}
					if err := h.Wait(5 * time.Second); err != nil {
						return err
					}
					want, got := bytes.Repeat([]byte{v}, 32), dev.read(h.Ptr(), 32)
					if err := h.Release(); err != nil {
						return err
					}
					if !bytes.Equal(want, got) {
						return fmt.Errorf("worker %d round %d read %v, expected %v", w, i, got, want)
					}
				}
				return nil
			}()
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := rb.Stats()
	total, held := st.Total, st.Held
	require.LessOrEqual(t, total, 16)
	require.Zero(t, held)
}
