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

var libraryNames = []string{"libadq.so", "libadq.so.0"}

// tab is the shim's function table (shim.c).
var tab = C.vg_adq_table()

// loader declares libadq: its candidates, the functions the shim calls and
// ADQAPI's revision check.
var loader = &dl.Loader{
	Env:     EnvLibrary,
	Virtual: "libadq.so",
	Names:   libraryNames,
	Err:     ErrNoLibrary,
	Check:   func(lib *dl.Library) error { return validateVersion(lib.Name()) },
	Symbols: []dl.Symbol{
		{Name: "ADQAPI_ValidateVersion", Dst: dl.Func(&tab.validate_version)},
		{Name: "CreateADQControlUnit", Dst: dl.Func(&tab.create)},
		{Name: "DeleteADQControlUnit", Dst: dl.Func(&tab.destroy)},
		{Name: "ADQControlUnit_EnableErrorTrace", Dst: dl.Func(&tab.enable_error_trace)},
		{Name: "ADQControlUnit_ListDevices", Dst: dl.Func(&tab.list_devices)},
		{Name: "ADQControlUnit_SetupDevice", Dst: dl.Func(&tab.setup_device)},
		{Name: "ADQ_InitializeParameters", Dst: dl.Func(&tab.initialize_parameters)},
		{Name: "ADQ_SetParameters", Dst: dl.Func(&tab.set_parameters)},
		{Name: "ADQ_ReadUserRegister", Dst: dl.Func(&tab.read_user_register)},
		{Name: "ADQ_WriteUserRegister", Dst: dl.Func(&tab.write_user_register)},
		{Name: "ADQ_StartDataAcquisition", Dst: dl.Func(&tab.start)},
		{Name: "ADQ_StopDataAcquisition", Dst: dl.Func(&tab.stop)},
		{Name: "ADQ_WaitForP2pBuffers", Dst: dl.Func(&tab.wait_p2p)},
		{Name: "ADQ_UnlockP2pBuffers", Dst: dl.Func(&tab.unlock_p2p)},
		{Name: "ADQ_GetStatus", Dst: dl.Func(&tab.get_status)},
	},
}

// Load opens libadq if it is not open yet and checks its API revision. A
// failure wraps ErrNoLibrary or ErrIncompatible; a later Load tries again.
func Load() error {
	_, err := loader.Load()
	return err
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
func Library() string { return loader.Name() }
