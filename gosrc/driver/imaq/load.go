package imaq

/*
#cgo CFLAGS: -O2
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/instrument"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// LibraryEnv names the environment variable holding the path of the
// NI-IMAQ library to load instead of the system's libniimaq.so (an unusual
// install, or the virtual instrument's build/virtual/libniimaq.so).
const LibraryEnv = "VORTEXGO_NIIMAQ_LIBRARY"

// systemNames are the names NI Vision Acquisition Software for Linux
// installs NI-IMAQ's C library under.
var systemNames = []string{"libniimaq.so", "libniimaq.so.1"}

// ErrNoLibrary is wrapped by every error that comes from the NI-IMAQ
// library not being found or not being NI-IMAQ.
var ErrNoLibrary = errors.New("imaq: the NI-IMAQ library (libniimaq.so) could not be loaded, expected NI Vision " +
	"Acquisition Software installed (NI-IMAQ), or " + LibraryEnv + "=/path/to/libniimaq.so (vortexgo's virtual " +
	"camera: `make virtual`, then " + instrument.EnvInstruments + "=virtual)")

// ErrUnsupportedLibrary wraps the error of a library that loads but lacks a
// function vortexgo calls; it also wraps ErrNoLibrary.
var ErrUnsupportedLibrary = fmt.Errorf("%w: unsupported NI-IMAQ library", ErrNoLibrary)

// table is the shim's function table (shim.c), filled by the loader.
var table = (*[C.VGI_COUNT]unsafe.Pointer)(unsafe.Pointer(C.vgi_table()))

// loader declares the library: its candidates and the entry points the
// shim calls.
var loader = &dl.Loader{
	Env:     LibraryEnv,
	Virtual: "libniimaq.so",
	Names:   systemNames,
	Err:     ErrNoLibrary,
	Missing: func(e *dl.SymbolError) error {
		return fmt.Errorf("%w: %s lacks %s: it is not NI-IMAQ, or one older than the functions vortexgo calls: %w",
			ErrUnsupportedLibrary, e.Library, e.Symbol, e)
	},
	Symbols: []dl.Symbol{
		{Name: "imgInterfaceOpen", Dst: &table[C.VGI_InterfaceOpen]},
		{Name: "imgSessionOpen", Dst: &table[C.VGI_SessionOpen]},
		{Name: "imgClose", Dst: &table[C.VGI_Close]},
		{Name: "imgGetAttribute", Dst: &table[C.VGI_GetAttribute]},
		{Name: "imgSetAttribute2", Dst: &table[C.VGI_SetAttribute2]},
		{Name: "imgSessionFitROI", Dst: &table[C.VGI_SessionFitROI]},
		{Name: "imgSessionConfigureROI", Dst: &table[C.VGI_SessionConfigureROI]},
		{Name: "imgSessionGetROI", Dst: &table[C.VGI_SessionGetROI]},
		{Name: "imgSessionGetBufferSize", Dst: &table[C.VGI_SessionGetBufferSize]},
		{Name: "imgRingSetup", Dst: &table[C.VGI_RingSetup]},
		{Name: "imgSessionStartAcquisition", Dst: &table[C.VGI_SessionStartAcquisition]},
		{Name: "imgSessionStopAcquisition", Dst: &table[C.VGI_SessionStopAcquisition]},
		{Name: "imgSessionExamineBuffer2", Dst: &table[C.VGI_SessionExamineBuffer2]},
		{Name: "imgSessionReleaseBuffer", Dst: &table[C.VGI_SessionReleaseBuffer]},
		{Name: "imgSessionLineTrigSource2", Dst: &table[C.VGI_SessionLineTrigSource2]},
		{Name: "imgSessionTriggerConfigure2", Dst: &table[C.VGI_SessionTriggerConfigure2]},
		{Name: "imgSessionTriggerDrive2", Dst: &table[C.VGI_SessionTriggerDrive2]},
		{Name: "imgShowError", Dst: &table[C.VGI_ShowError]},
		{Name: "imgInterfaceQueryNames", Dst: &table[C.VGI_InterfaceQueryNames]},
	},
}

// Load opens the NI-IMAQ library if it is not open yet: the path in
// $VORTEXGO_NIIMAQ_LIBRARY, else (VORTEXGO_INSTRUMENTS=virtual) the virtual
// camera, else the system's libniimaq.so. A failure wraps ErrNoLibrary and
// keeps each candidate's dlopen message; a later Load tries again.
func Load() error {
	_, err := loader.Load()
	return err
}

// Library is the name the library was loaded under ("" before Load
// succeeds).
func Library() string { return loader.Name() }
