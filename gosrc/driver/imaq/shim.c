// shim.c: the calls into NI-IMAQ through the function table (see shim.h).
#include "shim.h"

static void* table[VGI_COUNT];

void** vgi_table(void) { return table; }

#define F(idx, type) ((type)table[idx])
typedef uint32_t U;

int32_t vgi_interface_open(const char* name, uint32_t* ifid) {
	return F(VGI_InterfaceOpen, int32_t (*)(const char*, U*))(name, ifid);
}
int32_t vgi_session_open(uint32_t ifid, uint32_t* sid) {
	return F(VGI_SessionOpen, int32_t (*)(U, U*))(ifid, sid);
}
int32_t vgi_close(uint32_t id, uint32_t free_resources) {
	return F(VGI_Close, int32_t (*)(U, U))(id, free_resources);
}
int32_t vgi_get_attribute(uint32_t id, uint32_t attr, uint32_t* value) {
	return F(VGI_GetAttribute, int32_t (*)(U, U, void*))(id, attr, value);
}
int32_t vgi_set_attribute(uint32_t id, uint32_t attr, uint32_t value) {
	return F(VGI_SetAttribute2, int32_t (*)(U, U, ...))(id, attr, value);
}
int32_t vgi_fit_roi(uint32_t sid, uint32_t mode, uint32_t top, uint32_t left, uint32_t height, uint32_t width,
                    uint32_t* out) {
	return F(VGI_SessionFitROI, int32_t (*)(U, U, U, U, U, U, U*, U*, U*, U*))(sid, mode, top, left, height, width,
	                                                                       &out[0], &out[1], &out[2], &out[3]);
}
int32_t vgi_configure_roi(uint32_t sid, uint32_t top, uint32_t left, uint32_t height, uint32_t width) {
	return F(VGI_SessionConfigureROI, int32_t (*)(U, U, U, U, U))(sid, top, left, height, width);
}
int32_t vgi_get_roi(uint32_t sid, uint32_t* out) {
	return F(VGI_SessionGetROI, int32_t (*)(U, U*, U*, U*, U*))(sid, &out[0], &out[1], &out[2], &out[3]);
}
int32_t vgi_buffer_size(uint32_t sid, uint32_t* size) {
	return F(VGI_SessionGetBufferSize, int32_t (*)(U, U*))(sid, size);
}
int32_t vgi_ring_setup(uint32_t sid, uint32_t n, uintptr_t* buffers, uint32_t skip, uint32_t start_now) {
	// uintptr_t and void* have one size and representation on the platforms
	// NI-IMAQ supports; the list is passed as the void*[] NI-IMAQ expects.
	return F(VGI_RingSetup, int32_t (*)(U, U, void**, U, U))(sid, n, (void**)buffers, skip, start_now);
}
int32_t vgi_start(uint32_t sid) { return F(VGI_SessionStartAcquisition, int32_t (*)(U))(sid); }
int32_t vgi_stop(uint32_t sid) { return F(VGI_SessionStopAcquisition, int32_t (*)(U))(sid); }
int32_t vgi_examine(uint32_t sid, uint32_t which, uint32_t* number, uintptr_t* addr) {
	void* p = 0;
	int32_t e = F(VGI_SessionExamineBuffer2, int32_t (*)(U, U, U*, void**))(sid, which, number, &p);
	*addr = (uintptr_t)p;
	return e;
}
int32_t vgi_release(uint32_t sid) { return F(VGI_SessionReleaseBuffer, int32_t (*)(U))(sid); }
int32_t vgi_line_trigger(uint32_t sid, uint32_t signal, uint32_t line, uint32_t polarity, uint32_t skip) {
	return F(VGI_SessionLineTrigSource2, int32_t (*)(U, U, U, U, U))(sid, signal, line, polarity, skip);
}
int32_t vgi_frame_trigger(uint32_t sid, uint32_t signal, uint32_t line, uint32_t polarity, uint32_t timeout,
                          uint32_t action) {
	return F(VGI_SessionTriggerConfigure2, int32_t (*)(U, U, U, U, U, U))(sid, signal, line, polarity, timeout,
	                                                                         action);
}
int32_t vgi_trigger_drive(uint32_t sid, uint32_t signal, uint32_t line, uint32_t polarity, uint32_t source) {
	return F(VGI_SessionTriggerDrive2, int32_t (*)(U, U, U, U, U))(sid, signal, line, polarity, source);
}
int32_t vgi_show_error(int32_t code, char* buf) { return F(VGI_ShowError, int32_t (*)(int32_t, char*))(code, buf); }
int32_t vgi_query_names(uint32_t index, char* buf) {
	return F(VGI_InterfaceQueryNames, int32_t (*)(U, char*))(index, buf);
}
