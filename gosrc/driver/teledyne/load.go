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
// ADQAPI's parameter structure (struct ADQParameters) is read and written
// through a layout table generated from the installed ADQAPI_definitions.h
// (layout.go; $VORTEXGO_ADQ_LAYOUT, or adq_layout.json beside a library
// loaded by path, as the virtual digitizer's): the driver compiles in no
// structure. The same table gives the header's enumeration values (the
// driver's TriggerSource etc. keep vortex's values and are translated when
// written) and the layouts of ADQInfoListEntry, struct ADQP2pStatus and
// struct ADQOverflowStatus; only ADQAPI's return codes are compiled in
// (adq.h). Load finds the table (none: an error wrapping ErrLayout that
// says how to make one) and checks the library's API revision as ADQAPI
// asks of every program (ADQAPI_ValidateVersion with the table's revision):
// another revision is refused (ErrIncompatible). Open refuses a library
// whose ADQ_InitializeParameters reports another size than the table's.
//
// # Sources
//
// Function names and signatures, return codes and constant names: ADQAPI's
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
	"sync/atomic"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/instrument"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// EnvLibrary names the environment variable that points the loader at a
// libadq (a path, or a name on the loader's path).
const EnvLibrary = "VORTEXGO_ADQ_LIBRARY"

// The layout table of the loaded library (Load): the parameter structure's
// layout and the API revision passed to ADQAPI_ValidateVersion.
var layout atomic.Pointer[Layout]

func currentLayout() *Layout { return layout.Load() }

// APIVersion is the ADQAPI revision the driver was checked against: the
// one the layout table's header declares, passed to ADQAPI_ValidateVersion
// (as vortex passes the revision it was compiled with); 0, 0 before Load
// succeeds.
func APIVersion() (major, minor int) {
	if l := currentLayout(); l != nil {
		return l.APIVersion.Major, l.APIVersion.Minor
	}
	return 0, 0
}

// LoadedLayout is the layout table Load found (nil before Load succeeds).
func LoadedLayout() *Layout { return currentLayout() }

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

// slot is a field of tab as dl's destination (the fields are adq.h's typed
// function pointers, each a pointer in C).
func slot(field unsafe.Pointer) *unsafe.Pointer { return (*unsafe.Pointer)(field) }

// loader declares libadq: its candidates, the functions the shim calls and
// ADQAPI's revision check.
var loader = &dl.Loader{
	Env:     EnvLibrary,
	Virtual: "libadq.so",
	Names:   libraryNames,
	Err:     ErrNoLibrary,
	Check: func(lib *dl.Library) error {
		lay, err := findLayout(lib.Name())
		if err != nil {
			return err
		}
		if err := validateVersion(lib.Name(), lay.Path, lay.APIVersion); err != nil {
			return err
		}
		layout.Store(lay)
		return nil
	},
	Symbols: []dl.Symbol{
		{Name: "ADQAPI_ValidateVersion", Dst: slot(unsafe.Pointer(&tab.validate_version))},
		{Name: "CreateADQControlUnit", Dst: slot(unsafe.Pointer(&tab.create))},
		{Name: "DeleteADQControlUnit", Dst: slot(unsafe.Pointer(&tab.destroy))},
		{Name: "ADQControlUnit_EnableErrorTrace", Dst: slot(unsafe.Pointer(&tab.enable_error_trace))},
		{Name: "ADQControlUnit_ListDevices", Dst: slot(unsafe.Pointer(&tab.list_devices))},
		{Name: "ADQControlUnit_SetupDevice", Dst: slot(unsafe.Pointer(&tab.setup_device))},
		{Name: "ADQ_InitializeParameters", Dst: slot(unsafe.Pointer(&tab.initialize_parameters))},
		{Name: "ADQ_SetParameters", Dst: slot(unsafe.Pointer(&tab.set_parameters))},
		{Name: "ADQ_ReadUserRegister", Dst: slot(unsafe.Pointer(&tab.read_user_register))},
		{Name: "ADQ_WriteUserRegister", Dst: slot(unsafe.Pointer(&tab.write_user_register))},
		{Name: "ADQ_StartDataAcquisition", Dst: slot(unsafe.Pointer(&tab.start))},
		{Name: "ADQ_StopDataAcquisition", Dst: slot(unsafe.Pointer(&tab.stop))},
		{Name: "ADQ_WaitForP2pBuffers", Dst: slot(unsafe.Pointer(&tab.wait_p2p))},
		{Name: "ADQ_UnlockP2pBuffers", Dst: slot(unsafe.Pointer(&tab.unlock_p2p))},
		{Name: "ADQ_GetStatus", Dst: slot(unsafe.Pointer(&tab.get_status))},
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
func validateVersion(name, path string, v Version) error {
	switch r := int(C.vg_validate_version(C.int(v.Major), C.int(v.Minor))); r {
	case 0, -2:
		return nil
	case -1:
		return fmt.Errorf("%w: system ADQAPI version is incompatible with compiled version %d.%d (%s; the revision of "+
			"the layout table %s, made from another ADQAPI's header than this library's: %s)", ErrIncompatible,
			v.Major, v.Minor, name, path, layoutHowTo)
	default:
		return fmt.Errorf("%w: unexpected value in ADQAPI version check: %d (%s)", ErrIncompatible, r, name)
	}
}

// Library is the name libadq was loaded under ("" before Load succeeds).
func Library() string { return loader.Name() }
