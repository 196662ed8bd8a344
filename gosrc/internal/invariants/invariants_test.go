package invariants_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

var errClosed = errors.New("use of closed object")

// recovered runs fn and returns the *Violation it panicked with, if any.
func recovered(fn func() error) (v *invariants.Violation, err error) {
	defer func() {
		if r := recover(); r != nil {
			v = r.(*invariants.Violation)
		}
	}()
	return nil, fn()
}

// liveKinds counts the live leaks whose kind starts with prefix, so the
// test ignores anything else in the process.
func liveKinds(prefix string) int {
	n := 0
	for _, l := range invariants.Live() {
		if strings.HasPrefix(l.Kind, prefix) {
			n++
		}
	}
	return n
}

func TestMisuse(t *testing.T) {
	tests := []struct {
		name  string
		close bool // Release before the misuse
		allow bool // under AllowMisuse
	}{
		{"use after close", true, false},
		{"misuse of an open object", false, false},
		{"allowed", true, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.allow {
				invariants.AllowMisuse(t)
			}
			o := invariants.Track("test.Misuse", 0x42)
			if tc.close {
				o.Release()
			}
			v, err := recovered(func() error { return o.Misuse(errClosed) })
			if !invariants.Enabled || tc.allow {
				require.Nil(t, v, "no panic outside invariant builds or under AllowMisuse")
				require.ErrorIs(t, err, errClosed)
				o.Release()
				return
			}
			require.NotNil(t, v, "invariant builds panic on misuse")
			require.ErrorIs(t, v, errClosed, "the violation wraps the user-facing error")
			require.Contains(t, v.Error(), "test.Misuse 0x42 created at:")
			require.Contains(t, v.Error(), "invariants_test.TestMisuse")
			require.Equal(t, tc.close, strings.Contains(v.Error(), "closed at:"))
			o.Release()
		})
	}
}

func TestLiveObjectsAndLocks(t *testing.T) {
	before := liveKinds("test.Obj")
	a := invariants.Track("test.Obj", 1)
	b := invariants.Track("test.Obj", 2)
	t.Cleanup(a.Release)
	t.Cleanup(b.Release)
	key := new(int)
	invariants.Acquired("test.LiveLock", key, 7, true)
	invariants.Acquired("test.LiveLock", key, 7, true) // nested
	if !invariants.Enabled {
		require.Empty(t, invariants.Live())
		return
	}
	require.Equal(t, before+2, liveKinds("test.Obj"))
	require.Equal(t, 1, liveKinds("test.LiveLock exclusive lock held 2 deep by owner 7"))
	a.Release()
	a.Release() // the first Release wins; a second is harmless
	require.Equal(t, before+1, liveKinds("test.Obj"))
	invariants.Released(key, 7, true)
	require.Equal(t, 1, liveKinds("test.LiveLock exclusive lock held 1 deep"))
	invariants.Released(key, 7, true)
	require.Zero(t, liveKinds("test.LiveLock"))
	invariants.Released(key, 7, true) // unlocking an unrecorded lock is ignored
	b.Release()
	require.Equal(t, before, liveKinds("test.Obj"))
}

type fakeRunner int

func (r fakeRunner) Run() int { return int(r) }

func TestRunTestsReportsLeaks(t *testing.T) {
	o := invariants.Track("test.RunTests", 3)
	t.Cleanup(o.Release)
	want := 0
	if invariants.Enabled {
		want = 1
	}
	require.Equal(t, want, invariants.RunTests(fakeRunner(0)), "a leak fails the run in invariant builds")
	o.Release()
	require.Equal(t, 2, invariants.RunTests(fakeRunner(2)), "a failed run keeps its code")
	require.Zero(t, liveKinds("test.RunTests"))

	report := invariants.LeakReport([]invariants.Leak{{Kind: "x.Stream", ID: 0x10, Stack: "\tf\n"}, {Kind: "x lock", Lock: true, Stack: "\tg\n"}})
	require.Equal(t, "invariants: 2 objects or locks leaked by these tests (closed by no one):\n1. x.Stream 0x10 never closed, created at:\n\tf\n2. x lock, taken at:\n\tg\n", report)
	require.Empty(t, invariants.LeakReport(nil))
}

// TestLeakReportCountsBySite: a report longer than the 20 it lists names its
// causes: counts by kind and the binding's frame that made them.
func TestLeakReportCountsBySite(t *testing.T) {
	stack := func(fns ...string) string {
		var s string
		for _, f := range fns {
			s += "\t" + f + "\n\t\t/src/x.go:1\n"
		}
		return s
	}
	var leaks []invariants.Leak
	for i := range 25 {
		fn := "github.com/vortexgo/vortexgo/gosrc/pyapi.(*Engine).Prepare"
		if i%3 == 0 {
			fn = "github.com/vortexgo/vortexgo/gosrc/pyapi.NewStream"
		}
		leaks = append(leaks, invariants.Leak{Kind: "cpu.Event", ID: uintptr(i + 1),
			Stack: stack("github.com/vortexgo/vortexgo/gosrc/cpu.(*Device).NewEvent", fn, "main.pyapi_X")})
	}
	report := invariants.LeakReport(leaks)
	require.Contains(t, report, "    16  cpu.Event <- github.com/vortexgo/vortexgo/gosrc/pyapi.(*Engine).Prepare\n")
	require.Contains(t, report, "     9  cpu.Event <- github.com/vortexgo/vortexgo/gosrc/pyapi.NewStream\n")
	require.NotContains(t, invariants.LeakReport(leaks[:2]), "by kind and where made")
}
