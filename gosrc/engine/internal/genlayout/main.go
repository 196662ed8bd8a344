// Command genlayout writes the flat layouts that C and Python read, from
// their Go declarations: the engine's records for the Python dispatcher
// and the C fast path (engine.LayoutPython, engine.LayoutC), the event
// ring's header (engine.LayoutRingC) and the C fast path's interface with
// the registry's table (cuda.FastPathHeader). `go generate ./gosrc/engine`
// or `go generate ./gosrc/cuda` writes them all, from anywhere in the
// module.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/handle"
)

func main() {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genlayout: go env GOMOD:", err)
		os.Exit(1)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	for path, text := range map[string]string{
		engine.LayoutPythonPath: engine.LayoutPython(),
		engine.LayoutCPath:      engine.LayoutC(),
		engine.LayoutRingCPath:  engine.LayoutRingC(),
		cuda.FastPathHeaderPath: cuda.FastPathHeader(handle.LayoutC()),
	} {
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genlayout:", err)
			os.Exit(1)
		}
	}
}
