// Package daqmx is vortex's NI-DAQmx driver (vortex's driver/daqmx): the
// part of NI-DAQmx's C API that vortex's DAQmx IO uses, loaded at run time.
//
// # Loading
//
// The library is dlopen'ed on first use (Load), the way gosrc/cuda loads
// libcuda: vortexgo builds without NI's headers, imports without the
// library, and reports a missing library as an ordinary error naming it
// and the environment variable that points at it (LibraryEnv,
// VORTEXGO_NIDAQMX_LIBRARY). Every NI signature and constant used is
// declared in shim.h and shim.c from NI's published C API (as the
// `nidaqmx` package on PyPI declares it); no NI code is copied.
//
// # Tasks
//
// A Task is one NI-DAQmx task: channels of one type (analog or digital,
// input or output), a sample clock, buffers, and blocking writes and
// reads. Errors are *Error, whose text is vortex's ("analog write failed:
// (-200290) buffer underflow") and which wraps ErrTimeout, ErrOverflow,
// ErrUnderflow or ErrUnsupported for the codes vortex singles out.
//
// The virtual instrument (instruments/virtual/daqmx.c, make virtual) is a
// fake libnidaqmx.so the tests load through VORTEXGO_NIDAQMX_LIBRARY.
package daqmx
