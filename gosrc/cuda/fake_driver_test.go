package cuda_test

import (
	"os"
	"runtime"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/fakecudatest"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
)

// The shim is exercised without a GPU against testdata/fakecuda.c, a fake
// libcuda that keeps memory on the host and insists, like the real driver,
// that the context is current on the calling thread. Init runs once per
// process, so the checks run in a child process of the test binary with
// $VORTEXGO_CUDA_DRIVER pointing at the fake.

const fakeChildEnv = "VORTEXGO_FAKE_DRIVER_CHILD"

func TestFakeDriver(t *testing.T) {
	fakecudatest.Run(t, "testdata", "TestFakeDriverChild", fakeChildEnv)
}

// fakeProbe mirrors struct fake_probe in fakecuda.c.
type fakeProbe struct {
	Grid, Block [3]uint32
	Shmem       uint32
	_           uint32
	Stream      uintptr
	P0          uint64
	P1          int32
	P2          float32
	P3          float64
	Launches    int32
}

func TestFakeDriverChild(t *testing.T) {
	if os.Getenv(fakeChildEnv) == "" {
		t.Skip("only runs as the child of TestFakeDriver")
	}
	require.NoError(t, cuda.Init())
	require.True(t, cuda.Available())
	v, err := cuda.DriverVersion() // the fake is a CUDA 13.0 driver
	require.NoError(t, err)
	require.Equal(t, 13000, v)
	ctxSets := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_ctx_sets")
	busy := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_stream_busy")
	probe := fakecudatest.Sym[fakeProbe](t, cuda.DriverPathEnv, "fake_probe_rec")

	d, err := cuda.GetDevice(0)
	require.NoError(t, err)
	require.Equal(t, "Fake GPU", d.Name())
	major, minor := d.ComputeCapability()
	require.Equal(t, [2]int{9, 0}, [2]int{major, minor})
	least, greatest := d.StreamPriorityRange()
	require.Equal(t, [2]int{0, -5}, [2]int{least, greatest})
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	require.Equal(t, [2]uint64{1 << 29, 1 << 30}, [2]uint64{free, total})

	t.Run("context is set only when it differs", func(t *testing.T) {
		// Pin this goroutine to one thread so the counts are deterministic.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		require.NoError(t, d.Synchronize())
		before := *ctxSets
		require.NoError(t, d.Synchronize())
		require.NoError(t, d.Synchronize())
		require.Equal(t, before, *ctxSets, "context already current on this thread: no set expected")
		// A new OS thread starts with no context: the wrapper must set it.
		// The runtime may hand a locked goroutine an idle thread that
		// already has the context, so lock more goroutines at once than
		// the process has threads: at least one runs on a new thread.
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			t.Skipf("cannot count this process's threads: %v", err)
		}
		n := len(tasks) + 1
		var ready sync.WaitGroup
		ready.Add(n)
		done := make(chan error, n)
		for range n {
			go func() {
				runtime.LockOSThread() // the thread is discarded when the goroutine exits
				ready.Done()
				ready.Wait() // all n hold distinct threads now
				done <- d.Synchronize()
			}()
		}
		for range n {
			require.NoError(t, <-done)
		}
		require.Greater(t, *ctxSets, before)
	})

	t.Run("stream priority clamped and read back", func(t *testing.T) {
		invariants.AllowMisuse(t) // checks the ErrClosed a user sees after a second Close
		for _, tc := range []struct{ ask, want int }{{-9, -5}, {-2, -2}, {3, 0}} {
			s, err := d.CreateStream(tc.ask)
			require.NoError(t, err)
			require.Equal(t, tc.want, s.Priority())
			w, err := d.WrapStream(s.Handle())
			require.NoError(t, err)
			require.Equal(t, tc.want, w.Priority())
			require.False(t, w.Owned())
			require.NoError(t, w.Close())
			require.NoError(t, s.Close())
			require.ErrorIs(t, s.Close(), backend.ErrClosed)
		}
		legacy, err := d.WrapStream(0)
		require.NoError(t, err)
		require.Equal(t, 0, legacy.Priority())
		require.NoError(t, legacy.Close())
	})

	s, err := d.CreateStream(0)
	require.NoError(t, err)
	defer s.Close()

	t.Run("query maps NOT_READY to false", func(t *testing.T) {
		ev, err := d.CreateEvent(false)
		require.NoError(t, err)
		defer ev.Close()
		require.NoError(t, s.Record(ev))
		*busy = 1
		done, err := s.Query()
		require.NoError(t, err)
		require.False(t, done)
		done, err = ev.Query()
		require.NoError(t, err)
		require.False(t, done)
		require.NoError(t, s.Synchronize())
		done, err = ev.Query()
		require.NoError(t, err)
		require.True(t, done)
		require.NoError(t, s.WaitEvent(ev))
	})

	t.Run("elapsed time", func(t *testing.T) {
		a, _ := d.CreateEvent(true)
		b, _ := d.CreateEvent(true)
		defer a.Close()
		defer b.Close()
		ms, err := a.ElapsedTime(b)
		require.NoError(t, err)
		require.Equal(t, float32(1.5), ms)
	})

	t.Run("host memory registered in place", func(t *testing.T) {
		flags := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_register_flags")
		live := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_registered")
		mem, addr := testmem.Slice[byte](t, 4096)
		for _, tc := range []struct {
			readOnly bool
			flags    int32
		}{{false, 0x01}, {true, 0x09}} {
			b, err := d.RegisterHost(addr, len(mem), tc.readOnly)
			require.NoError(t, err)
			require.Equal(t, tc.flags, *flags, "portable, plus read-only when asked")
			require.Equal(t, int32(1), *live)
			require.Equal(t, addr, b.Ptr())
			require.Equal(t, backend.PinnedMem, b.Kind())
			require.Equal(t, len(mem), b.Size())
			require.NoError(t, b.Free(), "Free unregisters, frees nothing")
			require.Equal(t, int32(0), *live)
		}
		for _, bad := range []struct {
			ptr uintptr
			n   int
		}{{0, 64}, {addr, 0}, {addr, -1}} {
			_, err := d.RegisterHost(bad.ptr, bad.n, true)
			require.ErrorContains(t, err, "expected memory and n > 0")
		}
		runtime.KeepAlive(mem)
	})

	t.Run("peer access", func(t *testing.T) {
		can := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_peer_can")
		enabled := fakecudatest.Sym[int32](t, cuda.DriverPathEnv, "fake_peer_enabled")
		other := cuda.PeerTwin(d, 1)
		ok, err := d.EnablePeerAccess(d)
		require.NoError(t, err)
		require.True(t, ok, "a device reaches itself")
		require.Zero(t, *enabled, "without asking the driver")
		*can = 0
		ok, err = d.EnablePeerAccess(other)
		require.NoError(t, err, "devices that cannot reach each other are not an error")
		require.False(t, ok)
		require.Zero(t, *enabled)
		*can = 1
		for range 2 { // the second time the driver says it is already enabled
			ok, err = d.EnablePeerAccess(other)
			require.NoError(t, err)
			require.True(t, ok)
			require.Equal(t, int32(1), *enabled)
		}
		for _, bad := range []backend.Device{cpu.Default(), nil, (*cuda.Device)(nil)} {
			_, err = d.EnablePeerAccess(bad)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, "expected a *cuda.Device")
		}
	})

	t.Run("copies, memset and 2D copy", func(t *testing.T) {
		const n = 64
		h, err := d.MallocHost(n)
		require.NoError(t, err)
		defer h.Free()
		g, err := d.Malloc(n)
		require.NoError(t, err)
		defer g.Free()
		g2, err := d.Malloc(n)
		require.NoError(t, err)
		defer g2.Free()
		hb := unsafe.Slice((*byte)(ptrOf(h.Ptr())), n)
		for i := range hb {
			hb[i] = byte(i)
		}
		want := append([]byte(nil), hb...)
		require.NoError(t, s.CopyHtoD(g.Ptr(), h.Ptr(), n))
		require.NoError(t, s.CopyDtoD(g2.Ptr(), g.Ptr(), n))
		require.NoError(t, s.Memset(h.Ptr(), 0, n))
		require.NoError(t, s.CopyDtoH(h.Ptr(), g2.Ptr(), n))
		require.Equal(t, want, hb)
		require.NoError(t, s.Memset(g.Ptr(), 0xee, n))
		require.NoError(t, s.Copy(h.Ptr(), g.Ptr(), n))
		require.Equal(t, byte(0xee), hb[n-1])
		// 4 rows of 3 bytes from an 8-byte pitch into a packed 3-byte pitch.
		require.NoError(t, s.CopyHtoD(g.Ptr(), h.Ptr(), 0))
		for i := range hb {
			hb[i] = byte(i)
		}
		require.NoError(t, s.Copy2D(g.Ptr(), 3, h.Ptr()+1, 8, 3, 4))
		require.NoError(t, s.Copy(h.Ptr()+32, g.Ptr(), 12))
		require.Equal(t, []byte{1, 2, 3, 9, 10, 11, 17, 18, 19, 25, 26, 27}, hb[32:44])
	})

	t.Run("launch packs parameters", func(t *testing.T) {
		m, err := d.LoadNamedModule("fake", []byte("// fake ptx"))
		require.NoError(t, err)
		m2, err := d.LoadNamedModule("fake", nil)
		require.NoError(t, err)
		require.Same(t, m, m2, "named modules are cached")
		f, err := m.Function("probe")
		require.NoError(t, err)
		f2, err := m.Function("probe")
		require.NoError(t, err)
		require.Same(t, f, f2)
		err = s.Launch(f, cuda.Dim3{X: 7, Y: 2, Z: 1}, cuda.Dim3{X: 128, Y: 1, Z: 1}, 96,
			uintptr(0xdeadbeef00), int32(-42), float32(2.5), float64(-1e300))
		require.NoError(t, err)
		p := *probe
		require.Equal(t, int32(1), p.Launches)
		require.Equal(t, [3]uint32{7, 2, 1}, p.Grid)
		require.Equal(t, [3]uint32{128, 1, 1}, p.Block)
		require.Equal(t, uint32(96), p.Shmem)
		require.Equal(t, s.Handle(), p.Stream)
		require.Equal(t, uint64(0xdeadbeef00), p.P0)
		require.Equal(t, int32(-42), p.P1)
		require.Equal(t, float32(2.5), p.P2)
		require.Equal(t, -1e300, p.P3)

		_, err = m.Function("missing")
		require.ErrorIs(t, err, &cuda.Error{Code: cuda.CodeNotFound})
		require.ErrorContains(t, err, `cuda.Module.Function("missing"): cuda: cuModuleGetFunction: CUDA_ERROR_NOT_FOUND (500): named symbol not found`)

		_, err = d.LoadModule([]byte("bogus"))
		require.ErrorContains(t, err, "cuda: cuModuleLoadDataEx: CUDA_ERROR_INVALID_PTX (218): a PTX JIT compilation failed; JIT log: ptxas fatal: fake syntax error")
	})

	t.Run("out of memory error text", func(t *testing.T) {
		_, err := d.Malloc(1 << 41)
		require.EqualError(t, err, "cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory")
	})

	t.Run("graph capture", func(t *testing.T) {
		invariants.AllowMisuse(t) // checks the ErrClosed a user sees after a second Close
		require.False(t, s.Capturing())
		require.NoError(t, s.BeginCapture())
		require.True(t, s.Capturing())
		g, err := s.EndCapture()
		require.NoError(t, err)
		require.False(t, s.Capturing())
		require.Equal(t, 3, g.Nodes())
		require.NoError(t, g.Launch(s))
		require.NoError(t, g.Close())
		require.ErrorIs(t, g.Close(), backend.ErrClosed)
	})

	// The fake driver applies the capture rules to the capturing stream;
	// the errors must say what to do, and the stream must work again once
	// the invalidated capture is ended.
	t.Run("capture refusals say what to do", func(t *testing.T) {
		outside, err := d.CreateEvent(false)
		require.NoError(t, err)
		defer outside.Close()
		inside, err := d.CreateEvent(false)
		require.NoError(t, err)
		defer inside.Close()
		require.NoError(t, s.Record(outside))

		require.NoError(t, s.BeginCapture())
		require.NoError(t, s.Record(inside))
		require.NoError(t, s.WaitEvent(inside), "an event recorded in the capture may be waited on")
		err = s.WaitEvent(outside)
		require.ErrorIs(t, err, &cuda.Error{Code: cuda.CodeCaptureIsolation})
		require.ErrorContains(t, err, "synchronize that work before the capture begins")
		err = s.Synchronize()
		require.ErrorIs(t, err, &cuda.Error{Code: cuda.CodeCaptureInvalidated})
		require.ErrorContains(t, err, "cannot wait on an event recorded outside the capture")
		_, err = s.EndCapture()
		require.ErrorIs(t, err, &cuda.Error{Code: cuda.CodeCaptureInvalidated})
		require.False(t, s.Capturing())
		require.NoError(t, s.Synchronize(), "the stream works again after the capture ended")

		require.NoError(t, s.BeginCapture())
		err = s.Synchronize()
		require.ErrorIs(t, err, &cuda.Error{Code: cuda.CodeCaptureUnsupported})
		require.ErrorContains(t, err, "synchronize before the capture begins or after it ends")
		_, err = s.EndCapture()
		require.ErrorIs(t, err, &cuda.Error{Code: cuda.CodeCaptureInvalidated})
	})

	t.Run("launch does not allocate", func(t *testing.T) {
		m, _ := d.LoadNamedModule("fake", nil)
		f, _ := m.Function("probe")
		grid, block := cuda.Dim3{X: 1, Y: 1, Z: 1}, cuda.Dim3{X: 1, Y: 1, Z: 1}
		// Boxing these values into ...any does not allocate (small or
		// constant values); the launch path itself must not either.
		allocs := testing.AllocsPerRun(100, func() {
			_ = s.Launch(f, grid, block, 0, uintptr(0), int32(1), float32(0), float64(0))
		})
		require.Zero(t, allocs)
	})
	t.Run("event record and wait do not allocate", func(t *testing.T) {
		ev, err := d.CreateEvent(false)
		require.NoError(t, err)
		defer ev.Close()
		allocs := testing.AllocsPerRun(100, func() {
			_ = s.Record(ev)
			_ = s.WaitEvent(ev)
		})
		require.Zero(t, allocs)
	})
	t.Run("C fast path", func(t *testing.T) { testFastPath(t, d) })

	// Misuse returns ErrClosed to users; invariant builds (-race, -tags
	// invariants) panic naming the object and where it was made and closed.
	t.Run("misuse panics in invariant builds", func(t *testing.T) {
		tests := []struct {
			name  string
			kind  string
			setup func(t *testing.T) func() error // closes an object, returns the misuse
		}{
			{"stream double close", "cuda.Stream", func(t *testing.T) func() error {
				s, err := d.CreateStream(0)
				require.NoError(t, err)
				require.NoError(t, s.Close())
				return s.Close
			}},
			{"stream use after close", "cuda.Stream", func(t *testing.T) func() error {
				s, err := d.CreateStream(0)
				require.NoError(t, err)
				require.NoError(t, s.Close())
				return s.Synchronize
			}},
			{"event use after close", "cuda.Event", func(t *testing.T) func() error {
				e, err := d.CreateEvent(false)
				require.NoError(t, err)
				require.NoError(t, e.Close())
				return func() error { _, err := e.Query(); return err }
			}},
			{"buffer double free", "cuda.Buffer", func(t *testing.T) func() error {
				b, err := d.Malloc(16)
				require.NoError(t, err)
				require.NoError(t, b.Free())
				return b.Free
			}},
			{"graph launch after close", "cuda.Graph", func(t *testing.T) func() error {
				require.NoError(t, s.BeginCapture())
				g, err := s.EndCaptureGraph()
				require.NoError(t, err)
				require.NoError(t, g.Close())
				return func() error { return g.Launch(s) }
			}},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				err, panicked := misuse(tc.setup(t))
				require.Equal(t, invariants.Enabled, panicked, "panics only in invariant builds")
				require.ErrorIs(t, err, backend.ErrClosed)
				if panicked {
					require.Contains(t, err.Error(), tc.kind)
					require.Contains(t, err.Error(), "created at:")
					require.Contains(t, err.Error(), "closed at:")
				}
			})
		}
	})
}

// misuse runs fn and returns its error, or the *invariants.Violation it
// panicked with (which wraps the same error).
func misuse(fn func() error) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			err, panicked = r.(*invariants.Violation), true
		}
	}()
	return fn(), false
}

// ptrOf reads an address the fake driver returned (C heap memory).
//
// noinline works around an internal compiler error of go1.26.8 (without
// -race): inlined into a caller that memmoves from the result, the
// pointer-to-pointer load panics in ssa.disjointTypes.
//
//go:noinline
func ptrOf(p uintptr) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Pointer(&p)) }
