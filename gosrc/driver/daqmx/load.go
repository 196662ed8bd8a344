package daqmx

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
// NI-DAQmx library to load instead of the system's libnidaqmx.so (an
// unusual install, or the virtual instrument's build/virtual/libnidaqmx.so).
const LibraryEnv = "VORTEXGO_NIDAQMX_LIBRARY"

// systemNames are the names NI-DAQmx for Linux installs its C library under.
var systemNames = []string{"libnidaqmx.so", "libnidaqmx.so.1"}

// ErrNoLibrary is wrapped by every error that comes from the NI-DAQmx
// library not being found or not being NI-DAQmx.
var ErrNoLibrary = errors.New("daqmx: the NI-DAQmx library (libnidaqmx.so) could not be loaded, expected NI-DAQmx " +
	"installed (NI's ni-daqmx package), or " + LibraryEnv + "=/path/to/libnidaqmx.so (vortexgo's virtual card: " +
	"`make virtual`, then " + instrument.EnvInstruments + "=virtual)")

// symbols are the entry points the shim calls, by table index. The
// version functions are optional: every NI-DAQmx since 8.x exports them,
// but a library lacking them can still drive the card (Version is then "").
var symbols = []struct {
	idx      C.int
	name     string
	optional bool
}{
	{C.VGD_CreateTask, "DAQmxCreateTask", false},
	{C.VGD_ClearTask, "DAQmxClearTask", false},
	{C.VGD_StartTask, "DAQmxStartTask", false},
	{C.VGD_StopTask, "DAQmxStopTask", false},
	{C.VGD_CreateAOVoltageChan, "DAQmxCreateAOVoltageChan", false},
	{C.VGD_CreateAIVoltageChan, "DAQmxCreateAIVoltageChan", false},
	{C.VGD_CreateDOChan, "DAQmxCreateDOChan", false},
	{C.VGD_CreateDIChan, "DAQmxCreateDIChan", false},
	{C.VGD_CfgSampClkTiming, "DAQmxCfgSampClkTiming", false},
	{C.VGD_CfgDigEdgeStartTrig, "DAQmxCfgDigEdgeStartTrig", false},
	{C.VGD_SetSampClkTimebaseSrc, "DAQmxSetSampClkTimebaseSrc", false},
	{C.VGD_SetSampClkTimebaseRate, "DAQmxSetSampClkTimebaseRate", false},
	{C.VGD_SetSampClkTimebaseDiv, "DAQmxSetSampClkTimebaseDiv", false},
	{C.VGD_CfgOutputBuffer, "DAQmxCfgOutputBuffer", false},
	{C.VGD_CfgInputBuffer, "DAQmxCfgInputBuffer", false},
	{C.VGD_SetWriteRegenMode, "DAQmxSetWriteRegenMode", false},
	{C.VGD_WriteAnalogF64, "DAQmxWriteAnalogF64", false},
	{C.VGD_WriteDigitalU32, "DAQmxWriteDigitalU32", false},
	{C.VGD_ReadAnalogF64, "DAQmxReadAnalogF64", false},
	{C.VGD_ReadDigitalU32, "DAQmxReadDigitalU32", false},
	{C.VGD_GetErrorString, "DAQmxGetErrorString", false},
	{C.VGD_GetExtendedErrorInfo, "DAQmxGetExtendedErrorInfo", false},
	{C.VGD_GetSysNIDAQMajorVersion, "DAQmxGetSysNIDAQMajorVersion", true},
	{C.VGD_GetSysNIDAQMinorVersion, "DAQmxGetSysNIDAQMinorVersion", true},
	{C.VGD_GetSysNIDAQUpdateVersion, "DAQmxGetSysNIDAQUpdateVersion", true},
}

var (
	mu     sync.Mutex
	loaded *dl.Library
)

// Load opens the NI-DAQmx library if it is not open yet: the path in
// $VORTEXGO_NIDAQMX_LIBRARY, else the system's libnidaqmx.so. A failure
// wraps ErrNoLibrary and keeps each candidate's dlopen message; a later
// Load tries again (the variable may have been set meanwhile).
func Load() error {
	mu.Lock()
	defer mu.Unlock()
	if loaded != nil {
		return nil
	}
	names := systemNames
	if p, _ := instrument.Library(LibraryEnv, "libnidaqmx.so"); p != "" {
		names = []string{p} // the user named one (or the virtual instrument): never fall back to another silently
	}
	lib, err := dl.Open(names...)
	if err != nil {
		return fmt.Errorf("%w (%v)", ErrNoLibrary, err)
	}
	// Resolve everything before publishing anything: a library that lacks
	// one function leaves the table as it was (empty), never half filled.
	ptrs := make([]unsafe.Pointer, len(symbols))
	for i, s := range symbols {
		p, err := lib.Sym(s.name)
		if err != nil && !s.optional {
			return fmt.Errorf("%w: %s lacks %s: it is not NI-DAQmx, or an NI-DAQmx older than the functions vortexgo calls "+
				"(update NI-DAQmx): %v", ErrUnsupportedLibrary, lib.Name(), s.name, err)
		}
		ptrs[i] = p
	}
	for i, s := range symbols {
		C.vgd_set(s.idx, ptrs[i])
	}
	loaded = lib
	return nil
}

// ErrUnsupportedLibrary wraps the error of a library that loads but lacks a
// function vortexgo calls. It also wraps ErrNoLibrary, so a caller asking
// only "is NI-DAQmx usable" needs one errors.Is.
var ErrUnsupportedLibrary = fmt.Errorf("%w: unsupported NI-DAQmx library", ErrNoLibrary)

// Version is the loaded NI-DAQmx's version ("23.5.0"), or "" before Load
// succeeds or when the library does not report it.
func Version() string {
	mu.Lock()
	defer mu.Unlock()
	if loaded == nil {
		return ""
	}
	var major, minor, update C.uint32_t
	if C.vgd_version(&major, &minor, &update) != 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, update)
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
