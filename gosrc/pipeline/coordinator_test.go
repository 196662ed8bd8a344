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

func newCoord(t *testing.T, dev *fakeDevice, opts CoordinatorOptions) *AsyncCoordinator {
	t.Helper()
	c, err := NewAsyncCoordinator(dev, opts)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func pinned(t *testing.T, dev *fakeDevice, data []byte) backend.Buffer {
	t.Helper()
	b, err := dev.AllocPinned(len(data))
	require.NoError(t, err)
	dev.write(b.Ptr(), data)
	return b
}

// TestCoordinatorChain runs upload -> compute -> download on a slow fake
// device and checks that queueing never blocks the host, dependencies
// order the streams, and the data arrives.
func TestCoordinatorChain(t *testing.T) {
	for _, sequential := range []bool{false, true} {
		t.Run(map[bool]string{false: "three streams", true: "sequential"}[sequential], func(t *testing.T) {
			dev := newFakeDevice(backend.CUDA)
			dev.copyDelay = 20 * time.Millisecond
			c := newCoord(t, dev, CoordinatorOptions{Sequential: sequential})
			require.Equal(t, sequential, c.Sequential())
			require.Equal(t, sequential, c.UploadStream() == c.ComputeStream())

			in := pinned(t, dev, []byte{1, 2, 3, 4, 5, 6, 7, 8})
			out := pinned(t, dev, make([]byte, 8))
			buf, err := dev.Alloc(8)
			require.NoError(t, err)

			t0 := time.Now()
			up, err := c.QueueUpload(HostOf(in), buf, 8)
			require.NoError(t, err)
			comp, err := c.QueueCompute(ComputeOp{Func: func(s backend.Stream) error {
				// Doubles every byte in stream order, like a kernel would.
				return s.(backend.HostStream).Enqueue(func() {
					b := dev.read(buf.Ptr(), 8)
					for i := range b {
						b[i] *= 2
					}
					dev.write(buf.Ptr(), b)
				})
			}}, up)
			require.NoError(t, err)
			down, err := c.QueueDownload(buf, HostOf(out), 8, comp)
			require.NoError(t, err)
			require.Less(t, time.Since(t0), 20*time.Millisecond, "queueing blocked the host")
			require.Zero(t, dev.hostSync.Load(), "queueing synchronised the host")
			require.Empty(t, c.Poll(), "nothing can be done yet")

			require.NoError(t, c.Wait(down, time.Second))
			require.Equal(t, []byte{2, 4, 6, 8, 10, 12, 14, 16}, dev.read(out.Ptr(), 8))
			require.NoError(t, c.Wait(up, 0), "done before its dependant")

			got := map[OpID]OpResult{}
			for _, r := range c.Poll() {
				got[r.ID] = r
			}
			require.Len(t, got, 3)
			require.Equal(t, OpUpload, got[up].Type)
			require.Equal(t, OpCompute, got[comp].Type)
			require.Equal(t, "func", got[comp].Name)
			require.Equal(t, OpDownload, got[down].Type)
			require.Equal(t, 8, got[down].Bytes)
			require.GreaterOrEqual(t, got[up].GPUMs, float32(19), "upload timing covers its 20 ms copy")
			require.Zero(t, c.Pending())
			ok, err := c.Done(comp)
			require.NoError(t, err)
			require.True(t, ok)
		})
	}
}

func TestCoordinatorErrors(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{})
	host := pinned(t, dev, make([]byte, 4))
	buf, err := dev.Alloc(16)
	require.NoError(t, err)
	first, err := c.QueueUpload(HostOf(host), buf, 4)
	require.NoError(t, err)
	noop := ComputeOp{Func: func(backend.Stream) error { return nil }}

	tests := []struct {
		name string
		call func() error
		is   error
		msg  string
	}{
		{"wait unknown 0", func() error { return c.Wait(0, 0) }, ErrUnknownOp, "op 0"},
		{"wait unknown future", func() error { return c.Wait(99, 0) }, ErrUnknownOp, "op 99"},
		{"done unknown", func() error { _, err := c.Done(7); return err }, ErrUnknownOp, "op 7"},
		{"future dep", func() error { _, err := c.QueueCompute(noop, first, 5); return err }, ErrFutureOp, "dependency 5"},
		{"self dep", func() error { _, err := c.QueueCompute(noop, first+1); return err }, ErrCycle, "depend on itself"},
		{"zero dep", func() error { _, err := c.QueueCompute(noop, 0); return err }, ErrUnknownOp, "dependency 0"},
		{"host too small upload", func() error { _, err := c.QueueUpload(HostOf(host), buf, 8); return err }, ErrHostTooSmall, "host range of 4 bytes, expected at least n=8"},
		{"host too small download", func() error { _, err := c.QueueDownload(buf, HostOf(host), 16); return err }, ErrHostTooSmall, "n=16"},
		{"device too small", func() error { _, err := c.QueueUpload(HostMem{host.Ptr(), 64}, buf, 32); return err }, nil, "device buffer of 16 bytes, expected at least nbytes=32"},
		{"negative n", func() error { _, err := c.QueueUpload(HostOf(host), buf, -1); return err }, nil, "nbytes=-1, expected nbytes >= 0"},
		{"nil buffer", func() error { _, err := c.QueueDownload(nil, HostOf(host), 1); return err }, nil, "no device buffer"},
		{"null host", func() error { _, err := c.QueueUpload(HostMem{Len: 8}, buf, 1); return err }, nil, "host=(0x0, 8 bytes)"},
		{"empty op", func() error { _, err := c.QueueCompute(ComputeOp{}); return err }, nil, "neither Func nor Kernel"},
		{"end unknown", func() error { return c.EndExternal(42) }, ErrUnknownOp, "op 42"},
		{"end not external", func() error { return c.EndExternal(first) }, nil, "not an open external op"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			require.ErrorContains(t, err, tc.msg)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
	// Nothing above consumed an id.
	next, err := c.QueueCompute(noop)
	require.NoError(t, err)
	require.Equal(t, first+1, next)

	// A launch that fails after the op's events were recorded still takes
	// an id, so its events come back through Poll with the error.
	_, err = c.QueueCompute(ComputeOp{Kernel: "no_such_kernel"})
	require.ErrorContains(t, err, `no CPU implementation of kernel "no_such_kernel"`)
	require.NoError(t, c.SynchronizeAll())
	var failed []OpResult
	for _, r := range c.Poll() {
		if r.Err != nil {
			failed = append(failed, r)
		}
	}
	require.Len(t, failed, 1)
	require.Equal(t, next+1, failed[0].ID)
	require.Equal(t, "no_such_kernel", failed[0].Name)
}

// TestCoordinatorExternal is the Python-callable path: BeginExternal lends
// the compute stream after the dependencies, the caller enqueues work, and
// EndExternal records completion.
func TestCoordinatorExternal(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	dev.copyDelay = 5 * time.Millisecond
	c := newCoord(t, dev, CoordinatorOptions{})
	in := pinned(t, dev, []byte("abcd"))
	out := pinned(t, dev, make([]byte, 4))
	buf, err := dev.Alloc(4)
	require.NoError(t, err)

	up, err := c.QueueUpload(HostOf(in), buf, 4)
	require.NoError(t, err)
	ext, s, err := c.BeginExternal(up)
	require.NoError(t, err)
	require.Equal(t, c.ComputeStream(), s)

	// While open: no compute op, no dependency on it, no wait on it.
	_, err = c.QueueCompute(ComputeOp{Func: func(backend.Stream) error { return nil }})
	require.ErrorIs(t, err, ErrExternalOpen)
	_, _, err = c.BeginExternal()
	require.ErrorIs(t, err, ErrExternalOpen)
	_, err = c.QueueDownload(buf, HostOf(out), 4, ext)
	require.ErrorIs(t, err, ErrCycle)
	require.ErrorIs(t, c.Wait(ext, 0), ErrExternalOpen)
	done, err := c.Done(ext)
	require.NoError(t, err)
	require.False(t, done)

	// "Python" uppercases the bytes on the lent stream.
	require.NoError(t, s.(backend.HostStream).Enqueue(func() {
		dev.write(buf.Ptr(), bytes.ToUpper(dev.read(buf.Ptr(), 4)))
	}))
	require.NoError(t, c.EndExternal(ext))
	down, err := c.QueueDownload(buf, HostOf(out), 4, ext)
	require.NoError(t, err)
	require.NoError(t, c.Wait(down, time.Second))
	require.Equal(t, "ABCD", string(dev.read(out.Ptr(), 4)))
	var names []string
	for _, r := range c.Poll() {
		names = append(names, r.Name)
	}
	require.ElementsMatch(t, []string{"upload", "external", "download"}, names)
}

func TestCoordinatorKernelLauncher(t *testing.T) {
	type call struct {
		name        string
		grid, block [3]uint32
		args        []any
	}
	var calls []call
	launch := func(s backend.Stream, name string, grid, block [3]uint32, args ...any) error {
		calls = append(calls, call{name, grid, block, args})
		return nil
	}
	c := newCoord(t, newFakeDevice(backend.CPU), CoordinatorOptions{Launch: launch})
	id, err := c.QueueCompute(ComputeOp{Kernel: "scale_offset", Grid: [3]uint32{4, 1, 1}, Block: [3]uint32{256, 1, 1}, Args: []any{uintptr(16), 2.0}})
	require.NoError(t, err)
	require.NoError(t, c.Wait(id, -1))
	require.Equal(t, []call{{"scale_offset", [3]uint32{4, 1, 1}, [3]uint32{256, 1, 1}, []any{uintptr(16), 2.0}}}, calls)
	r := c.Poll()
	require.Len(t, r, 1)
	require.Equal(t, "scale_offset", r[0].Name)
}

func TestCoordinatorWaitTimeout(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	c := newCoord(t, dev, CoordinatorOptions{})
	id, err := c.QueueCompute(ComputeOp{Func: sleepOp(50 * time.Millisecond)})
	require.NoError(t, err)
	t0 := time.Now()
	err = c.Wait(id, 5*time.Millisecond)
	require.ErrorIs(t, err, ErrTimeout)
	require.Less(t, time.Since(t0), 40*time.Millisecond)
	require.NoError(t, c.Wait(id, -1))
	require.NoError(t, c.SynchronizeAll())
}

// TestCoordinatorFuncError: a failing Func reports its error at queue time
// and its events still come back.
func TestCoordinatorFuncError(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{})
	_, err := c.QueueCompute(ComputeOp{Func: func(backend.Stream) error { return backend.ErrClosed }})
	require.ErrorIs(t, err, backend.ErrClosed)
	require.ErrorContains(t, err, "QueueCompute: op 1")
	require.NoError(t, c.SynchronizeAll())
	r := c.Poll()
	require.Len(t, r, 1)
	require.ErrorIs(t, r[0].Err, backend.ErrClosed)
}

// TestCoordinatorConcurrent queues chains from many goroutines while
// another polls, and checks events are recycled through the pool.
func TestCoordinatorConcurrent(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	c := newCoord(t, dev, CoordinatorOptions{MaxReports: 64})
	const workers, iters = 8, 50
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var polled sync.WaitGroup
	polled.Add(1)
	total := 0
	go func() {
		defer polled.Done()
		for {
			total += len(c.Poll())
			select {
			case <-stop:
				return
			default:
				time.Sleep(100 * time.Microsecond)
			}
		}
	}()
	errs := make(chan error, workers)
	for w := range workers {
		// Buffers are made here: require may stop only the test goroutine.
		data := bytes.Repeat([]byte{byte(w)}, 32)
		in := pinned(t, dev, data)
		out := pinned(t, dev, make([]byte, 32))
		buf, err := dev.Alloc(32)
		require.NoError(t, err)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- func() error {
				for range iters {
					up, err := c.QueueUpload(HostOf(in), buf, 32)
					if err != nil {
						return err
					}
					comp, err := c.QueueCompute(ComputeOp{Func: func(backend.Stream) error { return nil }}, up)
					if err != nil {
						return err
					}
					down, err := c.QueueDownload(buf, HostOf(out), 32, comp)
					if err != nil {
						return err
					}
					if err := c.Wait(down, 5*time.Second); err != nil {
						return err
					}
					if got := dev.read(out.Ptr(), 32); !bytes.Equal(data, got) {
						return fmt.Errorf("worker %d read %v, expected %v", w, got, data)
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
	require.NoError(t, c.SynchronizeAll())
	close(stop)
	polled.Wait()
	total += len(c.Poll())
	require.Equal(t, uint64(workers*iters*3), uint64(total)+c.Dropped())
	require.Zero(t, c.Pending())
	// Each op holds two events until retired; far fewer than 2 per op exist.
	require.Less(t, dev.events.Load(), int64(workers*iters))
}

func BenchmarkCoordinatorQueuePoll(b *testing.B) {
	dev := newFakeDevice(backend.CUDA)
	c, err := NewAsyncCoordinator(dev, CoordinatorOptions{})
	require.NoError(b, err)
	defer c.Close()
	noop := ComputeOp{Func: func(backend.Stream) error { return nil }}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.QueueCompute(noop); err != nil {
			b.Fatal(err)
		}
		if i%64 == 0 {
			c.Poll()
		}
	}
}

// TestCoordinatorCloseWhileQueueing: threads queueing, polling and asking
// Done or Wait while another closes the coordinator (the robustness
// suite's coordinator_close_while_queueing, which once got a nil event
// dereference from a poll after Close, on the H200): every call either works or fails
// with backend.ErrClosed, none panics, and Close returns.
func TestCoordinatorCloseWhileQueueing(t *testing.T) {
	for round := range 200 {
		dev := newFakeDevice(backend.CUDA)
		c, err := NewAsyncCoordinator(dev, CoordinatorOptions{})
		require.NoError(t, err)
		noop := ComputeOp{Func: func(backend.Stream) error { return nil }}
		var wg sync.WaitGroup
		errs := make(chan error, 64)
		for w := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() {
					if r := recover(); r != nil {
						errs <- fmt.Errorf("worker %d panicked: %v", w, r)
					}
				}()
				for {
					id, err := c.QueueCompute(noop)
					if err != nil {
						errs <- err
						return
					}
					c.Poll()
					if _, err := c.Done(id); err != nil {
						errs <- err
						return
					}
					if err := c.Wait(id, time.Second); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		time.Sleep(200 * time.Microsecond)
		require.NoError(t, c.Close(), "round %d", round)
		wg.Wait()
		close(errs)
		for err := range errs {
			require.ErrorIs(t, err, backend.ErrClosed, "round %d", round)
		}
		require.NotPanics(t, func() { c.Poll() }, "a poll after Close")
		_, err = c.Done(1)
		require.ErrorIs(t, err, backend.ErrClosed, "Done after Close")
		require.ErrorIs(t, c.Wait(1, 0), backend.ErrClosed, "Wait after Close")
	}
}

// TestCoordinatorOpQueuedDuringClose: an op queued while Close waits for
// the streams is accepted; after Close a Poll does not touch the events
// Close took back, and Done and Wait report the coordinator closed (Done
// used to answer "not done" for ever, a caller's poll loop hanging).
func TestCoordinatorOpQueuedDuringClose(t *testing.T) {
	dev := newFakeDevice(backend.CUDA)
	dev.copyDelay = 50 * time.Millisecond
	c, err := NewAsyncCoordinator(dev, CoordinatorOptions{})
	require.NoError(t, err)
	in := pinned(t, dev, make([]byte, 8))
	buf, err := dev.Alloc(8)
	require.NoError(t, err)
	_, err = c.QueueUpload(HostOf(in), buf, 8) // Close's SynchronizeAll waits 50 ms for it
	require.NoError(t, err)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	time.Sleep(10 * time.Millisecond)
	late, err := c.QueueCompute(ComputeOp{Func: func(backend.Stream) error { return nil }})
	if err != nil { // Close was quicker on this machine: nothing to check
		require.ErrorIs(t, err, backend.ErrClosed)
		t.Skip("Close finished before the late op was queued")
	}
	require.NoError(t, <-closed)
	require.NotPanics(t, func() { c.Poll() })
	_, err = c.Done(late)
	require.ErrorIs(t, err, backend.ErrClosed)
	require.ErrorIs(t, c.Wait(late, 0), backend.ErrClosed)
}
