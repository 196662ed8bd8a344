// Package pyapi is the binding wing: the only package gopy binds, a thin,
// handle-based facade over the Go core for the Python package vortexgo.
// It marshals only (types and names in, typed Go calls out); policy and
// bounds live in the core packages (DESIGN.md section 7), which export
// typed Go APIs and know nothing of Python (tests_go/binding_wing_test.go).
//
// # Layout
//
// One file per Python module it serves, as vortex's bind/<module>.cpp:
// scan.go serves python/vortexgo/scan.py, storage.go storage.py,
// acquire.go, process.go, format.go, io.go, endpoint.go and engine.go the
// engine's stages, stream.go and device.go the CUDA resources, memory.go
// and pipeline.go the arrays and the toolkit.
//
// # Conventions
//
//   - Pointers and native handles cross as int (64-bit); every object
//     Python names by id lives in one registry (fast.go), whose table the C
//     fast path reads too.
//   - A config crosses as one JSON record of the core struct's fields,
//     decoded here (json.go, decodeRecord); arrays cross as (address,
//     count) through gosrc/hostmem.
//   - State crosses as a named record: a flat struct declared here and
//     listed in records.go, written into the caller's buffer (putRecord);
//     `go generate ./gosrc/pyapi` writes python/vortexgo/_layouts.py.
//   - Errors carry their Python class and fields (pyerr, errors.go: tag).
//   - A wrapper Python closes embeds Object (one Close for all).
//
// gopy releases the GIL around every call into Go, so a call that waits
// leaves other Python threads running. Nothing here calls back into
// Python: Go reports through queues that a Python-owned thread drains
// (DESIGN.md section 1). Nothing in the module imports pyapi (a test).
package pyapi
