// Package virtualtest runs tests against the virtual OCT instrument
// (instruments/virtual): it builds the fake vendor libraries with
// `make virtual` once per test binary and points the drivers' loaders at
// them, or records why it could not (no gcc or make), so that each test
// that needs them skips with that reason.
package virtualtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"unsafe"
)

var skip string // why the libraries are unavailable ("" when built)

// Dir is the folder the libraries are built into (build/virtual).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "build", "virtual")
}

// Main builds the libraries, sets the environment variables of env that
// are not set yet (the model reads them when it loads), points
// VORTEXGO_ATSAPI_LIBRARY at the virtual digitizer unless it is set, and
// runs the tests.
func Main(m *testing.M, env map[string]string) {
	root := filepath.Join(Dir(), "..", "..")
	if _, err := exec.LookPath("gcc"); err != nil {
		skip = "gcc not found: the virtual instrument (instruments/virtual) is built with gcc"
	} else if _, err := exec.LookPath("make"); err != nil {
		skip = "make not found: the virtual instrument is built by `make virtual`"
	} else {
		cmd := exec.Command("make", "-s", "virtual")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "make virtual: %v\n%s", err, out)
			os.Exit(1)
		}
	}
	for k, v := range env {
		if _, ok := os.LookupEnv(k); !ok {
			_ = os.Setenv(k, v)
		}
	}
	if _, ok := os.LookupEnv("VORTEXGO_ATSAPI_LIBRARY"); !ok {
		_ = os.Setenv("VORTEXGO_ATSAPI_LIBRARY", filepath.Join(Dir(), "libATSApi.so"))
	}
	os.Exit(m.Run())
}

// Require skips t when the libraries could not be built.
func Require(t testing.TB) {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
}

// Addr is the address of b's first byte (memory outside the Go heap, such
// as an mmap, that C may keep).
func Addr(b []byte) uintptr { return uintptr(unsafe.Pointer(unsafe.SliceData(b))) }

// Uint16s views b as uint16s.
func Uint16s(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// MaxDiff is the largest |a[i]-b[i]| (len(a) when the lengths differ).
func MaxDiff(a, b []uint16) int {
	if len(a) != len(b) {
		return len(a) + len(b) + 1<<16
	}
	m := 0
	for i := range a {
		d := int(a[i]) - int(b[i])
		m = max(m, d, -d)
	}
	return m
}
