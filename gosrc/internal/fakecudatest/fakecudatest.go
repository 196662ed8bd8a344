// Package fakecudatest runs a test against gosrc/cuda's fake CUDA driver and
// fake cuFFT (gosrc/cuda/testdata/fakecuda.c, fakecufft.c), for tests of the
// CUDA path on machines without a GPU. vortexgo picks its driver once per
// process, so the checks run in a child process of the test binary with the
// fakes in its environment: the parent builds them and runs the child.
package fakecudatest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// Run builds the fakes from testdata (the folder holding fakecuda.c, relative
// to the calling package's directory) and runs the test binary's test named
// child in a child process with env=1 and the fakes as its driver and cuFFT,
// requiring it to pass. It skips where the sources or a C compiler are
// missing (a test binary run outside its package directory, as on the GPU
// machine).
func Run(t *testing.T, testdata, child, env string) {
	t.Helper()
	if os.Getenv(env) != "" {
		t.Skip("running as the child")
	}
	if _, err := os.Stat(filepath.Join(testdata, "fakecuda.c")); err != nil {
		t.Skipf("%s not here (test binary run outside its package directory)", filepath.Join(testdata, "fakecuda.c"))
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		cc, err = exec.LookPath("cc")
	}
	if err != nil {
		t.Skip("no C compiler to build the fake driver")
	}
	dir := t.TempDir()
	driver, fft := filepath.Join(dir, "libfakecuda.so"), filepath.Join(dir, "libcufft.so.12")
	for lib, src := range map[string]string{driver: "fakecuda.c", fft: "fakecufft.c"} {
		out, err := exec.Command(cc, "-shared", "-fPIC", "-o", lib, filepath.Join(testdata, src)).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+child+"$", "-test.v")
	cmd.Env = append(os.Environ(), env+"=1", cuda.DriverPathEnv+"="+driver, cuda.CUFFTPathEnv+"="+fft)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child failed:\n%s", out)
	require.Contains(t, string(out), "--- PASS: "+child)
}

// Sym is the symbol name, a T, of the fake library the child's vortexgo
// loaded (pathEnv: cuda.DriverPathEnv or cuda.CUFFTPathEnv; call it after
// cuda.Init): the same instance, so its counters and switches are the ones
// the shim's calls move.
func Sym[T any](t testing.TB, pathEnv, name string) *T {
	t.Helper()
	lib, err := dl.Open(os.Getenv(pathEnv))
	require.NoError(t, err, "%s=%q", pathEnv, os.Getenv(pathEnv))
	p, err := lib.Sym(name)
	require.NoError(t, err, name)
	return (*T)(p)
}
