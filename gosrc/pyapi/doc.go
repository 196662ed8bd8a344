// Package pyapi is the only package gopy binds: a thin, handle-based facade
// over the Go core for the Python package vortexgo.
//
// # Conventions
//
// Pointers and native handles cross the boundary as int (64-bit). Errors are
// Go errors whose text starts with a class tag ("CudaError: ", "ValueError: ",
// "TimeoutError: ", "ClosedError: ", "MemoryBudgetError: ", ...) that the
// Python layer maps to an exception class (python/vortexgo/_errors.py).
//
// gopy releases the GIL around every call into Go, so every call here that
// may wait (a lock, an event, an engine wait) leaves other Python threads and
// Jupyter's kernel running. Nothing here ever calls back into Python: Go
// reports to Python through queues that a Python-owned thread drains
// (DESIGN.md section 1).
//
// Nothing in the module imports pyapi (enforced by a test).
package pyapi
