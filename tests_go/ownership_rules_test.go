package tests_go

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The rules of DESIGN.md section 7 ("Ownership across the boundary") that
// can be checked by reading the source.

// sourceFile is one parsed non-test Go file of the module.
type sourceFile struct {
	path string // relative to the module root, slash-separated
	file *ast.File
	fset *token.FileSet
	text []byte
}

// parseSources parses every non-test .go file under ../gosrc (all build
// tags: the parser ignores constraints, so GPU files are read too).
func parseSources(t *testing.T) []sourceFile {
	t.Helper()
	fset := token.NewFileSet()
	var out []sourceFile
	err := filepath.WalkDir("../gosrc", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == "testdata" {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, text, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, "../"))
		out = append(out, sourceFile{rel, f, fset, text})
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, out)
	return out
}

func inPackage(f sourceFile, dir string) bool {
	return strings.HasPrefix(f.path, dir+"/") && !strings.Contains(strings.TrimPrefix(f.path, dir+"/"), "/")
}

func exprText(fset *token.FileSet, e ast.Node) string {
	var b bytes.Buffer
	_ = printer.Fprint(&b, fset, e)
	return b.String()
}

// errorTextMatchers are the strings functions that, applied to an error's
// text, classify it by its wording.
var errorTextMatchers = map[string]bool{
	"Contains": true, "ContainsAny": true, "HasPrefix": true, "HasSuffix": true,
	"Index": true, "EqualFold": true, "Count": true, "Cut": true, "CutPrefix": true,
}

// callsErrorMethod reports whether e contains a call x.Error().
func callsErrorMethod(e ast.Node) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if c, ok := n.(*ast.CallExpr); ok && len(c.Args) == 0 {
			if sel, ok := c.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Error" {
				found = true
			}
		}
		return !found
	})
	return found
}

// findErrorTextClassification returns the places in f that decide by an
// error's text: strings.Contains(err.Error(), ...) and the like,
// err.Error() == "...", and switch err.Error().
func findErrorTextClassification(f sourceFile) []string {
	var out []string
	report := func(n ast.Node) {
		out = append(out, fmt.Sprintf("%s: %s", f.fset.Position(n.Pos()), exprText(f.fset, n)))
	}
	ast.Inspect(f.file, func(n ast.Node) bool {
		switch v := n.(type) {
		case *ast.CallExpr:
			sel, ok := v.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if pkg, ok := sel.X.(*ast.Ident); ok && pkg.Name == "strings" && errorTextMatchers[sel.Sel.Name] {
				for _, a := range v.Args {
					if callsErrorMethod(a) {
						report(v)
						break
					}
				}
			}
		case *ast.BinaryExpr:
			if (v.Op == token.EQL || v.Op == token.NEQ) && (callsErrorMethod(v.X) || callsErrorMethod(v.Y)) {
				report(v)
			}
		case *ast.SwitchStmt:
			if v.Tag != nil && callsErrorMethod(v.Tag) {
				report(v.Tag)
			}
		}
		return true
	})
	return out
}

// TestNoErrorTextClassification: errors are typed sentinels (backend.Err*,
// memory.ErrLockHeld, ...) wrapped with %w and mapped to Python classes in
// one place (pyapi/errors.go tag); no code of ours classifies an error by
// matching its text, which breaks silently when a message is reworded.
func TestNoErrorTextClassification(t *testing.T) {
	var found []string
	for _, f := range parseSources(t) {
		found = append(found, findErrorTextClassification(f)...)
	}
	require.Empty(t, found, "%d places classify errors by their text; wrap a typed sentinel with %%w and test errors.Is instead:\n%s",
		len(found), strings.Join(found, "\n"))
}

// TestNoRecoverInPyapi: pyapi marshals; it does not use recover() as a
// bounds check (the core packages check indexes and sizes and return
// errors naming them).
func TestNoRecoverInPyapi(t *testing.T) {
	var found []string
	for _, f := range parseSources(t) {
		if !inPackage(f, "gosrc/pyapi") {
			continue
		}
		ast.Inspect(f.file, func(n ast.Node) bool {
			if c, ok := n.(*ast.CallExpr); ok {
				if id, ok := c.Fun.(*ast.Ident); ok && id.Name == "recover" && len(c.Args) == 0 {
					found = append(found, f.fset.Position(c.Pos()).String())
				}
			}
			return true
		})
	}
	require.Empty(t, found, "recover() in pyapi at %v; check the bounds in the core package and return an error wrapping backend.ErrInvalid", found)
}

// TestOnlyPyapiImportsHandle: the handle registry names objects for
// Python. Core packages own and borrow objects by Go reference
// (memory.Shared, Close), so an id-based registry anywhere else would be a
// second, unsynchronised naming of the same objects.
func TestOnlyPyapiImportsHandle(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.HasSuffix(p.ImportPath, "/gosrc/pyapi") || strings.HasSuffix(p.ImportPath, "/gosrc/handle") ||
			strings.HasSuffix(p.ImportPath, "/gosrc/engine/internal/genlayout") { // go generate's tool: reads handle.Slot's layout
			continue
		}
		for _, imp := range p.Imports {
			require.False(t, strings.HasSuffix(imp, "/gosrc/handle"),
				"%s imports gosrc/handle; only gosrc/pyapi names objects by handle (DESIGN.md 7: one registry)", p.ImportPath)
		}
	}
}

// TestOneHandleRegistry: every call path (the fast path and the methods)
// shares one generation-tagged registry, so an id closed on one path never
// names another object on the other (DESIGN.md 7).
func TestOneHandleRegistry(t *testing.T) {
	var decls []string
	for _, f := range parseSources(t) {
		ast.Inspect(f.file, func(n ast.Node) bool {
			switch v := n.(type) {
			case *ast.ValueSpec:
				if v.Type != nil && strings.HasSuffix(exprText(f.fset, v.Type), "handle.Registry") {
					decls = append(decls, f.fset.Position(v.Pos()).String())
				}
			case *ast.CompositeLit:
				if v.Type != nil && strings.HasSuffix(exprText(f.fset, v.Type), "handle.Registry") {
					decls = append(decls, f.fset.Position(v.Pos()).String())
				}
			case *ast.CallExpr:
				if id, ok := v.Fun.(*ast.Ident); ok && id.Name == "new" && len(v.Args) == 1 &&
					strings.HasSuffix(exprText(f.fset, v.Args[0]), "handle.Registry") {
					decls = append(decls, f.fset.Position(v.Pos()).String())
				}
			}
			return true
		})
	}
	require.Len(t, decls, 1, "expected exactly one handle.Registry (pyapi's handles), found %d: %v", len(decls), decls)
}

// TestErrorRuleCatches keeps TestNoErrorTextClassification honest.
func TestErrorRuleCatches(t *testing.T) {
	src := `package x

import "strings"

func f(err error) bool {
	if strings.HasPrefix(err.Error(), "Config.") { // flagged
		return true
	}
	if err.Error() == "boom" { // flagged
		return true
	}
	switch err.Error() { // flagged
	}
	_ = strings.Contains("a", "b")          // allowed: not an error's text
	_ = strings.NewReplacer().Replace(err.Error()) // allowed: formatting
	return errors.Is(err, errX)
}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", src, 0)
	require.NoError(t, err)
	got := findErrorTextClassification(sourceFile{path: "x.go", file: file, fset: fset})
	var lines []int
	for _, g := range got {
		var line int
		_, err := fmt.Sscanf(strings.TrimPrefix(g, "x.go:"), "%d", &line)
		require.NoError(t, err)
		lines = append(lines, line)
	}
	require.Equal(t, []int{6, 9, 12}, lines)
}
