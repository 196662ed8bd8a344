package guard_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

var errSentinel = errors.New("sentinel")

func deep(n int) {
	if n == 0 {
		panic("deep down")
	}
	deep(n - 1)
}

// TestCall: a panic inside Call becomes a *PanicError naming the place,
// the value and the panicking frames; a plain error or success passes
// through unchanged.
func TestCall(t *testing.T) {
	var nilMap map[string]int
	tests := []struct {
		name  string
		fn    func() error
		value string // in the error text; "" means no panic
		is    error  // errors.Is target, when the panic value is an error
	}{
		{"success", func() error { return nil }, "", nil},
		{"plain error", func() error { return errSentinel }, "", errSentinel},
		{"string panic", func() error { panic("boom") }, "Go panic: boom", nil},
		{"error panic", func() error { panic(errSentinel) }, "Go panic: sentinel", errSentinel},
		{"runtime fault", func() error { nilMap["x"] = 1; return nil }, "assignment to entry in nil map", nil},
		{"deep stack", func() error { deep(2000); return nil }, "Go panic: deep down", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := guard.Call("here", tc.fn)
			if tc.value == "" {
				if tc.is == nil {
					require.NoError(t, err)
				} else {
					require.Same(t, tc.is, err, "a returned error passes through unchanged")
				}
				return
			}
			var pe *guard.PanicError
			require.ErrorAs(t, err, &pe)
			require.Equal(t, "here", pe.Where)
			first, stack, _ := strings.Cut(err.Error(), "\n")
			require.True(t, strings.HasPrefix(first, "here: internal error (Go panic: "), first)
			require.Contains(t, err.Error(), tc.value)
			require.Contains(t, stack, "guard_test.", "the panicking frames are in the stack")
			require.LessOrEqual(t, len(pe.Stack), guard.MaxStack+len("\n... (stack trimmed)"))
			require.Equal(t, tc.name == "deep stack", strings.HasSuffix(stack, "(stack trimmed)"), "only a deep stack is trimmed")
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
			}
		})
	}
}

// TestRecoverJoins: Recover keeps an error the function already returned
// and adds the panic.
func TestRecoverJoins(t *testing.T) {
	f := func() (err error) {
		defer guard.Recover(&err, "f")
		err = errSentinel
		panic("late")
	}
	err := f()
	require.ErrorIs(t, err, errSentinel)
	require.ErrorContains(t, err, "f: internal error (Go panic: late)")
}

// TestInvariantViolationsStayPanics: in invariant builds (this test runs
// with -race) a misuse the invariants caught is not turned into an error.
func TestInvariantViolationsStayPanics(t *testing.T) {
	if !invariants.Enabled {
		t.Skip("invariant builds only (-race or -tags invariants)")
	}
	v := &invariants.Violation{Err: errSentinel, Report: "misuse"}
	require.PanicsWithValue(t, v, func() { _ = guard.Call("here", func() error { panic(v) }) })
}

// TestTestPanic: the debug_panic hook panics only with
// VORTEXGO_TEST_PANICS=1, and otherwise refuses with the caller's
// sentinel.
func TestTestPanic(t *testing.T) {
	t.Setenv(guard.TestPanicsEnv, "")
	require.ErrorIs(t, guard.TestPanic("x", errSentinel), errSentinel)
	t.Setenv(guard.TestPanicsEnv, "1")
	require.PanicsWithValue(t, "x: debug_panic (test hook, VORTEXGO_TEST_PANICS=1)", func() { _ = guard.TestPanic("x", errSentinel) })
}

// TestUndo: the undo runs only when the deferring function panics, and
// the panic goes on with its value.
func TestUndo(t *testing.T) {
	undone := 0
	f := func(fail bool) {
		defer guard.Undo(func() { undone++ })
		if fail {
			panic("boom")
		}
	}
	f(false)
	require.Zero(t, undone)
	require.PanicsWithValue(t, "boom", func() { f(true) })
	require.Equal(t, 1, undone)
}
