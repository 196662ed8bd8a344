package cpu_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
	"github.com/vortexgo/vortexgo/gosrc/internal/testmem"
)

func newStream(t *testing.T) backend.Stream {
	t.Helper()
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func alloc(t *testing.T, n int) *cpu.Buffer {
	t.Helper()
	b, err := cpu.Default().Alloc(n)
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Free() })
	return b.(*cpu.Buffer)
}

func TestDeviceProperties(t *testing.T) {
	d := cpu.Default()
	require.Equal(t, backend.CPU, d.Kind())
	require.Equal(t, 0, d.Ordinal())
	require.Equal(t, "cpu", d.Name())
	major, minor := d.ComputeCapability()
	require.Equal(t, [2]int{0, 0}, [2]int{major, minor})
	least, greatest := d.StreamPriorityRange()
	require.Equal(t, [2]int{0, 0}, [2]int{least, greatest})
	free, total, err := d.MemInfo()
	require.NoError(t, err)
	require.Positive(t, total)
	require.LessOrEqual(t, free, total)
	require.NoError(t, d.Synchronize())
}

func TestStreamPriorityClamped(t *testing.T) {
	for _, prio := range []int{-5, 0, 3} {
		s, err := cpu.Default().NewStream(prio)
		require.NoError(t, err)
		require.Equal(t, 0, s.Priority(), "priority %d", prio)
		require.True(t, s.Owned())
		require.NoError(t, s.Close())
	}
}

func TestAlloc(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	tests := []struct {
		name    string
		n       int
		pinned  bool
		wantErr string
	}{
		{name: "empty", n: 0},
		{name: "one byte", n: 1},
		{name: "page", n: 4096},
		{name: "1MiB pinned", n: 1 << 20, pinned: true},
		{name: "negative", n: -1, wantErr: "n=-1, expected n >= 0"},
		{name: "negative pinned", n: -7, pinned: true, wantErr: "n=-7, expected n >= 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := cpu.Default()
			var (
				b   backend.Buffer
				err error
			)
			if tc.pinned {
				b, err = d.AllocPinned(tc.n)
			} else {
				b, err = d.Alloc(tc.n)
			}
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.n, b.Size())
			require.Same(t, d, b.Device())
			wantKind := backend.DeviceMem
			if tc.pinned {
				wantKind = backend.PinnedMem
			}
			require.Equal(t, wantKind, b.Kind())
			if tc.n > 0 {
				require.NotZero(t, b.Ptr())
				require.Zero(t, b.Ptr()%4096, "mmap memory is page aligned")
				mem := cpu.HostBytes(b.Ptr(), tc.n)
				require.Equal(t, byte(0), mem[tc.n-1], "fresh anonymous memory is zero")
				mem[tc.n-1] = 7 // writable to the last byte
			}
			require.NoError(t, b.Free())
			require.Zero(t, b.Ptr(), "Ptr after Free")
			require.Nil(t, b.(*cpu.Buffer).Bytes())
			err = b.Free()
			require.ErrorIs(t, err, backend.ErrClosed)
		})
	}
}

func TestCopyAndMemset(t *testing.T) {
	s := newStream(t)
	src := alloc(t, 64)
	dst := alloc(t, 64)
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i)
	}
	require.NoError(t, s.Copy(dst.Ptr(), src.Ptr(), 64))
	require.Equal(t, src.Bytes(), dst.Bytes())

	// Overlapping copy behaves as memmove.
	require.NoError(t, s.Copy(src.Ptr()+1, src.Ptr(), 10))
	require.Equal(t, []byte{0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 11}, src.Bytes()[:12])

	for _, tc := range []struct {
		v byte
		n int
	}{{0, 64}, {0xAB, 1}, {0xCD, 33}, {0x11, 64}} {
		require.NoError(t, s.Memset(dst.Ptr(), 0xFF, 64))
		require.NoError(t, s.Memset(dst.Ptr(), tc.v, tc.n))
		for i, got := range dst.Bytes() {
			want := byte(0xFF)
			if i < tc.n {
				want = tc.v
			}
			require.Equal(t, want, got, "v=%#x n=%d byte %d", tc.v, tc.n, i)
		}
	}

	// A plain Go slice is a valid host address too (UVA-like).
	host, addr := testmem.Slice[byte](t, 8)
	require.NoError(t, s.Copy(addr, src.Ptr(), 8))
	require.Equal(t, src.Bytes()[:8], host)
}

func TestCopy2D(t *testing.T) {
	s := newStream(t)
	// 4 rows of 8 bytes; crop columns 2..5 into a 4-byte-pitch target.
	src := alloc(t, 32)
	for i := range src.Bytes() {
		src.Bytes()[i] = byte(i)
	}
	dst := alloc(t, 16)
	require.NoError(t, s.Copy2D(dst.Ptr(), 4, src.Ptr()+2, 8, 4, 4))
	require.Equal(t, []byte{2, 3, 4, 5, 10, 11, 12, 13, 18, 19, 20, 21, 26, 27, 28, 29}, dst.Bytes())

	// Contiguous case.
	full := alloc(t, 32)
	require.NoError(t, s.Copy2D(full.Ptr(), 8, src.Ptr(), 8, 8, 4))
	require.Equal(t, src.Bytes(), full.Bytes())
}

func TestStreamArgumentErrors(t *testing.T) {
	s := newStream(t)
	b := alloc(t, 16)
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"copy negative", func() error { return s.Copy(b.Ptr(), b.Ptr(), -1) }, "cpu.Stream.Copy: n=-1, expected n >= 0"},
		{"copy null dst", func() error { return s.Copy(0, b.Ptr(), 4) }, "dst=0 with n=4, expected a non-null address"},
		{"copy null src", func() error { return s.Copy(b.Ptr(), 0, 4) }, "src=0 with n=4, expected a non-null address"},
		{"memset negative", func() error { return s.Memset(b.Ptr(), 1, -2) }, "n=-2, expected n >= 0"},
		{"memset null", func() error { return s.Memset(0, 1, 2) }, "dst=0 with n=2"},
		{"copy2d width", func() error { return s.Copy2D(b.Ptr(), 4, b.Ptr(), 4, -1, 1) }, "width=-1, expected width >= 0"},
		{"copy2d height", func() error { return s.Copy2D(b.Ptr(), 4, b.Ptr(), 4, 1, -1) }, "height=-1, expected height >= 0"},
		{"copy2d dpitch", func() error { return s.Copy2D(b.Ptr(), 2, b.Ptr(), 4, 4, 1) }, "dpitch=2, expected dpitch >= width (4)"},
		{"copy2d spitch", func() error { return s.Copy2D(b.Ptr(), 4, b.Ptr(), 3, 4, 1) }, "spitch=3, expected spitch >= width (4)"},
		{"enqueue nil", func() error { return s.(backend.HostStream).Enqueue(nil) }, "fn=nil"},
		{"record nil", func() error { return s.Record(nil) }, "expected a *cpu.Event"},
		{"record foreign", func() error { return s.Record(&fakeEvent{}) }, "expected a *cpu.Event"},
		{"wait nil", func() error { return s.WaitEvent(nil) }, "ev=nil"},
		{"end capture without begin", func() error { _, err := s.EndCapture(); return err }, "not capturing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.call(), tc.want)
		})
	}
	// Zero-length operations accept null pointers, as memcpy(NULL, NULL, 0) would.
	require.NoError(t, s.Copy(0, 0, 0))
	require.NoError(t, s.Memset(0, 0, 0))
}

func TestEvents(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	d := cpu.Default()
	s := newStream(t)
	start, err := d.NewEvent(true)
	require.NoError(t, err)
	end, err := d.NewEvent(true)
	require.NoError(t, err)
	require.True(t, start.Timing())
	require.NotEqual(t, start.Handle(), end.Handle())

	require.NoError(t, s.Record(start))
	time.Sleep(2 * time.Millisecond)
	require.NoError(t, s.Record(end))
	done, err := end.Query()
	require.NoError(t, err)
	require.True(t, done)
	require.NoError(t, end.Synchronize())
	ms, err := start.ElapsedTime(end)
	require.NoError(t, err)
	require.GreaterOrEqual(t, ms, float32(2))
	require.NoError(t, s.WaitEvent(end))

	plain, err := d.NewEvent(false)
	require.NoError(t, err)
	unrecorded, err := d.NewEvent(true)
	require.NoError(t, err)
	closed, err := d.NewEvent(true)
	require.NoError(t, err)
	require.NoError(t, s.Record(closed))
	require.NoError(t, closed.Close())

	tests := []struct {
		name       string
		start, end backend.Event
		want       string
		closedErr  bool
	}{
		{"nil end", start, nil, "end=nil", false},
		{"foreign end", start, &fakeEvent{}, "expected a *cpu.Event", false},
		{"non-timing start", plain, end, "start event", false},
		{"non-timing end", start, plain, "timing=false, expected a timing event", false},
		{"unrecorded end", start, unrecorded, "has not been recorded", false},
		{"closed start", closed, end, "start event", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.start.ElapsedTime(tc.end)
			require.ErrorContains(t, err, tc.want)
			if tc.closedErr {
				require.ErrorIs(t, err, backend.ErrClosed)
			}
		})
	}

	// Use after Close.
	_, err = closed.Query()
	require.ErrorIs(t, err, backend.ErrClosed)
	require.ErrorIs(t, closed.Synchronize(), backend.ErrClosed)
	require.ErrorIs(t, s.Record(closed), backend.ErrClosed)
	require.ErrorIs(t, s.WaitEvent(closed), backend.ErrClosed)
	require.ErrorIs(t, closed.Close(), backend.ErrClosed)
	for _, ev := range []backend.Event{start, end, plain, unrecorded} {
		require.NoError(t, ev.Close())
	}
}

// fakeEvent stands for an event of another backend (a CUDA event).
type fakeEvent struct {
	mu     sync.Mutex
	synced int
	err    error
}

func (f *fakeEvent) Handle() uintptr                            { return 1 }
func (f *fakeEvent) Timing() bool                               { return false }
func (f *fakeEvent) Query() (bool, error)                       { return true, nil }
func (f *fakeEvent) ElapsedTime(backend.Event) (float32, error) { return 0, nil }
func (f *fakeEvent) Close() error                               { return nil }
func (f *fakeEvent) Synchronize() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.synced++
	return f.err
}

func TestWaitForeignEventBlocksHost(t *testing.T) {
	s := newStream(t)
	ev := &fakeEvent{}
	require.NoError(t, s.WaitEvent(ev))
	require.Equal(t, 1, ev.synced)
	ev.err = errors.New("boom")
	require.ErrorContains(t, s.WaitEvent(ev), "waiting for foreign event: boom")
}

func TestUseAfterClose(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	b := alloc(t, 8)
	ev, err := cpu.Default().NewEvent(false)
	require.NoError(t, err)
	defer func() { require.NoError(t, ev.Close()) }()
	require.NoError(t, s.Close())

	calls := map[string]func() error{
		"Copy":         func() error { return s.Copy(b.Ptr(), b.Ptr(), 8) },
		"Copy2D":       func() error { return s.Copy2D(b.Ptr(), 8, b.Ptr(), 8, 8, 1) },
		"Memset":       func() error { return s.Memset(b.Ptr(), 0, 8) },
		"Enqueue":      func() error { return s.(backend.HostStream).Enqueue(func() {}) },
		"Record":       func() error { return s.Record(ev) },
		"WaitEvent":    func() error { return s.WaitEvent(ev) },
		"Synchronize":  s.Synchronize,
		"Query":        func() error { _, err := s.Query(); return err },
		"BeginCapture": s.BeginCapture,
		"EndCapture":   func() error { _, err := s.EndCapture(); return err },
		"Close":        s.Close,
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, call(), backend.ErrClosed)
		})
	}
}

func TestWrapStream(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	d := cpu.Default()
	owner := newStream(t)
	w, err := d.WrapStream(owner.Handle())
	require.NoError(t, err)
	require.False(t, w.Owned())
	require.Equal(t, owner.Handle(), w.Handle())

	// The wrapper shares the owner's capture state: work issued through it
	// lands in the owner's graph.
	require.NoError(t, owner.BeginCapture())
	require.True(t, w.Capturing())
	require.NoError(t, w.(backend.HostStream).Enqueue(func() {}))
	g, err := owner.EndCapture()
	require.NoError(t, err)
	require.Equal(t, 1, g.Nodes())
	require.NoError(t, g.Close())

	// Closing a wrapper leaves the owner usable.
	require.NoError(t, w.Close())
	require.ErrorIs(t, w.Close(), backend.ErrClosed)
	require.NoError(t, owner.Synchronize())

	// Closing the owner invalidates remaining wrappers.
	w2, err := d.WrapStream(owner.Handle())
	require.NoError(t, err)
	require.NoError(t, owner.Close())
	require.ErrorIs(t, w2.Synchronize(), backend.ErrClosed)
	require.NoError(t, w2.Close())

	// A foreign handle gets its own stream; wrappers of it share order.
	f1, err := d.WrapStream(0)
	require.NoError(t, err)
	f2, err := d.WrapStream(0)
	require.NoError(t, err)
	require.NoError(t, f1.BeginCapture())
	require.True(t, f2.Capturing())
	g, err = f2.EndCapture()
	require.NoError(t, err)
	require.NoError(t, g.Close())
	require.NoError(t, f1.Close())
	require.NoError(t, f2.Close())
}

func TestGraphCapture(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	s := newStream(t)
	hs := s.(backend.HostStream)
	src := alloc(t, 4)
	dst := alloc(t, 4)
	copy(src.Bytes(), []byte{1, 2, 3, 4})
	ev, err := cpu.Default().NewEvent(true)
	require.NoError(t, err)
	defer ev.Close()

	runs := 0
	require.NoError(t, s.BeginCapture())
	require.True(t, s.Capturing())
	require.ErrorContains(t, s.BeginCapture(), "already capturing")
	require.ErrorContains(t, s.Synchronize(), "is capturing a graph")
	_, err = s.Query()
	require.ErrorContains(t, err, "is capturing a graph")

	require.NoError(t, s.Memset(dst.Ptr(), 9, 4))
	require.NoError(t, s.Copy(dst.Ptr(), src.Ptr(), 2))
	require.NoError(t, hs.Enqueue(func() { runs++ }))
	require.NoError(t, s.Record(ev))
	require.Equal(t, []byte{0, 0, 0, 0}, dst.Bytes(), "captured work must not run")
	require.Zero(t, runs)
	g, err := s.EndCapture()
	require.NoError(t, err)
	require.False(t, s.Capturing())
	require.Equal(t, 4, g.Nodes())
	_, err = ev.(*cpu.Event).ElapsedTime(ev)
	require.ErrorContains(t, err, "has not been recorded")

	for i := 1; i <= 3; i++ {
		require.NoError(t, g.Launch(s))
		require.Equal(t, []byte{1, 2, 9, 9}, dst.Bytes())
		require.Equal(t, i, runs)
	}
	_, err = ev.ElapsedTime(ev)
	require.NoError(t, err, "the replay recorded the event")

	// Launching into a capturing stream records one node.
	other := newStream(t)
	require.NoError(t, other.BeginCapture())
	require.NoError(t, g.Launch(other))
	outer, err := other.EndCapture()
	require.NoError(t, err)
	require.Equal(t, 1, outer.Nodes())
	require.NoError(t, outer.Launch(s))
	require.Equal(t, 4, runs)

	require.ErrorContains(t, g.Launch(nil), "expected a host stream")
	require.NoError(t, g.Close())
	require.ErrorIs(t, g.Launch(s), backend.ErrClosed)
	require.ErrorIs(t, g.Close(), backend.ErrClosed)
	require.NoError(t, outer.Close())
}

func TestStreamSerialisesGoroutines(t *testing.T) {
	s := newStream(t)
	hs := s.(backend.HostStream)
	const workers, each = 8, 200
	counter := 0 // not atomic: the stream's order is what protects it
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for range workers {
		wg.Go(func() {
			errs <- func() error {
				for range each {
					if err := hs.Enqueue(func() { counter++ }); err != nil {
						return err
					}
					if _, err := s.Query(); err != nil {
						return err
					}
				}
				return nil
			}()
		})
	}
	wg.Go(func() {
		errs <- func() error {
			for range each {
				if err := cpu.Default().Synchronize(); err != nil {
					return err
				}
				if err := s.Synchronize(); err != nil {
					return err
				}
			}
			return nil
		}()
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Equal(t, workers*each, counter)
}
