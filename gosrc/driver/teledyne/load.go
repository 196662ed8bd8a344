// Package teledyne is vortexgo's driver for Teledyne SP Devices ADQ
// digitizers: the ADQAPI functions vortex's driver calls (libadq, loaded at
// run time) and a typed Board over them (vortex's vortex::teledyne::board_t:
// clock, trigger, capture, FWOCT registers, locked transfer buffers).
//
// # Loading
//
// libadq is dlopen'ed on first use (Load, Open, Enumerate), as gosrc/cuda
// loads libcuda: vortexgo builds and imports without ADQAPI, and a missing
// library is an error wrapping ErrNoLibrary that names the library and
// VORTEXGO_ADQ_LIBRARY. Candidates: $VORTEXGO_ADQ_LIBRARY, the virtual
// instrument's build/virtual/libadq.so with VORTEXGO_INSTRUMENTS=virtual,
// else libadq.so and libadq.so.0 on the loader's path.
//
// As ADQAPI asks of every program, Load checks the library's API revision
// (ADQAPI_ValidateVersion with the revision adq.h declares): a library of
// another revision is refused (ErrIncompatible), and Open refuses a library
// whose parameter structure has another size. adq.h says why the declared
// structure is a subset that only the virtual digitizer speaks.
//
// # Sources
//
// Function names and signatures, return codes and constants: ADQAPI's
// public headers (ADQAPI.h, ADQAPI_definitions.h, as published with the SDK
// and mirrored in public repositories) and the ADQ3 series user guide.
// Behaviour, names and messages: vortex's driver
// (src/vortex/driver/teledyne.cpp). No code of either is copied.
package teledyne

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/instrument"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// EnvLibrary names the environment variable that points the loader at a
// libadq (a path, or a name on the loader's path).
const EnvLibrary = "VORTEXGO_ADQ_LIBRARY"

// The API revision the driver's declarations (adq.h) are for: what it
// passes to ADQAPI_ValidateVersion.
const (
	APIVersionMajor = int(C.VG_ADQAPI_VERSION_MAJOR)
	APIVersionMinor = int(C.VG_ADQAPI_VERSION_MINOR)
)

// ErrNoLibrary is wrapped by every error that comes from libadq not being
// loadable.
var ErrNoLibrary = errors.New("teledyne: no Teledyne SP Devices ADQAPI library (libadq.so), expected ADQAPI and the " +
	"digitizer's driver installed, or " + EnvLibrary + "=/path/to/libadq.so (vortexgo's virtual digitizer: `make virtual`, then " +
	EnvLibrary + "=build/virtual/libadq.so, or " + instrument.EnvInstruments + "=virtual)")

// ErrIncompatible is wrapped when the library's API revision is not the
// one the driver was written for (vortex's validate_ADQAPI_version).
var ErrIncompatible = errors.New("teledyne: incompatible ADQAPI revision")

var (
	loadMu sync.Mutex
	loaded *dl.Library
)

var libraryNames = []string{"libadq.so", "libadq.so.0"}

// Load opens libadq if it is not open yet and checks its API revision. A
// failure wraps ErrNoLibrary or ErrIncompatible; a later Load tries again.
func Load() error {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != nil {
		return nil
	}
	names := libraryNames
	if p, _ := instrument.Library(EnvLibrary, "libadq.so"); p != "" {
		names = []string{p}
	}
	lib, err := dl.Open(names...)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoLibrary, err)
	}
	if err := bind(lib); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrNoLibrary, lib.Name(), err)
	}
	if err := validateVersion(lib.Name()); err != nil {
		return err
	}
	loaded = lib
	return nil
}

// validateVersion is vortex's validate_ADQAPI_version: 0 compatible, -2
// backward compatible, -1 incompatible.
func validateVersion(name string) error {
	switch r := int(C.vg_validate_version(C.int(APIVersionMajor), C.int(APIVersionMinor))); r {
	case 0, -2:
		return nil
	case -1:
		return fmt.Errorf("%w: system ADQAPI version is incompatible with compiled version %d.%d (%s)", ErrIncompatible,
			APIVersionMajor, APIVersionMinor, name)
	default:
		return fmt.Errorf("%w: unexpected value in ADQAPI version check: %d (%s)", ErrIncompatible, r, name)
	}
}

// Library is the name libadq was loaded under ("" before Load succeeds).
func Library() string {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded == nil {
		return ""
	}
	return loaded.Name()
}

func bind(lib *dl.Library) error {
	tab := C.vg_adq_table()
	fns := []struct {
		name string
		dst  *unsafe.Pointer
	}{
		{"ADQAPI_ValidateVersion", (*unsafe.Pointer)(unsafe.Pointer(&tab.validate_version))},
		{"CreateADQControlUnit", (*unsafe.Pointer)(unsafe.Pointer(&tab.create))},
		{"DeleteADQControlUnit", (*unsafe.Pointer)(unsafe.Pointer(&tab.destroy))},
		{"ADQControlUnit_EnableErrorTrace", (*unsafe.Pointer)(unsafe.Pointer(&tab.enable_error_trace))},
		{"ADQControlUnit_ListDevices", (*unsafe.Pointer)(unsafe.Pointer(&tab.list_devices))},
		{"ADQControlUnit_SetupDevice", (*unsafe.Pointer)(unsafe.Pointer(&tab.setup_device))},
		{"ADQ_InitializeParameters", (*unsafe.Pointer)(unsafe.Pointer(&tab.initialize_parameters))},
		{"ADQ_SetParameters", (*unsafe.Pointer)(unsafe.Pointer(&tab.set_parameters))},
		{"ADQ_ReadUserRegister", (*unsafe.Pointer)(unsafe.Pointer(&tab.read_user_register))},
		{"ADQ_WriteUserRegister", (*unsafe.Pointer)(unsafe.Pointer(&tab.write_user_register))},
		{"ADQ_StartDataAcquisition", (*unsafe.Pointer)(unsafe.Pointer(&tab.start))},
		{"ADQ_StopDataAcquisition", (*unsafe.Pointer)(unsafe.Pointer(&tab.stop))},
		{"ADQ_WaitForP2pBuffers", (*unsafe.Pointer)(unsafe.Pointer(&tab.wait_p2p))},
		{"ADQ_UnlockP2pBuffers", (*unsafe.Pointer)(unsafe.Pointer(&tab.unlock_p2p))},
		{"ADQ_GetStatus", (*unsafe.Pointer)(unsafe.Pointer(&tab.get_status))},
	}
	for _, f := range fns {
		p, err := lib.Sym(f.name)
		if err != nil {
			return err
		}
		*f.dst = p
	}
	return nil
}
