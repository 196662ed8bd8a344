package daqmx

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

// table is the shim's function table (shim.c), filled by the loader.
var table = (*[C.VGD_COUNT]unsafe.Pointer)(unsafe.Pointer(C.vgd_table()))

// loader declares the library: its candidates and the entry points the
// shim calls. The version functions are optional: every NI-DAQmx since 8.x
// exports them, but a library lacking them can still drive the card
// (Version is then "").
var loader = &dl.Loader{
	Env:     LibraryEnv,
	Virtual: "libnidaqmx.so",
	Names:   systemNames,
	Err:     ErrNoLibrary,
	Missing: func(e *dl.SymbolError) error {
		return fmt.Errorf("%w: %s lacks %s: it is not NI-DAQmx, or an NI-DAQmx older than the functions vortexgo calls "+
			"(update NI-DAQmx): %w", ErrUnsupportedLibrary, e.Library, e.Symbol, e)
	},
	Symbols: []dl.Symbol{
		{Name: "DAQmxCreateTask", Dst: &table[C.VGD_CreateTask]},
		{Name: "DAQmxClearTask", Dst: &table[C.VGD_ClearTask]},
		{Name: "DAQmxStartTask", Dst: &table[C.VGD_StartTask]},
		{Name: "DAQmxStopTask", Dst: &table[C.VGD_StopTask]},
		{Name: "DAQmxCreateAOVoltageChan", Dst: &table[C.VGD_CreateAOVoltageChan]},
		{Name: "DAQmxCreateAIVoltageChan", Dst: &table[C.VGD_CreateAIVoltageChan]},
		{Name: "DAQmxCreateDOChan", Dst: &table[C.VGD_CreateDOChan]},
		{Name: "DAQmxCreateDIChan", Dst: &table[C.VGD_CreateDIChan]},
		{Name: "DAQmxCfgSampClkTiming", Dst: &table[C.VGD_CfgSampClkTiming]},
		{Name: "DAQmxCfgDigEdgeStartTrig", Dst: &table[C.VGD_CfgDigEdgeStartTrig]},
		{Name: "DAQmxSetSampClkTimebaseSrc", Dst: &table[C.VGD_SetSampClkTimebaseSrc]},
		{Name: "DAQmxSetSampClkTimebaseRate", Dst: &table[C.VGD_SetSampClkTimebaseRate]},
		{Name: "DAQmxSetSampClkTimebaseDiv", Dst: &table[C.VGD_SetSampClkTimebaseDiv]},
		{Name: "DAQmxCfgOutputBuffer", Dst: &table[C.VGD_CfgOutputBuffer]},
		{Name: "DAQmxCfgInputBuffer", Dst: &table[C.VGD_CfgInputBuffer]},
		{Name: "DAQmxSetWriteRegenMode", Dst: &table[C.VGD_SetWriteRegenMode]},
		{Name: "DAQmxWriteAnalogF64", Dst: &table[C.VGD_WriteAnalogF64]},
		{Name: "DAQmxWriteDigitalU32", Dst: &table[C.VGD_WriteDigitalU32]},
		{Name: "DAQmxReadAnalogF64", Dst: &table[C.VGD_ReadAnalogF64]},
		{Name: "DAQmxReadDigitalU32", Dst: &table[C.VGD_ReadDigitalU32]},
		{Name: "DAQmxGetErrorString", Dst: &table[C.VGD_GetErrorString]},
		{Name: "DAQmxGetExtendedErrorInfo", Dst: &table[C.VGD_GetExtendedErrorInfo]},
		{Name: "DAQmxGetSysNIDAQMajorVersion", Optional: true, Dst: &table[C.VGD_GetSysNIDAQMajorVersion]},
		{Name: "DAQmxGetSysNIDAQMinorVersion", Optional: true, Dst: &table[C.VGD_GetSysNIDAQMinorVersion]},
		{Name: "DAQmxGetSysNIDAQUpdateVersion", Optional: true, Dst: &table[C.VGD_GetSysNIDAQUpdateVersion]},
	},
}

// Load opens the NI-DAQmx library if it is not open yet: the path in
// $VORTEXGO_NIDAQMX_LIBRARY, else (VORTEXGO_INSTRUMENTS=virtual) the
// virtual card, else the system's libnidaqmx.so. A failure wraps
// ErrNoLibrary and keeps each candidate's dlopen message; a later Load
// tries again (the variable may have been set meanwhile).
func Load() error {
	_, err := loader.Load()
	return err
}

// ErrUnsupportedLibrary wraps the error of a library that loads but lacks a
// function vortexgo calls. It also wraps ErrNoLibrary, so a caller asking
// only "is NI-DAQmx usable" needs one errors.Is.
var ErrUnsupportedLibrary = fmt.Errorf("%w: unsupported NI-DAQmx library", ErrNoLibrary)

// Version is the loaded NI-DAQmx's version ("23.5.0"), or "" before Load
// succeeds or when the library does not report it.
func Version() string {
	if loader.Name() == "" {
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
func Library() string { return loader.Name() }
