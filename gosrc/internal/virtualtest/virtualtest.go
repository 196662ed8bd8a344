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
	"syscall"
	"testing"
	"unsafe"
)

var (
	once sync.Once
	skip string // why the libraries cannot be built here (no gcc or make)
	fail string // why building them failed: a test failure, not a skip
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
	// go test runs packages in parallel processes: one make at a time
	// writes build/virtual (an advisory lock beside it).
	if err := os.MkdirAll(filepath.Join(root, "build"), 0o755); err != nil {
		fail = fmt.Sprintf("make virtual: %v", err)
		return
	}
	lock, err := os.OpenFile(filepath.Join(root, "build", ".virtual.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		fail = fmt.Sprintf("make virtual: %v", err)
		return
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		fail = fmt.Sprintf("make virtual: lock: %v", err)
		return
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
	cmd := exec.Command("make", "-s", "virtual")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fail = fmt.Sprintf("make virtual failed: %v\n%s", err, out)
	}
}

// Library builds the libraries (once, as Require) and returns the path of
// build/virtual/<name> (libnidaqmx.so ...), skipping t with the reason when
// they cannot be built.
func Library(t testing.TB, name string) string {
	t.Helper()
	once.Do(build)
	if fail != "" {
		t.Fatal(fail)
	}
	if skip != "" {
		t.Skip(skip)
	}
	p := filepath.Join(Dir(), name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("make virtual built no %s: %v", p, err)
	}
	return p
}

// Require builds the libraries (once), sets the environment variables of
// env that are not set yet (the model reads them when it loads, so they
// must be set before the first driver call of the process) and points
// VORTEXGO_ATSAPI_LIBRARY at the virtual digitizer unless it is set. It
// skips t, with the reason, when the libraries cannot be built.
func Require(t testing.TB, env map[string]string) {
	t.Helper()
	once.Do(build)
	if fail != "" {
		t.Fatal(fail)
	}
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
