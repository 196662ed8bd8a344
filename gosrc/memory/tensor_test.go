package memory_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func newTensor(t *testing.T, a *memory.Allocator, shape ...int) *memory.DeviceTensor {
	t.Helper()
	tn, err := memory.NewDeviceTensor(a, backend.DeviceMem, shape, backend.Float32)
	require.NoError(t, err)
	return tn
}

// unlockAll releases every lock still held on tn.
func unlockAll(t *testing.T, tn *memory.DeviceTensor) {
	t.Helper()
	for st := tn.LockState(); st.Exclusive; st = tn.LockState() {
		require.NoError(t, tn.Unlock(st.ExclusiveOwner, true))
	}
	for owner, depth := range tn.LockState().Shared {
		for range depth {
			require.NoError(t, tn.Unlock(owner, false))
		}
	}
}

func TestNewDeviceTensor(t *testing.T) {
	tests := []struct {
		name        string
		kind        backend.MemKind
		shape       []int
		dtype       backend.DType
		wantSize    int
		wantStrides []int
		wantErr     string
	}{
		{name: "3d int8", kind: backend.DeviceMem, shape: []int{2, 3, 4}, dtype: backend.Int8, wantSize: 24, wantStrides: []int{12, 4, 1}},
		{name: "2d float32 pinned", kind: backend.PinnedMem, shape: []int{5, 7}, dtype: backend.Float32, wantSize: 140, wantStrides: []int{28, 4}},
		{name: "scalar", kind: backend.DeviceMem, shape: []int{}, dtype: backend.Complex64, wantSize: 8, wantStrides: []int{}},
		{name: "empty", kind: backend.DeviceMem, shape: []int{0, 16}, dtype: backend.Uint16, wantSize: 0, wantStrides: []int{32, 2}},
		{name: "negative dim", kind: backend.DeviceMem, shape: []int{4, -1}, dtype: backend.Int8, wantErr: "shape[1]=-1, expected a size >= 0"},
		{name: "bad dtype", kind: backend.DeviceMem, shape: []int{4}, dtype: backend.DType(99), wantErr: "dtype=DType(99), expected one of the backend.DType constants"},
		{name: "bad kind", kind: backend.MemKind(3), shape: []int{4}, dtype: backend.Int8, wantErr: "kind=3"},
		{name: "overflow", kind: backend.DeviceMem, shape: []int{1 << 40, 1 << 40}, dtype: backend.Int8, wantErr: "size too large"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAllocator(t, 0, 0)
			tn, err := memory.NewDeviceTensor(a, tc.kind, tc.shape, tc.dtype)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				requireNoUsage(t, a)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.shape, tn.Shape())
			require.Equal(t, tc.dtype, tn.DType())
			require.Equal(t, tc.kind, tn.Kind())
			require.Equal(t, tc.wantSize, tn.Size())
			require.Equal(t, tc.wantSize, tn.Capacity())
			require.Equal(t, tc.wantStrides, tn.Strides())
			require.Same(t, cpu.Default(), tn.Device())
			require.Equal(t, tc.wantSize > 0, tn.Ptr() != 0)
			require.NoError(t, tn.Close())
			require.ErrorIs(t, tn.Close(), backend.ErrClosed)
			require.Zero(t, tn.Ptr())
			requireNoUsage(t, a)
		})
	}
	_, err := memory.NewDeviceTensor(nil, backend.DeviceMem, []int{1}, backend.Int8)
	require.ErrorContains(t, err, "a=nil, expected an allocator")
}

func TestTensorLockRules(t *testing.T) {
	type step struct {
		owner     int64
		lock      bool // Lock, else Unlock
		exclusive bool
		wantErr   string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"shared by many", []step{{1, true, false, ""}, {2, true, false, ""}, {3, true, false, ""}, {2, false, false, ""}}},
		{"exclusive excludes shared", []step{{1, true, true, ""}, {2, true, false, "could not take the shared lock without waiting (held exclusively by owner 1)"}}},
		{"shared excludes exclusive", []step{{1, true, false, ""}, {2, true, false, ""}, {3, true, true, "could not take the exclusive lock without waiting (held shared by owners [1 2])"}}},
		{"exclusive is reentrant", []step{{1, true, true, ""}, {1, true, true, ""}, {1, false, true, ""}, {2, true, false, "held exclusively by owner 1"}, {1, false, true, ""}, {2, true, false, ""}}},
		{"exclusive holder may read", []step{{1, true, true, ""}, {1, true, false, ""}, {1, false, true, ""}, {2, true, true, "held shared by owners [1]"}, {1, false, false, ""}, {2, true, true, ""}}},
		{"shared is reentrant", []step{{1, true, false, ""}, {1, true, false, ""}, {1, false, false, ""}, {1, false, false, ""}, {1, false, false, "owner 1 does not hold the shared lock (not held)"}}},
		{"upgrade refused", []step{{1, true, false, ""}, {1, true, true, "upgrading to exclusive could deadlock"}}},
		{"unlock by non-holder", []step{{1, true, true, ""}, {2, false, true, "owner 2 does not hold the exclusive lock (held exclusively by owner 1)"}}},
		{"unlock wrong mode", []step{{1, true, false, ""}, {1, false, true, "owner 1 does not hold the exclusive lock (held shared by owners [1])"}}},
		{"unlock unheld", []step{{7, false, false, "owner 7 does not hold the shared lock (not held)"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tn := newTensor(t, newAllocator(t, 0, 0), 4)
			defer tn.Close()
			defer unlockAll(t, tn) // Close frees the memory only once no one holds the lock
			for i, s := range tc.steps {
				var err error
				if s.lock {
					err = tn.Lock(s.owner, s.exclusive, 0)
				} else {
					err = tn.Unlock(s.owner, s.exclusive)
				}
				if s.wantErr == "" {
					require.NoError(t, err, "step %d", i)
				} else {
					require.ErrorContains(t, err, s.wantErr, "step %d", i)
				}
			}
		})
	}
}

func TestTensorLockTimeout(t *testing.T) {
	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	defer tn.Close()
	defer unlockAll(t, tn)
	require.NoError(t, tn.Lock(1, true, -1))
	start := time.Now()
	err := tn.Lock(2, false, 30*time.Millisecond)
	require.GreaterOrEqual(t, time.Since(start), 30*time.Millisecond)
	require.ErrorIs(t, err, memory.ErrLockTimeout)
	require.EqualError(t, err, "memory.DeviceTensor.Lock: owner 2 timed out after 30ms waiting for the shared lock (held exclusively by owner 1): lock wait timed out")

	// A timed-out writer stops counting as waiting, so readers are not
	// held back by a writer that left.
	require.NoError(t, tn.Unlock(1, true))
	require.NoError(t, tn.Lock(1, false, -1))
	require.ErrorIs(t, tn.Lock(2, true, 10*time.Millisecond), memory.ErrLockTimeout)
	require.Zero(t, tn.LockState().WritersWaiting)
	require.NoError(t, tn.Lock(3, false, 0))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	err = tn.LockContext(ctx, 4, true)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "owner 4 stopped waiting for the exclusive lock (held shared by owners [1 3])")
}

func TestTensorWriterPreference(t *testing.T) {
	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	defer tn.Close()
	require.NoError(t, tn.Lock(1, false, -1))
	got := make(chan error, 1)
	go func() { got <- tn.Lock(2, true, -1) }()
	require.Eventually(t, func() bool { return tn.LockState().WritersWaiting == 1 }, time.Second, time.Millisecond)

	// A new reader waits behind the writer; the current reader may nest.
	require.ErrorIs(t, tn.Lock(3, false, 0), memory.ErrLockTimeout)
	require.NoError(t, tn.Lock(1, false, 0))
	require.NoError(t, tn.Unlock(1, false))
	select {
	case <-got:
		t.Fatal("writer got the lock while a reader held it")
	default:
	}
	require.NoError(t, tn.Unlock(1, false))
	require.NoError(t, <-got)
	st := tn.LockState()
	require.True(t, st.Exclusive)
	require.Equal(t, int64(2), st.ExclusiveOwner)
	require.Zero(t, st.WritersWaiting)
	require.NoError(t, tn.Unlock(2, true))
}

func TestTensorConcurrentLocking(t *testing.T) {
	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	defer tn.Close()
	var readers, writers atomic.Int32
	var wg sync.WaitGroup
	const owners, rounds = 16, 300
	errs := make(chan error, owners)
	for owner := range int64(owners) {
		wg.Go(func() {
			errs <- func() error {
				rng := rand.New(rand.NewPCG(uint64(owner), 1))
				for range rounds {
					exclusive := rng.IntN(4) == 0
					if err := tn.Lock(owner, exclusive, -1); err != nil {
						return err
					}
					// Check the exclusion, then undo the counts before
					// reporting, so other owners are not blamed for it.
					var bad error
					if exclusive {
						if w := writers.Add(1); w != 1 || readers.Load() != 0 {
							bad = fmt.Errorf("owner %d holds the write lock with %d writers and %d readers", owner, w, readers.Load())
						}
					} else {
						readers.Add(1)
						if w := writers.Load(); w != 0 {
							bad = fmt.Errorf("owner %d holds a read lock with %d writers", owner, w)
						}
					}
					if rng.IntN(8) == 0 {
						time.Sleep(10 * time.Microsecond)
					}
					if exclusive {
						writers.Add(-1)
					} else {
						readers.Add(-1)
					}
					if err := tn.Unlock(owner, exclusive); err != nil {
						return err
					}
					if bad != nil {
						return bad
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	st := tn.LockState()
	require.False(t, st.Exclusive)
	require.Empty(t, st.Shared)
	require.Zero(t, st.WritersWaiting)
}

func TestTensorResize(t *testing.T) {
	a := newAllocator(t, 0, 0)
	tn := newTensor(t, a, 4, 4) // 64 bytes
	ptr := tn.Ptr()

	// Same owner holding the lock: refused instead of deadlocking.
	for _, exclusive := range []bool{false, true} {
		require.NoError(t, tn.Lock(1, exclusive, -1))
		err := tn.Resize(1, []int{2}, backend.Float32)
		require.ErrorContains(t, err, "owner 1 holds the "+map[bool]string{false: "shared", true: "exclusive"}[exclusive]+" lock; resizing while holding the lock would deadlock")
		require.ErrorIs(t, err, memory.ErrLockHeld)
		require.NoError(t, tn.Unlock(1, exclusive))
	}

	tests := []struct {
		name      string
		shape     []int
		dtype     backend.DType
		wantCap   int
		wantMoved bool
		wantErr   string
	}{
		{"shrink keeps the allocation", []int{2, 2}, backend.Float32, 64, false, ""},
		{"same bytes other dtype", []int{64}, backend.Uint8, 64, false, ""},
		{"grow reallocates", []int{10, 10}, backend.Float64, 800, true, ""},
		{"to empty", []int{0}, backend.Int8, 800, false, ""},
		{"negative", []int{-3}, backend.Int8, 800, false, "shape[0]=-3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := tn.Ptr()
			if before == 0 {
				before = ptr
			}
			err := tn.Resize(2, tc.shape, tc.dtype)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.shape, tn.Shape())
			require.Equal(t, tc.dtype, tn.DType())
			require.Equal(t, tc.wantCap, tn.Capacity())
			require.Equal(t, int64(tc.wantCap), a.Budget().Usage().Device.Current, "only the live allocation is charged")
			if tc.wantMoved {
				ptr = tn.Ptr()
			} else {
				require.Equal(t, ptr, tn.Ptr())
			}
			require.False(t, tn.LockState().Exclusive, "Resize releases the lock")
		})
	}
	require.NoError(t, tn.Close())
	requireNoUsage(t, a)
	require.ErrorIs(t, tn.Resize(2, []int{1}, backend.Int8), backend.ErrClosed)
}

func TestTensorResizeWaitsForOtherOwner(t *testing.T) {
	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	defer tn.Close()
	require.NoError(t, tn.Lock(1, false, -1))
	done := make(chan error, 1)
	go func() { done <- tn.Resize(2, []int{1024}, backend.Float32) }()
	select {
	case err := <-done:
		t.Fatalf("Resize returned while owner 1 held the lock: %v", err)
	case <-time.After(50 * time.Millisecond):
	}
	require.Equal(t, []int{4}, tn.Shape(), "shape unchanged while the reader holds the lock")
	require.NoError(t, tn.Unlock(1, false))
	require.NoError(t, <-done)
	require.Equal(t, []int{1024}, tn.Shape())
	require.Equal(t, 4096, tn.Capacity())

	// Resize can be cancelled while it waits.
	require.NoError(t, tn.Lock(1, true, -1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	require.ErrorIs(t, tn.ResizeContext(ctx, 2, []int{1}, backend.Int8), context.DeadlineExceeded)
	require.NoError(t, tn.Unlock(1, true))
}

func TestTensorResizeFailureLeavesEmpty(t *testing.T) {
	a := newAllocator(t, 100, 0)
	tn := newTensor(t, a, 4) // 16 bytes
	err := tn.Resize(1, []int{50}, backend.Float32)
	var be *memory.BudgetError
	require.ErrorAs(t, err, &be)
	require.ErrorContains(t, err, "the tensor is left empty")
	require.Zero(t, tn.Ptr())
	require.Zero(t, tn.Size())
	require.False(t, tn.LockState().Exclusive)
	require.NoError(t, tn.Resize(1, []int{25}, backend.Float32))
	require.Equal(t, 100, tn.Capacity())
	require.NoError(t, tn.Close())
	requireNoUsage(t, a)
}

func TestTensorReadyEvent(t *testing.T) {
	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer s.Close()
	require.NoError(t, tn.Lock(1, true, -1))
	require.NoError(t, s.Memset(tn.Ptr(), 1, tn.Size()))
	require.NoError(t, tn.SetReady(s))
	require.NoError(t, tn.Unlock(1, true))
	require.NoError(t, tn.WaitReady(s))
	require.ErrorContains(t, tn.SetReady(nil), "s=nil")
	require.ErrorContains(t, tn.Written(nil), "s=nil")
	require.ErrorContains(t, tn.WaitReady(nil), "s=nil")
	require.NoError(t, tn.Close())
	require.ErrorIs(t, tn.SetReady(s), backend.ErrClosed)
	require.ErrorIs(t, tn.Written(s), backend.ErrClosed)
	require.ErrorIs(t, tn.WaitReady(s), backend.ErrClosed)
}

// countingStream counts the ready-event records and waits queued on a CPU
// stream, and can refuse records.
type countingStream struct {
	backend.Stream
	records, waits int
	refuse         error
}

func (s *countingStream) Record(ev backend.Event) error {
	if s.refuse != nil {
		return s.refuse
	}
	s.records++
	return s.Stream.Record(ev)
}

func (s *countingStream) WaitEvent(ev backend.Event) error {
	s.waits++
	return s.Stream.WaitEvent(ev)
}

func newCountingStream(t *testing.T) *countingStream {
	t.Helper()
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return &countingStream{Stream: s}
}

// Written defers the ready record to the first reader that asks for it,
// or to Close, and records it once however many writes it covers.
func TestTensorWrittenDefersTheReadyRecord(t *testing.T) {
	errRefused := errors.New("refused")
	tests := []struct {
		name                  string
		run                   func(t *testing.T, tn *memory.DeviceTensor, w, r *countingStream)
		writerRecords, rWaits int
	}{
		{"no reader: no record", func(t *testing.T, tn *memory.DeviceTensor, w, r *countingStream) {
			for range 100 {
				require.NoError(t, tn.Written(w))
			}
		}, 0, 0},
		{"a reader: one record, on the writer's stream", func(t *testing.T, tn *memory.DeviceTensor, w, r *countingStream) {
			for range 3 {
				require.NoError(t, tn.Written(w))
			}
			require.NoError(t, tn.WaitReady(r))
			require.NoError(t, tn.WaitReady(r)) // nothing written since: a wait only
		}, 1, 2},
		{"a write after a read: a record again", func(t *testing.T, tn *memory.DeviceTensor, w, r *countingStream) {
			require.NoError(t, tn.Written(w))
			require.NoError(t, tn.WaitReady(r))
			require.NoError(t, tn.Written(w))
			require.NoError(t, tn.WaitReady(r))
		}, 2, 2},
		{"SetReady supersedes the deferred record", func(t *testing.T, tn *memory.DeviceTensor, w, r *countingStream) {
			require.NoError(t, tn.Written(w))
			require.NoError(t, tn.SetReady(r))
			require.NoError(t, tn.WaitReady(r))
		}, 0, 1},
		{"a refused record is the reader's error, and retried by the next", func(t *testing.T, tn *memory.DeviceTensor, w, r *countingStream) {
			require.NoError(t, tn.Written(w))
			w.refuse = errRefused
			require.ErrorIs(t, tn.WaitReady(r), errRefused)
			require.ErrorIs(t, tn.WaitReady(r), errRefused, "never a wait that misses the write")
			w.refuse = nil
			require.NoError(t, tn.WaitReady(r))
		}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tn := newTensor(t, newAllocator(t, 0, 0), 4)
			w, r := newCountingStream(t), newCountingStream(t)
			tt.run(t, tn, w, r)
			require.Equal(t, tt.writerRecords, w.records, "records on the writer's stream")
			require.Equal(t, tt.rWaits, r.waits, "waits on the reader's stream")
			require.NoError(t, tn.Close())
		})
	}
}

// Random sequences of Written, SetReady, WaitReady and Close on three
// streams against a model of the deferral: the ready event is recorded on
// the deferred stream exactly when a reader waits or the tensor closes,
// once, and on SetReady's stream at once; every call after Close is
// refused as closed and queues nothing.
func TestTensorReadyRecordsMatchTheModel(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		tn := newTensor(t, newAllocator(t, 0, 0), 4)
		streams := []*countingStream{newCountingStream(t), newCountingStream(t), newCountingStream(t)}
		records, waits := make([]int, len(streams)), make([]int, len(streams))
		pending, closed := -1, false
		var ops []string
		for range 1 + rng.IntN(30) {
			i := rng.IntN(len(streams))
			s := streams[i]
			var err error
			switch op := rng.IntN(7); {
			case op < 3:
				ops = append(ops, fmt.Sprintf("Written(%d)", i))
				err = tn.Written(s)
				if !closed {
					pending = i
				}
			case op < 4:
				ops = append(ops, fmt.Sprintf("SetReady(%d)", i))
				err = tn.SetReady(s)
				if !closed {
					records[i]++
					pending = -1
				}
			case op < 6:
				ops = append(ops, fmt.Sprintf("WaitReady(%d)", i))
				err = tn.WaitReady(s)
				if !closed {
					if pending >= 0 {
						records[pending]++
						pending = -1
					}
					waits[i]++
				}
			default:
				ops = append(ops, "Close")
				err = tn.Close()
				if !closed && pending >= 0 {
					records[pending]++
					pending = -1
				}
				if closed {
					require.ErrorIs(t, err, backend.ErrClosed, "seed %d: %v", seed, ops)
					err = nil
				}
				closed = true
			}
			if closed && ops[len(ops)-1] != "Close" {
				require.ErrorIs(t, err, backend.ErrClosed, "seed %d: %v", seed, ops)
			} else {
				require.NoError(t, err, "seed %d: %v", seed, ops)
			}
			for j, st := range streams {
				require.Equal(t, records[j], st.records, "seed %d: records on stream %d after %v", seed, j, ops)
				require.Equal(t, waits[j], st.waits, "seed %d: waits on stream %d after %v", seed, j, ops)
			}
		}
		if !closed {
			require.NoError(t, tn.Close())
		}
	}
}

// Close records a deferred ready event while the writer's stream is still
// open, so a holder that asks after Close waits for the last write.
func TestTensorCloseRecordsTheDeferredReadyEvent(t *testing.T) {
	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	w, r := newCountingStream(t), newCountingStream(t)
	require.NoError(t, tn.Lock(7, false, -1))
	require.NoError(t, tn.Written(w))
	require.NoError(t, tn.Close())
	require.Equal(t, 1, w.records, "Close records the deferred event")
	require.NoError(t, tn.WaitReady(r), "the holder still reads until it unlocks")
	require.Equal(t, 1, w.records)
	require.NoError(t, tn.Unlock(7, false))

	tn = newTensor(t, newAllocator(t, 0, 0), 4)
	require.NoError(t, tn.Written(w))
	w.refuse = errors.New("stream gone")
	require.ErrorContains(t, tn.Close(), "stream gone", "a failed record is Close's error")
	require.ErrorIs(t, tn.WaitReady(r), backend.ErrClosed, "and the tensor is still freed")
}

func TestTensorCloseWhileHeld(t *testing.T) {
	a := newAllocator(t, 0, 0)
	tn := newTensor(t, a, 256)
	require.NoError(t, tn.Lock(1, false, -1))
	waiter := make(chan error, 1)
	go func() { waiter <- tn.Lock(2, true, -1) }()
	require.Eventually(t, func() bool { return tn.LockState().WritersWaiting == 1 }, time.Second, time.Millisecond)

	require.NoError(t, tn.Close())
	require.ErrorIs(t, <-waiter, backend.ErrClosed, "waiters are released by Close")
	require.ErrorIs(t, tn.Lock(3, false, 0), backend.ErrClosed)
	require.NotZero(t, tn.Ptr(), "memory stays valid for the holder")
	require.Equal(t, int64(1024), a.Budget().Usage().Device.Current)
	require.NoError(t, tn.Unlock(1, false))
	require.Zero(t, tn.Ptr(), "freed by the last unlock")
	requireNoUsage(t, a)
}
