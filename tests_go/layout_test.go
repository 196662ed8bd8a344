// Package tests_go holds whole-module tests: the architecture rules of
// DESIGN.md section 6, checked with `go list`; the ownership rules of
// section 7 that can be read from the source (ownership_rules_test.go);
// and test hygiene (goroutine_require_test.go).
package tests_go

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/vortexgo/vortexgo"

type pkg struct {
	ImportPath string
	Deps       []string
	CgoFiles   []string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-tags", "gpu", "-json=ImportPath,Deps,CgoFiles,Imports", module+"/...")
	cmd.Dir = ".."
	out, err := cmd.Output()
	require.NoError(t, err, "go list failed")
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		pkgs = append(pkgs, p)
	}
	require.NotEmpty(t, pkgs)
	return pkgs
}

// TestNothingImportsPyapi: pyapi is the top of the graph; the Go core must
// stay usable (and testable) without the Python binding. (pyapi's own
// subpackages, its generator among them, are the binding wing.)
func TestNothingImportsPyapi(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.HasSuffix(p.ImportPath, "/gosrc/pyapi") || strings.Contains(p.ImportPath, "/gosrc/pyapi/") {
			continue
		}
		for _, d := range p.Deps {
			require.False(t, strings.HasSuffix(d, "/gosrc/pyapi"), "%s depends on pyapi", p.ImportPath)
		}
	}
}

// TestCgoIsConfined: only the dlopen package and the shims of the libraries
// it loads (CUDA, HDF5, the ATS-SDK, NI-DAQmx, Aravis) use cgo, so the rest of the core builds and races
// cleanly as plain Go.
func TestCgoIsConfined(t *testing.T) {
	allowed := map[string]bool{
		module + "/gosrc/internal/dl":  true,
		module + "/gosrc/cuda":         true,
		module + "/gosrc/storage/hdf5": true,
		// NI-DAQmx's shim: the library is dlopen'ed through internal/dl and
		// called through a function table, as CUDA's and HDF5's are.
		module + "/gosrc/driver/daqmx": true,
		// The ATS-SDK's shim (libATSApi, loaded by dl): the Alazar driver.
		module + "/gosrc/driver/alazar": true,
		// ADQAPI's shim (libadq, loaded by dl): the Teledyne driver.
		module + "/gosrc/driver/teledyne": true,
		// NI-IMAQ's shim (libniimaq, loaded by dl): the frame grabber driver.
		module + "/gosrc/driver/imaq": true,
		// Aravis's shim (libaravis-0.8, loaded by dl): GenICam cameras
		// (GigE Vision, USB3 Vision) for GenICamAcquisition.
		module + "/gosrc/driver/aravis": true,
	}
	for _, p := range listPackages(t) {
		if len(p.CgoFiles) > 0 {
			require.True(t, allowed[p.ImportPath], "%s uses cgo (%v); only %v may", p.ImportPath, p.CgoFiles, allowed)
		}
	}
}

// TestBackendIsALeaf: the backend contract depends on nothing of ours.
func TestBackendIsALeaf(t *testing.T) {
	for _, p := range listPackages(t) {
		if !strings.HasSuffix(p.ImportPath, "/gosrc/backend") {
			continue
		}
		for _, d := range p.Deps {
			require.False(t, strings.HasPrefix(d, module+"/"), "backend depends on %s", d)
		}
	}
}

// TestStorageIsBelowTheEngine: the file formats know nothing of the engine
// or its endpoints (endpoint.BlockEndpoint writes into them from above).
func TestStorageIsBelowTheEngine(t *testing.T) {
	for _, p := range listPackages(t) {
		if !strings.HasPrefix(p.ImportPath, module+"/gosrc/storage") {
			continue
		}
		for _, d := range p.Deps {
			for _, above := range []string{"/gosrc/engine", "/gosrc/endpoint", "/gosrc/format"} {
				require.False(t, strings.HasPrefix(d, module+above), "%s depends on %s", p.ImportPath, d)
			}
		}
	}
}
