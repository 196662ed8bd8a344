// shim.h declares the C side of the NI-IMAQ shim.
//
// No NI header is included: the functions called are declared here from
// NI's public niimaq.h (NI-IMAQ 2011+, as redistributed in public
// repositories) and NI-IMAQ's function reference: INTERFACE_ID, SESSION_ID
// and the attribute values are uInt32, IMG_ERR is Int32; imgSetAttribute2
// is variadic (cdecl), the rest take fixed arguments. vortexgo builds
// without NI-IMAQ installed.
#ifndef VG_IMAQ_SHIM_H
#define VG_IMAQ_SHIM_H

#include <stddef.h>
#include <stdint.h>

// Indices into the function table, filled from dlsym by Go (load.go).
enum {
	VGI_InterfaceOpen,
	VGI_SessionOpen,
	VGI_Close,
	VGI_GetAttribute,
	VGI_SetAttribute2,
	VGI_SessionFitROI,
	VGI_SessionConfigureROI,
	VGI_SessionGetROI,
	VGI_SessionGetBufferSize,
	VGI_RingSetup,
	VGI_SessionStartAcquisition,
	VGI_SessionStopAcquisition,
	VGI_SessionExamineBuffer2,
	VGI_SessionReleaseBuffer,
	VGI_SessionLineTrigSource2,
	VGI_SessionTriggerConfigure2,
	VGI_SessionTriggerDrive2,
	VGI_ShowError,
	VGI_InterfaceQueryNames,
	VGI_COUNT
};

// vgi_table is the function table, indexed by the enum above; the Go loader
// (load.go, through dl.Loader) stores the resolved functions in it.
void** vgi_table(void);

int32_t vgi_interface_open(const char* name, uint32_t* ifid);
int32_t vgi_session_open(uint32_t ifid, uint32_t* sid);
int32_t vgi_close(uint32_t id, uint32_t free_resources);
int32_t vgi_get_attribute(uint32_t id, uint32_t attr, uint32_t* value);
int32_t vgi_set_attribute(uint32_t id, uint32_t attr, uint32_t value);
int32_t vgi_fit_roi(uint32_t sid, uint32_t mode, uint32_t top, uint32_t left, uint32_t height, uint32_t width,
                    uint32_t* out);
int32_t vgi_configure_roi(uint32_t sid, uint32_t top, uint32_t left, uint32_t height, uint32_t width);
int32_t vgi_get_roi(uint32_t sid, uint32_t* out);
int32_t vgi_buffer_size(uint32_t sid, uint32_t* size);
// The buffers are C memory (or memory outside the Go heap) the library
// keeps until the session's ring is replaced or the session closed.
int32_t vgi_ring_setup(uint32_t sid, uint32_t n, uintptr_t* buffers, uint32_t skip, uint32_t start_now);
int32_t vgi_start(uint32_t sid);
int32_t vgi_stop(uint32_t sid);
int32_t vgi_examine(uint32_t sid, uint32_t which, uint32_t* number, uintptr_t* addr);
int32_t vgi_release(uint32_t sid);
int32_t vgi_line_trigger(uint32_t sid, uint32_t signal, uint32_t line, uint32_t polarity, uint32_t skip);
int32_t vgi_frame_trigger(uint32_t sid, uint32_t signal, uint32_t line, uint32_t polarity, uint32_t timeout,
                          uint32_t action);
int32_t vgi_trigger_drive(uint32_t sid, uint32_t signal, uint32_t line, uint32_t polarity, uint32_t source);
// vgi_show_error writes the error's text into buf (at least 256 bytes).
int32_t vgi_show_error(int32_t code, char* buf);
int32_t vgi_query_names(uint32_t index, char* buf);

#endif
