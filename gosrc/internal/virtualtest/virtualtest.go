// Package virtualtest runs tests against the virtual OCT instrument
// (instruments/virtual): it builds the fake vendor libraries with
// `make virtual` once per test binary and points the drivers' loaders at
// them, or skips each test that needs them with the reason it could not
// (no gcc or make).
package virtualtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"unsafe"
)

var (
	once sync.Once
	skip string // why the libraries are unavailable ("" when built)
)

// Dir is the folder the libraries are built into (build/virtual).
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "build", "virtual")
}

// build runs `make virtual` once per process, or records why it cannot.
func build() {
	root := filepath.Join(Dir(), "..", "..")
	if _, err := exec.LookPath("gcc"); err != nil {
		skip = "gcc not found: the virtual instrument (instruments/virtual) is built with gcc"
		return
	}
	if _, err := exec.LookPath("make"); err != nil {
		skip = "make not found: the virtual instrument is built by `make virtual`"
		return
	}
	cmd := exec.Command("make", "-s", "virtual")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		skip = fmt.Sprintf("make virtual failed: %v\n%s", err, out)
	}
}

// Require builds the libraries (once), sets the environment variables of
// env that are not set yet (the model reads them when it loads, so they
// must be set before the first driver call of the process) and points
// VORTEXGO_ATSAPI_LIBRARY at the virtual digitizer unless it is set. It
// skips t, with the reason, when the libraries cannot be built.
func Require(t testing.TB, env map[string]string) {
	t.Helper()
	once.Do(build)
	if skip != "" {
		t.Skip(skip)
	}
	for k, v := range env {
		if _, ok := os.LookupEnv(k); !ok {
			_ = os.Setenv(k, v)
		}
	}
	if _, ok := os.LookupEnv("VORTEXGO_ATSAPI_LIBRARY"); !ok {
		_ = os.Setenv("VORTEXGO_ATSAPI_LIBRARY", filepath.Join(Dir(), "libATSApi.so"))
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
