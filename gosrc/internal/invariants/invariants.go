package invariants

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// Violation is the panic value of a misuse caught in an invariant build.
// It wraps the error a user build returns, so a test that recovers it can
// still check errors.Is(v, backend.ErrClosed).
type Violation struct {
	Err    error  // what a user build returns
	Report string // the error, the object, and where it was made and closed
}

func (v *Violation) Error() string { return v.Report }
func (v *Violation) Unwrap() error { return v.Err }

// Leak is one tracked object still open, or one lock still held.
type Leak struct {
	Kind  string  // e.g. "cpu.Stream", or the lock's description
	ID    uintptr // the object's handle or id; 0 for locks
	Lock  bool    // a held lock rather than an open object
	Stack string  // where it was made (or the lock taken)
}

func (l Leak) String() string {
	if l.Lock {
		return fmt.Sprintf("%s, taken at:\n%s", l.Kind, l.Stack)
	}
	return fmt.Sprintf("%s %#x never closed, created at:\n%s", l.Kind, l.ID, l.Stack)
}

// Runner is *testing.M; an interface so this package does not import
// testing into non-test binaries.
type Runner interface{ Run() int }

// maxReported bounds the report: one leaky helper can make thousands.
const maxReported = 20

// RunTests runs the package's tests and then, in invariant builds, fails
// them (exit code 1) if any tracked object is still open or lock held,
// printing where each was made:
//
//	func TestMain(m *testing.M) { os.Exit(invariants.RunTests(m)) }
func RunTests(m Runner) int {
	code := m.Run()
	if code != 0 || !Enabled {
		return code
	}
	if msg := LeakReport(Live()); msg != "" {
		fmt.Fprint(os.Stderr, msg)
		return 1
	}
	return 0
}

// LeakReport describes leaks for a test failure; "" when there are none.
func LeakReport(leaks []Leak) string {
	if len(leaks) == 0 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "invariants: %d objects or locks leaked by these tests (closed by no one):\n", len(leaks))
	if len(leaks) > maxReported {
		b.WriteString(bySite(leaks))
	}
	for i, l := range leaks {
		if i == maxReported {
			fmt.Fprintf(&b, "... and %d more\n", len(leaks)-maxReported)
			break
		}
		fmt.Fprintf(&b, "%d. %s", i+1, l)
	}
	return b.String()
}

// Cleaner is the part of *testing.T that AllowMisuse needs.
type Cleaner interface{ Cleanup(func()) }

// AllowMisuse makes misuse return its error instead of panicking until
// the test ends, for tests that check what a user sees (ErrClosed) after
// a deliberate use after close or double close. It is process-wide:
// parallel tests of the package are covered too while it lasts.
func AllowMisuse(t Cleaner) {
	allowMisuse(1)
	t.Cleanup(func() { allowMisuse(-1) })
}

// bySite counts leaks by kind and the call that made them (the binding's
// frame when there is one: the call from Python), most first, so a report
// of hundreds names its few causes.
func bySite(leaks []Leak) string {
	counts := map[string]int{}
	for _, l := range leaks {
		site := ""
		for _, line := range strings.Split(l.Stack, "\n") {
			if fn := strings.TrimSpace(line); fn != "" && !strings.HasPrefix(fn, "/") && !strings.Contains(fn, ".go:") {
				site = fn
				if strings.Contains(fn, "/gosrc/pyapi.") {
					break
				}
			}
		}
		counts[l.Kind+" <- "+site]++
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	b.WriteString("by kind and where made:\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%6d  %s\n", counts[k], k)
	}
	return b.String()
}
