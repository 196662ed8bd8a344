// Package dl is the only place vortexgo calls dlopen and dlsym.
//
// Native libraries (libcuda, libcufft, libhdf5, the instruments' vendor
// libraries) are loaded at run time rather than linked at build time, so the
// Go module builds without a CUDA toolkit or a vendor SDK and the Python
// extension imports on machines with neither, where the load failure is
// reported as an ordinary error. Loader (loader.go) is how the instrument
// drivers declare theirs.
package dl

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

// vg_getenv copies the variable's value from the process's live environment
// into out (room for cap bytes); -1 when unset, else its full length.
static long vg_getenv(const char* name, char* out, size_t cap) {
	const char* v = getenv(name);
	if (v == NULL) return -1;
	size_t n = strlen(v);
	if (cap > 0) {
		size_t k = n < cap - 1 ? n : cap - 1;
		memcpy(out, v, k);
		out[k] = 0;
	}
	return (long)n;
}

// vg_dlopen calls dlopen and returns dlerror's text (copied into err, which
// has room for errcap bytes) when it fails. dlerror's buffer is thread
// local, so it is read in the same C call that failed; a Go goroutine may
// move to another OS thread between two cgo calls.
static void* vg_dlopen(const char* name, char* err, size_t errcap) {
	void* h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (h == NULL && errcap > 0) {
		const char* e = dlerror();
		size_t i = 0;
		if (e != NULL) {
			for (; e[i] != 0 && i + 1 < errcap; i++) err[i] = e[i];
		}
		err[i] = 0;
	}
	return h;
}

static void* vg_dlsym(void* h, const char* name, char* err, size_t errcap) {
	dlerror(); // clear any stale error
	void* p = dlsym(h, name);
	if (p == NULL && errcap > 0) {
		const char* e = dlerror();
		size_t i = 0;
		if (e != NULL) {
			for (; e[i] != 0 && i + 1 < errcap; i++) err[i] = e[i];
		}
		err[i] = 0;
	}
	return p;
}
*/
import "C"

import (
	"errors"
	"strings"
	"unsafe"
)

// errCap bounds the dlerror text kept per attempt; dlerror messages are a
// path plus a short reason, far below this.
const errCap = 1024

// Library is an open shared library. It is never closed: the symbols it
// hands out are cached by callers for the life of the process, and
// dlclose'ing a CUDA driver under live contexts is undefined.
type Library struct {
	name   string
	handle unsafe.Pointer
}

// OpenError reports that none of the candidate names could be opened. It
// keeps every dlerror text, because the first name's failure ("no such
// file") is often less useful than a later one ("wrong ELF class").
type OpenError struct {
	// Names are the names tried, in order.
	Names []string
	// Reasons holds dlerror's text for each name, index for index.
	Reasons []string
}

// Error joins every attempt's reason.
func (e *OpenError) Error() string {
	if len(e.Names) == 0 {
		return "dl.Open: no library names given, expected at least one"
	}
	return strings.Join(e.Reasons, "; ")
}

// Open tries names in order with dlopen(RTLD_NOW|RTLD_LOCAL) and returns the
// first library that loads. If none loads, the error is an *OpenError whose
// text holds every dlerror message. Empty names are skipped (callers pass
// an optional path from the environment without checking it).
func Open(names ...string) (*Library, error) {
	oe := &OpenError{}
	var buf [errCap]C.char
	for _, name := range names {
		if name == "" {
			continue
		}
		cname := C.CString(name)
		h := C.vg_dlopen(cname, &buf[0], errCap)
		C.free(unsafe.Pointer(cname))
		if h != nil {
			return &Library{name: name, handle: h}, nil
		}
		reason := C.GoString(&buf[0])
		if reason == "" {
			reason = name + ": dlopen failed"
		}
		oe.Names = append(oe.Names, name)
		oe.Reasons = append(oe.Reasons, reason)
	}
	return nil, oe
}

// Name returns the name the library was opened under.
func (l *Library) Name() string { return l.name }

// ErrNilLibrary is returned by Sym on a nil *Library.
var ErrNilLibrary = errors.New("dl: Sym on nil *Library, expected a library from Open")

// Sym resolves a symbol. The error is a *SymbolError carrying dlerror's
// text.
func (l *Library) Sym(name string) (unsafe.Pointer, error) {
	if l == nil || l.handle == nil {
		return nil, ErrNilLibrary
	}
	var buf [errCap]C.char
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	p := C.vg_dlsym(l.handle, cname, &buf[0], errCap)
	if p == nil {
		reason := C.GoString(&buf[0])
		if reason == "" {
			reason = "symbol resolved to NULL"
		}
		return nil, &SymbolError{Library: l.name, Symbol: name, Reason: reason}
	}
	return p, nil
}

// Getenv reads a variable from the process's live C environment. Go's
// os.Getenv reads the copy the runtime took when the extension loaded, so it
// misses what the host program set since (Python's os.environ[...] = ...
// calls putenv); the library paths users point the loaders at are read here,
// at the moment the library is first needed.
func Getenv(name string) (string, bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	buf := make([]C.char, 4096)
	n := C.vg_getenv(cname, &buf[0], C.size_t(len(buf)))
	if n < 0 {
		return "", false
	}
	if int(n) >= len(buf) {
		buf = make([]C.char, int(n)+1)
		n = C.vg_getenv(cname, &buf[0], C.size_t(len(buf)))
		if n < 0 {
			return "", false
		}
	}
	return C.GoString(&buf[0]), true
}
