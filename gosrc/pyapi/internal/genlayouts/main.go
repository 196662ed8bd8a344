// Command genlayouts writes the state records' Python layouts
// (pyapi.LayoutsPython): `go generate ./gosrc/pyapi`, from anywhere in the
// module.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/pyapi"
)

func main() {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "genlayouts: go env GOMOD:", err)
		os.Exit(1)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	if err := os.WriteFile(filepath.Join(root, pyapi.LayoutsPath), []byte(pyapi.LayoutsPython()), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "genlayouts:", err)
		os.Exit(1)
	}
}
