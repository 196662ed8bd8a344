// Package pyapi is the only package gopy binds: a thin, handle-based facade
// over the Go core for the Python package vortexgo. It marshals only:
// policy lives in the core packages (DESIGN.md section 7).
//
// # Conventions
//
// Pointers and native handles cross the boundary as int (64-bit); every
// object Python names by id lives in one registry (fast.go). Errors are Go
// errors whose text starts with the Python class they map to ("CudaError: ",
// "ClosedError: ", ...; errors.go) that python/vortexgo/_errors.py raises.
// Records (several values at once) cross as JSON text or as float64s written
// into a caller's buffer, each read in one place in Python.
//
// gopy releases the GIL around every call into Go, so every call here that
// may wait (a lock, an event, an engine wait) leaves other Python threads and
// Jupyter's kernel running. Nothing here ever calls back into Python: Go
// reports to Python through queues that a Python-owned thread drains
// (DESIGN.md section 1).
//
// Nothing in the module imports pyapi (enforced by a test).
package pyapi
