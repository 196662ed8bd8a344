// shim.h declares the C side of the NI-DAQmx shim.
//
// No NI header is included: the types of the functions called are declared
// here from NI's published C API as the `nidaqmx` PyPI package (1.7.0,
// nidaqmx/_library_interpreter.py) declares their arguments (TaskHandle a
// void*, int32/uInt32/uInt64/float64/bool32 the fixed-size C types), so
// vortexgo builds without NI-DAQmx installed. A TaskHandle crosses into Go
// as a uintptr_t, never as a Go pointer.
#ifndef VG_DAQMX_SHIM_H
#define VG_DAQMX_SHIM_H

#include <stddef.h>
#include <stdint.h>

// Indices into the function table, filled from dlsym by Go (load.go).
enum {
	VGD_CreateTask,
	VGD_ClearTask,
	VGD_StartTask,
	VGD_StopTask,
	VGD_CreateAOVoltageChan,
	VGD_CreateAIVoltageChan,
	VGD_CreateDOChan,
	VGD_CreateDIChan,
	VGD_CfgSampClkTiming,
	VGD_CfgDigEdgeStartTrig,
	VGD_SetSampClkTimebaseSrc,
	VGD_SetSampClkTimebaseRate,
	VGD_SetSampClkTimebaseDiv,
	VGD_CfgOutputBuffer,
	VGD_CfgInputBuffer,
	VGD_SetWriteRegenMode,
	VGD_WriteAnalogF64,
	VGD_WriteDigitalU32,
	VGD_ReadAnalogF64,
	VGD_ReadDigitalU32,
	VGD_GetErrorString,
	VGD_GetExtendedErrorInfo,
	// Optional (a library without them still loads; Version reports "").
	VGD_GetSysNIDAQMajorVersion,
	VGD_GetSysNIDAQMinorVersion,
	VGD_GetSysNIDAQUpdateVersion,
	VGD_COUNT
};

// vgd_table is the function table, indexed by the enum above; the Go loader
// (load.go, through dl.Loader) stores the resolved functions in it.
void** vgd_table(void);

int32_t vgd_create_task(const char* name, uintptr_t* task);
int32_t vgd_clear_task(uintptr_t task);
int32_t vgd_start_task(uintptr_t task);
int32_t vgd_stop_task(uintptr_t task);
int32_t vgd_create_ao_voltage(uintptr_t task, const char* port, double min, double max);
int32_t vgd_create_ai_voltage(uintptr_t task, const char* port, int32_t terminal, double min, double max);
int32_t vgd_create_do(uintptr_t task, const char* lines);
int32_t vgd_create_di(uintptr_t task, const char* lines);
int32_t vgd_cfg_samp_clk_timing(uintptr_t task, const char* source, double rate, int32_t edge, int32_t mode,
                                uint64_t samps);
int32_t vgd_cfg_dig_edge_start_trig(uintptr_t task, const char* source, int32_t edge);
int32_t vgd_set_timebase_src(uintptr_t task, const char* source);
int32_t vgd_set_timebase_rate(uintptr_t task, double rate);
int32_t vgd_set_timebase_div(uintptr_t task, uint32_t div);
int32_t vgd_cfg_output_buffer(uintptr_t task, uint32_t samps);
int32_t vgd_cfg_input_buffer(uintptr_t task, uint32_t samps);
int32_t vgd_set_write_regen_mode(uintptr_t task, int32_t mode);
// The data pointers are C memory or pinned Go memory held for the call.
int32_t vgd_write_analog(uintptr_t task, int32_t n, double timeout, const double* data, int32_t* written);
int32_t vgd_write_digital(uintptr_t task, int32_t n, double timeout, const uint32_t* data, int32_t* written);
int32_t vgd_read_analog(uintptr_t task, int32_t n, double timeout, double* data, uint32_t cap, int32_t* got);
int32_t vgd_read_digital(uintptr_t task, int32_t n, double timeout, uint32_t* data, uint32_t cap, int32_t* got);
// vgd_error_string and vgd_extended_error copy the text into buf (cap
// bytes); they return NI's status.
int32_t vgd_error_string(int32_t code, char* buf, uint32_t cap);
int32_t vgd_extended_error(char* buf, uint32_t cap);
// vgd_version reads NI-DAQmx's major.minor.update; it returns -1 when the
// library does not export the version functions.
int32_t vgd_version(uint32_t* major, uint32_t* minor, uint32_t* update);

#endif
