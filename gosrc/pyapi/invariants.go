package pyapi

import (
	"os"

	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// The test-only invariants (gosrc/internal/invariants) in the Python
// extension: `make py-test-invariants` builds it with -tags invariants and
// runs the Python tests against it; tests_py/conftest.py fails the run
// when Go's leak report at exit is not empty. In user builds these report
// nothing.

// InvariantsEnabled is true in an extension built with -tags invariants.
func InvariantsEnabled() bool { return invariants.Enabled }

// InvariantLeaks is Go's report of the streams, events, buffers, graphs
// and tensor locks still open, with where each was made; "" when none (or
// in a user build).
func InvariantLeaks() string { return invariants.LeakReport(invariants.Live()) }

// With VORTEXGO_ALLOW_MISUSE=1 in the environment (make py-test-invariants
// sets it, so the tests' subprocesses inherit it), use after close and
// double close return their errors for the whole process instead of
// panicking: the Python tests check what a user sees after a deliberate
// misuse (ClosedError), and leaks are what this build is for.
func init() {
	if os.Getenv("VORTEXGO_ALLOW_MISUSE") == "1" {
		invariants.AllowMisuse(processLifetime{})
	}
}

// processLifetime is a Cleaner whose cleanups never run.
type processLifetime struct{}

func (processLifetime) Cleanup(func()) {}
