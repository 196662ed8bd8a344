package scan

import (
	"os"
	"testing"

	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// TestMain runs the package's tests under the project's invariant checks.
func TestMain(m *testing.M) { os.Exit(invariants.RunTests(m)) }
