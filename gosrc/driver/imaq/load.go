package imaq

/*
#cgo CFLAGS: -O2
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

// symbols are the entry points the shim calls, by table index.
var symbols = []struct {
	idx  C.int
	name string
}{
	{C.VGI_InterfaceOpen, "imgInterfaceOpen"},
	{C.VGI_SessionOpen, "imgSessionOpen"},
	{C.VGI_Close, "imgClose"},
	{C.VGI_GetAttribute, "imgGetAttribute"},
	{C.VGI_SetAttribute2, "imgSetAttribute2"},
	{C.VGI_SessionFitROI, "imgSessionFitROI"},
	{C.VGI_SessionConfigureROI, "imgSessionConfigureROI"},
	{C.VGI_SessionGetROI, "imgSessionGetROI"},
	{C.VGI_SessionGetBufferSize, "imgSessionGetBufferSize"},
	{C.VGI_RingSetup, "imgRingSetup"},
	{C.VGI_SessionStartAcquisition, "imgSessionStartAcquisition"},
	{C.VGI_SessionStopAcquisition, "imgSessionStopAcquisition"},
	{C.VGI_SessionExamineBuffer2, "imgSessionExamineBuffer2"},
	{C.VGI_SessionReleaseBuffer, "imgSessionReleaseBuffer"},
	{C.VGI_SessionLineTrigSource2, "imgSessionLineTrigSource2"},
	{C.VGI_SessionTriggerConfigure2, "imgSessionTriggerConfigure2"},
	{C.VGI_SessionTriggerDrive2, "imgSessionTriggerDrive2"},
	{C.VGI_ShowError, "imgShowError"},
	{C.VGI_InterfaceQueryNames, "imgInterfaceQueryNames"},
}

var (
	mu     sync.Mutex
	loaded *dl.Library
)

// Load opens the NI-IMAQ library if it is not open yet: the path in
// $VORTEXGO_NIIMAQ_LIBRARY, else (VORTEXGO_INSTRUMENTS=virtual) the virtual
// camera, else the system's libniimaq.so. A failure wraps ErrNoLibrary and
// keeps each candidate's dlopen message; a later Load tries again.
func Load() error {
	mu.Lock()
	defer mu.Unlock()
	if loaded != nil {
		return nil
	}
	names := systemNames
	if p, _ := instrument.Library(LibraryEnv, "libniimaq.so"); p != "" {
		names = []string{p} // the user named one: never fall back to another silently
	}
	lib, err := dl.Open(names...)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoLibrary, err)
	}
	// Resolve everything before publishing anything: a library lacking one
	// function leaves the table empty, never half filled.
	ptrs := make([]unsafe.Pointer, len(symbols))
	for i, s := range symbols {
		p, err := lib.Sym(s.name)
		if err != nil {
			return fmt.Errorf("%w: %s lacks %s: it is not NI-IMAQ, or one older than the functions vortexgo calls: %v",
				ErrUnsupportedLibrary, lib.Name(), s.name, err)
		}
		ptrs[i] = p
	}
	for i, s := range symbols {
		C.vgi_set(s.idx, ptrs[i])
	}
	loaded = lib
	return nil
}

// Library is the name the library was loaded under ("" before Load
// succeeds).
func Library() string {
	mu.Lock()
	defer mu.Unlock()
	if loaded == nil {
		return ""
	}
	return loaded.Name()
}
