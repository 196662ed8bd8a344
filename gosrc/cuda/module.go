package cuda

/*
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"bytes"
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"
)

// Dim3 is a grid or block shape.
type Dim3 struct{ X, Y, Z uint32 }

// check rejects zero extents, which the driver reports only as an opaque
// CUDA_ERROR_INVALID_VALUE.
func (d Dim3) check(op, what string) error {
	if d.X == 0 || d.Y == 0 || d.Z == 0 {
		return fmt.Errorf("%s: %s=%v, expected every extent >= 1", op, what, d)
	}
	return nil
}

// Module is a loaded PTX module.
type Module struct {
	dev    *Device
	ctx    C.uintptr_t
	h      C.uintptr_t
	name   string
	closed atomic.Bool

	mu    sync.Mutex
	funcs map[string]*Function
}

// Function is a kernel of a Module.
type Function struct {
	mod  *Module
	h    C.uintptr_t
	name string
}

// jitLogSize bounds the JIT error log kept in a load error.
const jitLogSize = 8192

// LoadModule JIT-compiles ptx for the device (cuModuleLoadDataEx). A
// failure includes the JIT's error log; CUDA_ERROR_UNSUPPORTED_PTX_VERSION
// means the PTX came from a toolkit newer than the driver.
func (d *Device) LoadModule(ptx []byte) (*Module, error) {
	if len(ptx) == 0 {
		return nil, fmt.Errorf("cuda.Device.LoadModule: ptx is empty, expected PTX text")
	}
	// The driver reads the image as a NUL-terminated string.
	img := ptx
	if img[len(img)-1] != 0 {
		img = make([]byte, len(ptx)+1)
		copy(img, ptx)
	}
	log := make([]byte, jitLogSize)
	r := C.vg_module_load(C.uintptr_t(d.ctx), unsafe.Pointer(&img[0]), (*C.char)(unsafe.Pointer(&log[0])), jitLogSize)
	if err := errOf(r); err != nil {
		if msg := string(bytes.TrimRight(log[:max(bytes.IndexByte(log, 0), 0)], "\n")); msg != "" {
			return nil, fmt.Errorf("%w; JIT log: %s", err, msg)
		}
		return nil, err
	}
	return &Module{dev: d, ctx: C.uintptr_t(d.ctx), h: C.uintptr_t(r.v0), funcs: map[string]*Function{}}, nil
}

// LoadNamedModule returns the module cached under name on this device,
// loading it from ptx on first use. Later calls ignore ptx, so a kernel
// set is JIT-compiled once per device.
func (d *Device) LoadNamedModule(name string, ptx []byte) (*Module, error) {
	d.modMu.Lock()
	defer d.modMu.Unlock()
	if m, ok := d.modules[name]; ok {
		return m, nil
	}
	m, err := d.LoadModule(ptx)
	if err != nil {
		return nil, fmt.Errorf("cuda.Device.LoadNamedModule(%q): %w", name, err)
	}
	m.name = name
	d.modules[name] = m
	return m, nil
}

// Loaded reports whether a module is cached under name on this device
// (LoadNamedModule): whether its kernels were compiled already.
func (d *Device) Loaded(name string) bool {
	d.modMu.Lock()
	defer d.modMu.Unlock()
	_, ok := d.modules[name]
	return ok
}

// Name returns the name the module was cached under ("" if loaded by
// LoadModule).
func (m *Module) Name() string { return m.name }

// Function returns the kernel called name (an extern "C" name), cached per
// module. An unknown name is a *Error with Code CodeNotFound.
func (m *Module) Function(name string) (*Function, error) {
	if m.closed.Load() {
		return nil, errClosed("cuda.Module.Function")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if f, ok := m.funcs[name]; ok {
		return f, nil
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	r := C.vg_module_function(m.ctx, m.h, cname)
	if err := errOf(r); err != nil {
		return nil, fmt.Errorf("cuda.Module.Function(%q): %w", name, err)
	}
	f := &Function{mod: m, h: C.uintptr_t(r.v0), name: name}
	m.funcs[name] = f
	return f, nil
}

// Close unloads the module; its Functions become invalid. Modules cached
// by LoadNamedModule are meant to live as long as the device and should
// not be closed.
func (m *Module) Close() error {
	if !m.closed.CompareAndSwap(false, true) {
		return errClosed("cuda.Module.Close")
	}
	if m.name != "" {
		m.dev.modMu.Lock()
		if m.dev.modules[m.name] == m {
			delete(m.dev.modules, m.name)
		}
		m.dev.modMu.Unlock()
	}
	return errOf(C.vg_module_unload(m.ctx, m.h))
}

// Name returns the kernel's name.
func (f *Function) Name() string { return f.name }

// Module returns the module the kernel belongs to.
func (f *Function) Module() *Module { return f.mod }
