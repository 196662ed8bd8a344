// Command genlayout writes the engine's event record layout for the Python
// dispatcher and the C fast path (engine.LayoutPython, engine.LayoutC):
// `go generate ./gosrc/engine`, from anywhere in the module.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

func main() {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genlayout: go env GOMOD:", err)
		os.Exit(1)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	for path, text := range map[string]string{engine.LayoutPythonPath: engine.LayoutPython(), engine.LayoutCPath: engine.LayoutC()} {
		if err := os.WriteFile(filepath.Join(root, path), []byte(text), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genlayout:", err)
			os.Exit(1)
		}
	}
}
