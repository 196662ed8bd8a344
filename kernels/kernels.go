// Package kernels embeds vortexgo's CUDA kernels as PTX.
//
// Each kernels/<name>.cu is compiled by build_ptx.sh to <name>.ptx, which is
// committed and embedded here, so the Go module needs no CUDA toolkit and a
// user needs only a driver (it JIT-compiles the PTX for the GPU at hand).
// After editing a .cu file, run kernels/build_ptx.sh and commit the PTX.
//
// The kernels are extern "C" functions; gosrc/ops launches them by name on
// CUDA streams and runs Go twins of them on the CPU backend.
package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strings"
)

//go:embed *.ptx
var ptxFS embed.FS

// PTX returns the PTX of module name ("elementwise" for elementwise.cu).
func PTX(name string) ([]byte, error) {
	b, err := ptxFS.ReadFile(name + ".ptx")
	if err != nil {
		return nil, fmt.Errorf("kernels.PTX: name=%q, expected one of %s", name, strings.Join(Names(), ", "))
	}
	return b, nil
}

// Names returns the embedded module names, sorted.
func Names() []string {
	entries, err := fs.Glob(ptxFS, "*.ptx")
	if err != nil {
		// The pattern is a constant and valid; Glob cannot fail on it.
		panic(err)
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = strings.TrimSuffix(e, ".ptx")
	}
	sort.Strings(names)
	return names
}

// Entries returns the kernel (.entry) names a module defines, in file
// order. It reads the PTX text, so callers can find which module holds a
// kernel without a GPU.
func Entries(name string) ([]string, error) {
	b, err := PTX(name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		// ".visible .entry fill_int8(" or ".entry name(" for non-visible ones.
		rest, ok := strings.CutPrefix(line, ".visible .entry ")
		if !ok {
			rest, ok = strings.CutPrefix(line, ".entry ")
		}
		if !ok {
			continue
		}
		if i := strings.IndexAny(rest, "( "); i >= 0 {
			rest = rest[:i]
		}
		out = append(out, rest)
	}
	return out, nil
}
