package tests_go

import (
	"go/ast"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The binding wing (issue 25): gosrc/pyapi is the only package that binds
// the core to Python. Its files marshal (types and names in, typed Go
// calls out); the core packages export typed Go APIs only. These rules
// read the source, so a new binding protocol in a core package fails here
// before it spreads.

// bindingLeftovers are the files still allowed a binding form, each with
// what removes it; the list only shrinks.
var bindingLeftovers = map[string]string{}

// jsonFiles are the files allowed encoding/json because they read a file
// on disk in a JSON format, which is no binding: nothing they decode
// crosses to Python. Each with its reason.
var jsonFiles = map[string]string{
	"gosrc/driver/teledyne/layout.go": "reads the ADQParameters layout table (adq_layout.json) that " +
		"python/vortexgo/adq_layout.py generates from the installed ADQAPI header",
}

// TestOnlyPyapiBinds: outside gosrc/pyapi no method dispatches on an op
// string (Do(op string, ...)), no state record is a positional []float64
// (Record() []float64), no constructor picks its type by a kind string
// (New...(... kind string ...)), and nothing encodes or decodes JSON: the
// records crossing to Python are marshalled in pyapi.
func TestOnlyPyapiBinds(t *testing.T) {
	for _, f := range parseSources(t) {
		if strings.HasPrefix(f.path, "gosrc/pyapi/") || bindingLeftovers[f.path] != "" {
			continue
		}
		for _, imp := range f.file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "encoding/json" && jsonFiles[f.path] == "" {
				assert.Failf(t, "JSON in a core package", "%s imports encoding/json: records cross to Python "+
					"through gosrc/pyapi, which encodes and decodes them", f.path)
			}
		}
		for _, d := range f.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			where := f.fset.Position(fn.Pos()).String()
			name := fn.Name.Name
			if fn.Recv != nil && name == "Do" && firstParamIsString(fn, "op") {
				assert.Failf(t, "op-string dispatch in a core package", "%s: %s dispatches on an op string; "+
					"give each operation a typed method and bind it in gosrc/pyapi", where, exprText(f.fset, fn.Type))
			}
			if fn.Recv != nil && name == "Record" && len(fn.Type.Params.List) == 0 && fn.Type.Results != nil &&
				len(fn.Type.Results.List) == 1 && exprText(f.fset, fn.Type.Results.List[0].Type) == "[]float64" {
				assert.Failf(t, "positional record in a core package", "%s: Record() []float64; return a typed "+
					"struct and declare its record in gosrc/pyapi/records.go", where)
			}
			if fn.Recv == nil && ast.IsExported(name) && strings.HasPrefix(name, "New") && hasStringParam(fn, "kind") {
				assert.Failf(t, "constructor by kind string in a core package", "%s: %s picks what it builds by a "+
					"kind string; export one typed constructor per kind (pyapi maps Python's names to them)",
					where, name)
			}
		}
	}
}

func firstParamIsString(fn *ast.FuncDecl, name string) bool {
	ps := fn.Type.Params.List
	if len(ps) == 0 || len(ps[0].Names) == 0 || ps[0].Names[0].Name != name {
		return false
	}
	id, ok := ps[0].Type.(*ast.Ident)
	return ok && id.Name == "string"
}

func hasStringParam(fn *ast.FuncDecl, name string) bool {
	for _, p := range fn.Type.Params.List {
		id, ok := p.Type.(*ast.Ident)
		if !ok || id.Name != "string" {
			continue
		}
		for _, n := range p.Names {
			if n.Name == name {
				return true
			}
		}
	}
	return false
}
