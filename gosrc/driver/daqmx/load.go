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

// symbols are the entry points the shim calls, by table index.
var symbols = []struct {
	idx  C.int
	name string
}{
	{C.VGD_CreateTask, "DAQmxCreateTask"},
	{C.VGD_ClearTask, "DAQmxClearTask"},
	{C.VGD_StartTask, "DAQmxStartTask"},
	{C.VGD_StopTask, "DAQmxStopTask"},
	{C.VGD_CreateAOVoltageChan, "DAQmxCreateAOVoltageChan"},
	{C.VGD_CreateAIVoltageChan, "DAQmxCreateAIVoltageChan"},
	{C.VGD_CreateDOChan, "DAQmxCreateDOChan"},
	{C.VGD_CreateDIChan, "DAQmxCreateDIChan"},
	{C.VGD_CfgSampClkTiming, "DAQmxCfgSampClkTiming"},
	{C.VGD_CfgDigEdgeStartTrig, "DAQmxCfgDigEdgeStartTrig"},
	{C.VGD_SetSampClkTimebaseSrc, "DAQmxSetSampClkTimebaseSrc"},
	{C.VGD_SetSampClkTimebaseRate, "DAQmxSetSampClkTimebaseRate"},
	{C.VGD_SetSampClkTimebaseDiv, "DAQmxSetSampClkTimebaseDiv"},
	{C.VGD_CfgOutputBuffer, "DAQmxCfgOutputBuffer"},
	{C.VGD_CfgInputBuffer, "DAQmxCfgInputBuffer"},
	{C.VGD_SetWriteRegenMode, "DAQmxSetWriteRegenMode"},
	{C.VGD_WriteAnalogF64, "DAQmxWriteAnalogF64"},
	{C.VGD_WriteDigitalU32, "DAQmxWriteDigitalU32"},
	{C.VGD_ReadAnalogF64, "DAQmxReadAnalogF64"},
	{C.VGD_ReadDigitalU32, "DAQmxReadDigitalU32"},
	{C.VGD_GetErrorString, "DAQmxGetErrorString"},
	{C.VGD_GetExtendedErrorInfo, "DAQmxGetExtendedErrorInfo"},
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
	for _, s := range symbols {
		p, err := lib.Sym(s.name)
		if err != nil {
			return fmt.Errorf("%w: %s is not NI-DAQmx: %v", ErrNoLibrary, lib.Name(), err)
		}
		C.vgd_set(s.idx, p)
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
