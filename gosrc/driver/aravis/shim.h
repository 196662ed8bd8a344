// shim.h declares the C side of the Aravis shim.
//
// No Aravis or GLib header is included: the functions called are declared
// in shim.c from Aravis 0.8's public headers (src/arvcamera.h, arvstream.h,
// arvbuffer.h, arvsystem.h, arvfakecamera.h of AravisProject/aravis, tag
// 0.8.26) and GLib's (GError is { GQuark domain; gint code; gchar *message; },
// g_object_unref, g_error_free, g_signal_connect_data, g_object_set), so
// vortexgo builds without libaravis-0.8-dev. Every GObject (camera, stream)
// crosses into Go as a uintptr_t, never as a Go pointer.
#ifndef VG_ARAVIS_SHIM_H
#define VG_ARAVIS_SHIM_H

#include <stddef.h>
#include <stdint.h>

// Indices into the function table, filled from dlsym by Go (load.go).
enum {
	VGA_enable_interface,
	VGA_update_device_list,
	VGA_get_n_devices,
	VGA_get_device_id,
	VGA_camera_new,
	VGA_camera_get_device,
	VGA_camera_create_stream,
	VGA_camera_get_vendor_name,
	VGA_camera_get_model_name,
	VGA_camera_get_device_id,
	VGA_camera_is_feature_available,
	VGA_camera_set_integer,
	VGA_camera_get_integer,
	VGA_camera_set_float,
	VGA_camera_get_float,
	VGA_camera_set_string,
	VGA_camera_get_string,
	VGA_camera_set_pixel_format_from_string,
	VGA_camera_get_payload,
	VGA_camera_start_acquisition,
	VGA_camera_stop_acquisition,
	VGA_camera_set_exposure_time,
	VGA_camera_get_exposure_time,
	VGA_camera_set_frame_rate,
	VGA_camera_get_frame_rate,
	VGA_camera_is_gv_device,
	VGA_stream_push_buffer,
	VGA_stream_timeout_pop_buffer,
	VGA_stream_get_statistics,
	VGA_stream_stop_thread,
	VGA_buffer_new_full,
	VGA_buffer_get_status,
	VGA_buffer_get_frame_id,
	VGA_buffer_get_data,
	VGA_buffer_get_image_width,
	VGA_buffer_get_image_height,
	VGA_buffer_get_image_pixel_format,
	VGA_g_object_unref,
	VGA_g_error_free,
	VGA_g_signal_connect_data,
	VGA_g_object_set,
	// Optional (a library without them still loads).
	VGA_get_major_version,
	VGA_get_minor_version,
	VGA_get_micro_version,
	VGA_set_fake_camera_genicam_filename,
	VGA_COUNT
};

// vga_table is the function table, indexed by the enum above; the Go loader
// (load.go, through dl.Loader) stores the resolved functions in it.
void** vga_table(void);
int vga_has(int idx);

// Every call that takes a GError** returns 0, or -1 with the error's text
// copied into err (cap bytes) and the GError freed.
void vga_enable_interface(const char* name);
void vga_set_fake_genicam(const char* path);
unsigned vga_device_ids(char* out, size_t cap); // ids joined by '\n'
int vga_camera_new(const char* id, uintptr_t* cam, char* err, size_t cap);
void vga_unref(uintptr_t obj);
int vga_camera_names(uintptr_t cam, char* vendor, char* model, char* id, size_t cap, char* err, size_t ecap);
int vga_feature_available(uintptr_t cam, const char* name, int* avail, char* err, size_t cap);
int vga_set_integer(uintptr_t cam, const char* name, int64_t v, char* err, size_t cap);
int vga_get_integer(uintptr_t cam, const char* name, int64_t* v, char* err, size_t cap);
int vga_set_float(uintptr_t cam, const char* name, double v, char* err, size_t cap);
int vga_get_float(uintptr_t cam, const char* name, double* v, char* err, size_t cap);
int vga_set_string(uintptr_t cam, const char* name, const char* v, char* err, size_t cap);
int vga_get_string(uintptr_t cam, const char* name, char* out, size_t ocap, char* err, size_t cap);
int vga_set_pixel_format(uintptr_t cam, const char* name, char* err, size_t cap);
int vga_payload(uintptr_t cam, uint32_t* out, char* err, size_t cap);
int vga_set_continuous(uintptr_t cam, char* err, size_t cap);
int vga_start(uintptr_t cam, char* err, size_t cap);
int vga_stop(uintptr_t cam, char* err, size_t cap);
int vga_set_exposure(uintptr_t cam, double us, char* err, size_t cap);
int vga_get_exposure(uintptr_t cam, double* us, char* err, size_t cap);
int vga_set_frame_rate(uintptr_t cam, double hz, char* err, size_t cap);
int vga_get_frame_rate(uintptr_t cam, double* hz, char* err, size_t cap);
int vga_is_gv(uintptr_t cam);
// vga_watch_lost connects the device's "control-lost" signal to a flag it
// allocates (*flag, freed by vga_free_flag after the camera is released).
int vga_watch_lost(uintptr_t cam, uintptr_t* flag);
int vga_lost(uintptr_t flag);
void vga_free_flag(uintptr_t flag);

// vga_create_stream creates the camera's stream; resend_never turns a GigE
// Vision stream's packet resend off (ignored for other transports).
int vga_create_stream(uintptr_t cam, int resend_never, uintptr_t* stream, char* err, size_t cap);
// vga_stream_close stops the stream's thread (no buffer is written after it
// returns), deletes the buffers still queued and releases the stream.
void vga_stream_close(uintptr_t stream);
// vga_push queues size bytes of user memory at data (zero-copy).
int vga_push(uintptr_t stream, uintptr_t data, size_t size);
// vga_pop waits up to timeout_us for a buffer: 1 with its fields, 0 on a
// timeout. The ArvBuffer is released; its memory (data) is the caller's.
int vga_pop(uintptr_t stream, uint64_t timeout_us, uintptr_t* data, int32_t* status, uint64_t* frame_id,
            int32_t* width, int32_t* height, uint32_t* pixel_format);
void vga_statistics(uintptr_t stream, uint64_t* completed, uint64_t* failures, uint64_t* underruns);
// vga_version: -1 when the library lacks the version functions.
int vga_version(unsigned* major, unsigned* minor, unsigned* micro);

#endif
