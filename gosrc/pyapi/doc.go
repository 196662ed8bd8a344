// Package pyapi is the only package gopy binds: a thin, handle-based facade
// over the Go core for the Python package vortexgo. It marshals only:
// policy lives in the core packages (DESIGN.md section 7).
//
// # Conventions
//
// Pointers and native handles cross as int (64-bit); every object Python
// names by id lives in one registry (fast.go). Errors carry the Python
// class they map to as a prefix ("ClosedError: ", ...; errors.go). A
// wrapper Python closes embeds Object (one Close, one Record). Records
// cross one way each: a config as one JSON record of the core struct's
// fields (decodeRecord), state as float64s written into the
// caller's buffer (Object.Record, hostmem.Record). Core objects Python
// drives by named operations (a SimpleStack) share one path: NewObject and
// Object.Do (object.go).
//
// gopy releases the GIL around every call into Go, so a call that waits
// leaves other Python threads running. Nothing here calls back into
// Python: Go reports through queues that a Python-owned thread drains
// (DESIGN.md section 1). Nothing in the module imports pyapi (a test).
package pyapi
