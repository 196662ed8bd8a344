package tests_go

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// stopsGoroutine names the testing.T methods that end the calling goroutine
// (runtime.Goexit). Called off the test goroutine they end only that
// goroutine: the test goes on, may hang waiting for it, and the failure is
// reported late or, after the test returned, panics the whole binary.
var stopsGoroutine = map[string]bool{
	"Fatal": true, "Fatalf": true, "FailNow": true,
	"Skip": true, "Skipf": true, "SkipNow": true,
}

// goroutineViolation is one call that must run on the test goroutine but
// is written inside a function literal that runs on another.
type goroutineViolation struct {
	pos  token.Position
	call string
}

// stopsCall reports the call's text when it ends the calling goroutine:
// require.X(...), t.Fatal(...) and the like, or a call of a function of the
// same package that does (from stoppers).
func stopsCall(call *ast.CallExpr, stoppers map[string]bool) (string, bool) {
	switch fn := call.Fun.(type) {
	case *ast.SelectorExpr:
		if x, ok := fn.X.(*ast.Ident); ok {
			if x.Name == "require" {
				return "require." + fn.Sel.Name, true
			}
			if stopsGoroutine[fn.Sel.Name] {
				return x.Name + "." + fn.Sel.Name, true
			}
		}
	case *ast.Ident:
		if stoppers[fn.Name] {
			return fn.Name + " (calls require or t.Fatal)", true
		}
	}
	return "", false
}

// funcStops reports whether body (outside any goroutine it starts) calls
// something that ends the calling goroutine.
func funcStops(body ast.Node, stoppers map[string]bool) bool {
	found := false
	ast.Inspect(body, func(n ast.Node) bool {
		if found {
			return false
		}
		if c, ok := n.(*ast.CallExpr); ok {
			if _, ok := stopsCall(c, stoppers); ok {
				found = true
			}
		}
		return true
	})
	return found
}

// goroutineBodies returns the function literals that run on another
// goroutine: `go func(){...}()` and `x.Go(func(){...})` (sync.WaitGroup.Go,
// errgroup.Group.Go).
func goroutineBodies(f *ast.File) []*ast.FuncLit {
	var lits []*ast.FuncLit
	ast.Inspect(f, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.GoStmt:
			if lit, ok := s.Call.Fun.(*ast.FuncLit); ok {
				lits = append(lits, lit)
			}
		case *ast.CallExpr:
			if sel, ok := s.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Go" && len(s.Args) == 1 {
				if lit, ok := s.Args[0].(*ast.FuncLit); ok {
					lits = append(lits, lit)
				}
			}
		}
		return true
	})
	return lits
}

// findGoroutineStops parses every *_test.go file under root and returns the
// calls that stop a goroutine other than the test's own.
func findGoroutineStops(t *testing.T, root string) []goroutineViolation {
	t.Helper()
	byDir := map[string][]*ast.File{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "gpu-build") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], f)
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, byDir, "no *_test.go files under %s", root)

	var out []goroutineViolation
	for _, files := range byDir {
		// Package-level helpers that stop the calling goroutine, found to
		// a fixed point so helpers calling helpers count too.
		decls := map[string]*ast.FuncDecl{}
		for _, f := range files {
			for _, d := range f.Decls {
				if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && fd.Body != nil {
					decls[fd.Name.Name] = fd
				}
			}
		}
		stoppers := map[string]bool{}
		for changed := true; changed; {
			changed = false
			for name, fd := range decls {
				if !stoppers[name] && funcStops(fd.Body, stoppers) {
					stoppers[name] = true
					changed = true
				}
			}
		}
		for _, f := range files {
			for _, lit := range goroutineBodies(f) {
				ast.Inspect(lit.Body, func(n ast.Node) bool {
					if c, ok := n.(*ast.CallExpr); ok {
						if text, ok := stopsCall(c, stoppers); ok {
							out = append(out, goroutineViolation{fset.Position(c.Pos()), text})
						}
					}
					return true
				})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].pos.Filename != out[j].pos.Filename {
			return out[i].pos.Filename < out[j].pos.Filename
		}
		return out[i].pos.Offset < out[j].pos.Offset
	})
	return out
}

// TestRequireOnlyOnTestGoroutine: require.* and t.Fatal/FailNow/Skip end
// the goroutine that calls them, so inside a goroutine they leave the test
// running (or hanging) after a failure. Goroutines send their errors on a
// channel (or use assert.*) and the test goroutine requires on them.
func TestRequireOnlyOnTestGoroutine(t *testing.T) {
	var lines []string
	for _, v := range findGoroutineStops(t, "..") {
		lines = append(lines, fmt.Sprintf("%s: %s inside a goroutine", v.pos, v.call))
	}
	require.Zero(t, len(lines), "%d calls end a goroutine other than the test's; collect errors through a channel and require on the test goroutine:\n%s",
		len(lines), strings.Join(lines, "\n"))
}

// TestGoroutineRuleCatches keeps the rule above honest: it must flag each
// form it is meant to catch and none of the allowed ones.
func TestGoroutineRuleCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package x

import "testing"

func helper(t *testing.T) { require.NoError(t, nil) }
func helper2(t *testing.T) { helper(t) }
func fine(t *testing.T) { assert.NoError(t, nil) }

func TestX(t *testing.T) {
	require.NoError(t, nil) // on the test goroutine: allowed
	go func() {
		require.NoError(t, nil) // flagged
		t.Fatalf("x")           // flagged
		assert.NoError(t, nil)  // allowed
		helper2(t)              // flagged through helper
		fine(t)                 // allowed
		func() { t.FailNow() }() // flagged: still on the goroutine
	}()
	wg.Go(func() { t.Fatal("x") }) // flagged
	t.Run("sub", func(t *testing.T) { require.True(t, true) }) // allowed
}
`
	require.NoError(t, writeFile(filepath.Join(dir, "x_test.go"), src))
	got := findGoroutineStops(t, dir)
	var calls []string
	for _, v := range got {
		calls = append(calls, fmt.Sprintf("%d:%s", v.pos.Line, v.call))
	}
	require.Equal(t, []string{
		"12:require.NoError",
		"13:t.Fatalf",
		"15:helper2 (calls require or t.Fatal)",
		"17:t.FailNow",
		"19:t.Fatal",
	}, calls)
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }
