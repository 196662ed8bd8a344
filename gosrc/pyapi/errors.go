package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/pyapi/pyerr"
)

// tag gives err its Python class and fields (pyerr.Tag): applied once, at
// the boundary, so Go code below keeps plain errors.
func tag(err error) error { return pyerr.Tag(err) }

// badArg is a bad argument met while marshalling (backend.Invalidf).
var badArg = backend.Invalidf

// tagged returns v, or the zero value and err with its Python class: a
// wrapper built around a failed constructor's result is dropped here.
func tagged[T any](v T, err error) (T, error) {
	if err != nil {
		var zero T
		return zero, tag(err)
	}
	return v, nil
}
