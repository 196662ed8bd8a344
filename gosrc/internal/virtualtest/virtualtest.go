// Package virtualtest builds the virtual instrument's fake vendor
// libraries (instruments/virtual, `make virtual`) for the tests of the
// drivers that load them. Tests only: nothing else imports it.
package virtualtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
)

var (
	once   sync.Once
	root   string
	output []byte
	err    error
)

// Root is the repository's root (where the Makefile is).
func Root(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	r := filepath.Join(filepath.Dir(file), "..", "..", "..")
	if _, err := os.Stat(filepath.Join(r, "instruments", "virtual", "vgvirtual.h")); err != nil {
		t.Fatalf("virtualtest: no instruments/virtual under %s: %v", r, err)
	}
	return r
}

// Library builds the virtual instrument once per test binary with make
// and returns the path of build/virtual/<name> (libnidaqmx.so ...). The
// test is skipped, saying why, where gcc or make is absent.
func Library(t testing.TB, name string) string {
	t.Helper()
	for _, tool := range []string{"gcc", "make"} {
		if _, lerr := exec.LookPath(tool); lerr != nil {
			t.Skipf("virtual instrument: %s not found (the fake vendor libraries are C, built by `make virtual`)", tool)
		}
	}
	once.Do(func() {
		root = Root(t)
		// go test runs packages in parallel processes: one make at a time
		// writes build/virtual (an advisory lock beside it).
		if mkerr := os.MkdirAll(filepath.Join(root, "build"), 0o755); mkerr != nil {
			err = mkerr
			return
		}
		lock, lerr := os.OpenFile(filepath.Join(root, "build", ".virtual.lock"), os.O_CREATE|os.O_RDWR, 0o644)
		if lerr != nil {
			err = lerr
			return
		}
		defer lock.Close()
		if err = syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			return
		}
		defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()
		cmd := exec.Command("make", "-s", "virtual")
		cmd.Dir = root
		output, err = cmd.CombinedOutput()
	})
	if err != nil {
		t.Fatalf("make virtual: %v\n%s", err, output)
	}
	p := filepath.Join(root, "build", "virtual", name)
	if _, serr := os.Stat(p); serr != nil {
		t.Fatalf("make virtual built no %s: %v", p, serr)
	}
	return p
}
