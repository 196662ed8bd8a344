package endpoint

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// TestOpWriterPanic: a panic in a stack endpoint's storage writer (a
// storage operation the writer goroutine runs) is the writer's sticky
// error (fail once, flush returns it with the panic and its stack), not
// the end of the process; the job still goes back (flush returns), the
// writer goroutine keeps serving jobs, and close ends it.
func TestOpWriterPanic(t *testing.T) {
	tests := []struct {
		name string
		op   opKind
		t    target
	}{
		{"volume", opVolume, target{volume: func([]byte) error { panic("boom in volume") }}},
		{"partial", opPartial, target{partial: func(int, int, []byte) error { panic("boom in partial") }}},
		{"nil target func", opMulti, target{}}, // a nil func call: a runtime fault
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			fails := make(chan error, 4)
			o := newOpWriter("TestEndpoint", tc.t, func(err error) { fails <- err }, nil)
			for block := range int64(2) {
				j := o.take(block)
				j.add(tc.op, 0, 0, []byte{1, 2})
				require.NoError(t, o.send(j, nil))
			}
			err := o.flush()
			require.ErrorContains(t, err, "TestEndpoint: storing block 0: TestEndpoint: writer: internal error (Go panic: ")
			require.ErrorContains(t, err, "goroutine ", "the stack is in the error")
			require.Len(t, fails, 1, "reported once")
			require.Equal(t, err, <-fails)
			// The writer still serves jobs (they are skipped after the
			// error, as after any failed write) and ends at close.
			j := o.take(2)
			j.add(tc.op, 0, 0, []byte{3})
			require.NoError(t, o.send(j, nil))
			require.Equal(t, err, o.flush())
			o.close()
			deadline := time.Now().Add(5 * time.Second)
			for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			require.LessOrEqual(t, runtime.NumGoroutine(), before, "the writer goroutine ended")
		})
	}
}

// TestTensorFormatPanicReleasesTheLock: a panic while a tensor endpoint
// formats under the engine's lock is Format's error, and the lock is
// released: the next Format (and a user's lock) does not hang on it.
func TestTensorFormatPanicReleasesTheLock(t *testing.T) {
	ex, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{SampleSlice: format.NullSlice()})
	require.NoError(t, err)
	e, err := NewStreamHostTensorEndpoint(StreamCounter, ex, []int{3, 4, 1})
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: cpu.Default(), Owner: 1, RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4}))
	p := streamPlans[0]
	err = e.Format(counterBlock(0, p.sample, p.records), nil) // a nil plan: a nil dereference under the lock
	require.ErrorContains(t, err, "internal error (Go panic: runtime error: invalid memory address or nil pointer dereference)")
	require.ErrorContains(t, err, "goroutine ", "the stack is in the error")
	done := make(chan error, 1)
	go func() {
		done <- e.Format(counterBlock(0, p.sample, p.records), &engine.FormatPlan{Actions: p.actions})
	}()
	select {
	case err := <-done:
		require.NoError(t, err, "the lock was released")
	case <-time.After(10 * time.Second):
		t.Fatal("Format hung on the lock the panicking Format held")
	}
	require.NoError(t, e.Close())
}
