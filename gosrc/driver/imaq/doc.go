// Package imaq is vortex's NI-IMAQ driver (vortex's driver/imaq): the part
// of NI-IMAQ's C API that vortex's IMAQ acquisition uses (a frame grabber
// with a line-scan camera), loaded at run time.
//
// # Loading
//
// The library is dlopen'ed on first use (Load), as gosrc/driver/daqmx
// loads NI-DAQmx: vortexgo builds without NI's headers, imports without
// the library, and reports a missing library as an ordinary error naming
// it and LibraryEnv (VORTEXGO_NIIMAQ_LIBRARY). The signatures and
// constants used are declared in shim.h and imaq.go from NI's public
// niimaq.h and niimaq_errors.h; no NI code is copied.
//
// # Sessions
//
// A Session is an open interface (img0 ...) and its session: region of
// interest, triggers, the ring of user buffers, start/stop, and LockFrame /
// ReleaseFrame of a ring buffer by frame number. Errors are *Error, whose
// text is vortex's and which wraps ErrDeviceInUse, ErrIncompatibleRegion
// or ErrTimeout for the codes vortex singles out; an overwritten frame is
// ErrBufferOverflow.
//
// The virtual instrument (instruments/virtual/imaq.c, make virtual) is a
// fake libniimaq.so the tests load through VORTEXGO_NIIMAQ_LIBRARY.
package imaq
