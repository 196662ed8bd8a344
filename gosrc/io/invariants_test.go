package io_test

import (
	"os"
	"testing"

	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// TestMain fails the package's tests if they leave streams, events,
// buffers or graphs open or tensor locks held (in invariant builds:
// -tags invariants, or -race).
func TestMain(m *testing.M) { os.Exit(invariants.RunTests(m)) }
