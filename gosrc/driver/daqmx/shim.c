// shim.c: the calls into NI-DAQmx through the function table (see shim.h).
// Constants are NI's DAQmx_Val_* values (nidaqmx/constants.py).
#include "shim.h"

#define VAL_VOLTS 10348
#define VAL_CHAN_FOR_ALL_LINES 1
#define VAL_GROUP_BY_SCAN_NUMBER 1

static void* table[VGD_COUNT];

void** vgd_table(void) { return table; }

typedef void* TaskHandle;
#define H(t) ((TaskHandle)(t))
#define F(idx, type) ((type)table[idx])

int32_t vgd_create_task(const char* name, uintptr_t* task) {
	TaskHandle h = NULL;
	int32_t e = F(VGD_CreateTask, int32_t (*)(const char*, TaskHandle*))(name, &h);
	*task = (uintptr_t)h;
	return e;
}
int32_t vgd_clear_task(uintptr_t t) { return F(VGD_ClearTask, int32_t (*)(TaskHandle))(H(t)); }
int32_t vgd_start_task(uintptr_t t) { return F(VGD_StartTask, int32_t (*)(TaskHandle))(H(t)); }
int32_t vgd_stop_task(uintptr_t t) { return F(VGD_StopTask, int32_t (*)(TaskHandle))(H(t)); }

int32_t vgd_create_ao_voltage(uintptr_t t, const char* port, double min, double max) {
	return F(VGD_CreateAOVoltageChan, int32_t (*)(TaskHandle, const char*, const char*, double, double, int32_t,
	                                               const char*))(H(t), port, "", min, max, VAL_VOLTS, "");
}
int32_t vgd_create_ai_voltage(uintptr_t t, const char* port, int32_t terminal, double min, double max) {
	return F(VGD_CreateAIVoltageChan, int32_t (*)(TaskHandle, const char*, const char*, int32_t, double, double,
	                                               int32_t, const char*))(H(t), port, "", terminal, min, max, VAL_VOLTS,
	                                                                      "");
}
int32_t vgd_create_do(uintptr_t t, const char* lines) {
	return F(VGD_CreateDOChan, int32_t (*)(TaskHandle, const char*, const char*, int32_t))(H(t), lines, "",
	                                                                                       VAL_CHAN_FOR_ALL_LINES);
}
int32_t vgd_create_di(uintptr_t t, const char* lines) {
	return F(VGD_CreateDIChan, int32_t (*)(TaskHandle, const char*, const char*, int32_t))(H(t), lines, "",
	                                                                                       VAL_CHAN_FOR_ALL_LINES);
}
int32_t vgd_cfg_samp_clk_timing(uintptr_t t, const char* source, double rate, int32_t edge, int32_t mode,
                                uint64_t samps) {
	return F(VGD_CfgSampClkTiming, int32_t (*)(TaskHandle, const char*, double, int32_t, int32_t, uint64_t))(
	    H(t), source, rate, edge, mode, samps);
}
int32_t vgd_cfg_dig_edge_start_trig(uintptr_t t, const char* source, int32_t edge) {
	return F(VGD_CfgDigEdgeStartTrig, int32_t (*)(TaskHandle, const char*, int32_t))(H(t), source, edge);
}
int32_t vgd_set_timebase_src(uintptr_t t, const char* source) {
	return F(VGD_SetSampClkTimebaseSrc, int32_t (*)(TaskHandle, const char*))(H(t), source);
}
int32_t vgd_set_timebase_rate(uintptr_t t, double rate) {
	return F(VGD_SetSampClkTimebaseRate, int32_t (*)(TaskHandle, double))(H(t), rate);
}
int32_t vgd_set_timebase_div(uintptr_t t, uint32_t div) {
	return F(VGD_SetSampClkTimebaseDiv, int32_t (*)(TaskHandle, uint32_t))(H(t), div);
}
int32_t vgd_cfg_output_buffer(uintptr_t t, uint32_t samps) {
	return F(VGD_CfgOutputBuffer, int32_t (*)(TaskHandle, uint32_t))(H(t), samps);
}
int32_t vgd_cfg_input_buffer(uintptr_t t, uint32_t samps) {
	return F(VGD_CfgInputBuffer, int32_t (*)(TaskHandle, uint32_t))(H(t), samps);
}
int32_t vgd_set_write_regen_mode(uintptr_t t, int32_t mode) {
	return F(VGD_SetWriteRegenMode, int32_t (*)(TaskHandle, int32_t))(H(t), mode);
}

// The writes and reads use DAQmx_Val_GroupByScanNumber (interleaved rows),
// autoStart false, as vortex's driver does.
int32_t vgd_write_analog(uintptr_t t, int32_t n, double timeout, const double* data, int32_t* written) {
	return F(VGD_WriteAnalogF64, int32_t (*)(TaskHandle, int32_t, uint32_t, double, uint32_t, const double*, int32_t*,
	                                          uint32_t*))(H(t), n, 0, timeout, VAL_GROUP_BY_SCAN_NUMBER, data, written,
	                                                      NULL);
}
int32_t vgd_write_digital(uintptr_t t, int32_t n, double timeout, const uint32_t* data, int32_t* written) {
	return F(VGD_WriteDigitalU32, int32_t (*)(TaskHandle, int32_t, uint32_t, double, uint32_t, const uint32_t*,
	                                           int32_t*, uint32_t*))(H(t), n, 0, timeout, VAL_GROUP_BY_SCAN_NUMBER,
	                                                                 data, written, NULL);
}
int32_t vgd_read_analog(uintptr_t t, int32_t n, double timeout, double* data, uint32_t cap, int32_t* got) {
	return F(VGD_ReadAnalogF64, int32_t (*)(TaskHandle, int32_t, double, uint32_t, double*, uint32_t, int32_t*,
	                                         uint32_t*))(H(t), n, timeout, VAL_GROUP_BY_SCAN_NUMBER, data, cap, got,
	                                                     NULL);
}
int32_t vgd_read_digital(uintptr_t t, int32_t n, double timeout, uint32_t* data, uint32_t cap, int32_t* got) {
	return F(VGD_ReadDigitalU32, int32_t (*)(TaskHandle, int32_t, double, uint32_t, uint32_t*, uint32_t, int32_t*,
	                                          uint32_t*))(H(t), n, timeout, VAL_GROUP_BY_SCAN_NUMBER, data, cap, got,
	                                                      NULL);
}
int32_t vgd_error_string(int32_t code, char* buf, uint32_t cap) {
	return F(VGD_GetErrorString, int32_t (*)(int32_t, char*, uint32_t))(code, buf, cap);
}
int32_t vgd_extended_error(char* buf, uint32_t cap) {
	return F(VGD_GetExtendedErrorInfo, int32_t (*)(char*, uint32_t))(buf, cap);
}
int32_t vgd_version(uint32_t* major, uint32_t* minor, uint32_t* update) {
	typedef int32_t (*get)(uint32_t*);
	if (!table[VGD_GetSysNIDAQMajorVersion] || !table[VGD_GetSysNIDAQMinorVersion] ||
	    !table[VGD_GetSysNIDAQUpdateVersion]) {
		return -1;
	}
	int32_t e = F(VGD_GetSysNIDAQMajorVersion, get)(major);
	if (e == 0) e = F(VGD_GetSysNIDAQMinorVersion, get)(minor);
	if (e == 0) e = F(VGD_GetSysNIDAQUpdateVersion, get)(update);
	return e;
}
