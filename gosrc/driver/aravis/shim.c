// shim.c: the calls into Aravis through the function table (see shim.h for
// where the signatures come from). ArvBufferStatus and the GigE Vision
// stream's "packet-resend" values are Aravis 0.8's (arvbuffer.h,
// arvgvstream.h); G_CONNECT flags are 0.
#include "shim.h"

#include <stdlib.h>
#include <string.h>

static void* table[VGA_COUNT];

void** vga_table(void) { return table; }
int vga_has(int idx) { return idx >= 0 && idx < VGA_COUNT && table[idx] != NULL; }

typedef struct {
	uint32_t domain;
	int code;
	char* message;
} GErr;

#define F(idx, type) ((type)table[idx])
#define H(x) ((void*)(x))

static void copy(char* dst, size_t cap, const char* src) {
	if (cap == 0) return;
	size_t i = 0;
	if (src != NULL) {
		for (; src[i] != 0 && i + 1 < cap; i++) dst[i] = src[i];
	}
	dst[i] = 0;
}

// done turns a GError into the shim's return value.
static int done(GErr* e, char* err, size_t cap) {
	if (e == NULL) return 0;
	copy(err, cap, e->message ? e->message : "unknown Aravis error");
	F(VGA_g_error_free, void (*)(GErr*))(e);
	return -1;
}

void vga_enable_interface(const char* name) { F(VGA_enable_interface, void (*)(const char*))(name); }
void vga_set_fake_genicam(const char* path) {
	if (vga_has(VGA_set_fake_camera_genicam_filename))
		F(VGA_set_fake_camera_genicam_filename, void (*)(const char*))(path);
}

unsigned vga_device_ids(char* out, size_t cap) {
	F(VGA_update_device_list, void (*)(void))();
	unsigned n = F(VGA_get_n_devices, unsigned (*)(void))();
	size_t k = 0;
	if (cap > 0) out[0] = 0;
	for (unsigned i = 0; i < n; i++) {
		const char* id = F(VGA_get_device_id, const char* (*)(unsigned))(i);
		if (id == NULL) id = "";
		size_t l = strlen(id);
		if (k + l + 2 > cap) break;
		memcpy(out + k, id, l);
		k += l;
		out[k++] = '\n';
		out[k] = 0;
	}
	return n;
}

int vga_camera_new(const char* id, uintptr_t* cam, char* err, size_t cap) {
	GErr* e = NULL;
	void* c = F(VGA_camera_new, void* (*)(const char*, GErr**))(id, &e);
	*cam = (uintptr_t)c;
	if (c == NULL && e == NULL) {
		copy(err, cap, "no such camera");
		return -1;
	}
	return done(e, err, cap);
}

void vga_unref(uintptr_t obj) {
	if (obj != 0) F(VGA_g_object_unref, void (*)(void*))(H(obj));
}

typedef const char* (*name_fn)(void*, GErr**);

int vga_camera_names(uintptr_t cam, char* vendor, char* model, char* id, size_t cap, char* err, size_t ecap) {
	GErr* e = NULL;
	copy(vendor, cap, F(VGA_camera_get_vendor_name, name_fn)(H(cam), &e));
	if (e == NULL) copy(model, cap, F(VGA_camera_get_model_name, name_fn)(H(cam), &e));
	if (e == NULL) copy(id, cap, F(VGA_camera_get_device_id, name_fn)(H(cam), &e));
	return done(e, err, ecap);
}

int vga_feature_available(uintptr_t cam, const char* name, int* avail, char* err, size_t cap) {
	GErr* e = NULL;
	*avail = F(VGA_camera_is_feature_available, int (*)(void*, const char*, GErr**))(H(cam), name, &e);
	return done(e, err, cap);
}

int vga_set_integer(uintptr_t cam, const char* name, int64_t v, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_set_integer, void (*)(void*, const char*, int64_t, GErr**))(H(cam), name, v, &e);
	return done(e, err, cap);
}
int vga_get_integer(uintptr_t cam, const char* name, int64_t* v, char* err, size_t cap) {
	GErr* e = NULL;
	*v = F(VGA_camera_get_integer, int64_t (*)(void*, const char*, GErr**))(H(cam), name, &e);
	return done(e, err, cap);
}
int vga_set_float(uintptr_t cam, const char* name, double v, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_set_float, void (*)(void*, const char*, double, GErr**))(H(cam), name, v, &e);
	return done(e, err, cap);
}
int vga_get_float(uintptr_t cam, const char* name, double* v, char* err, size_t cap) {
	GErr* e = NULL;
	*v = F(VGA_camera_get_float, double (*)(void*, const char*, GErr**))(H(cam), name, &e);
	return done(e, err, cap);
}
int vga_set_string(uintptr_t cam, const char* name, const char* v, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_set_string, void (*)(void*, const char*, const char*, GErr**))(H(cam), name, v, &e);
	return done(e, err, cap);
}
int vga_get_string(uintptr_t cam, const char* name, char* out, size_t ocap, char* err, size_t cap) {
	GErr* e = NULL;
	copy(out, ocap, F(VGA_camera_get_string, const char* (*)(void*, const char*, GErr**))(H(cam), name, &e));
	return done(e, err, cap);
}
int vga_set_pixel_format(uintptr_t cam, const char* name, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_set_pixel_format_from_string, void (*)(void*, const char*, GErr**))(H(cam), name, &e);
	return done(e, err, cap);
}
int vga_payload(uintptr_t cam, uint32_t* out, char* err, size_t cap) {
	GErr* e = NULL;
	*out = F(VGA_camera_get_payload, unsigned (*)(void*, GErr**))(H(cam), &e);
	return done(e, err, cap);
}
int vga_set_continuous(uintptr_t cam, char* err, size_t cap) {
	return vga_set_string(cam, "AcquisitionMode", "Continuous", err, cap);
}
int vga_start(uintptr_t cam, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_start_acquisition, void (*)(void*, GErr**))(H(cam), &e);
	return done(e, err, cap);
}
int vga_stop(uintptr_t cam, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_stop_acquisition, void (*)(void*, GErr**))(H(cam), &e);
	return done(e, err, cap);
}
int vga_set_exposure(uintptr_t cam, double us, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_set_exposure_time, void (*)(void*, double, GErr**))(H(cam), us, &e);
	return done(e, err, cap);
}
int vga_get_exposure(uintptr_t cam, double* us, char* err, size_t cap) {
	GErr* e = NULL;
	*us = F(VGA_camera_get_exposure_time, double (*)(void*, GErr**))(H(cam), &e);
	return done(e, err, cap);
}
int vga_set_frame_rate(uintptr_t cam, double hz, char* err, size_t cap) {
	GErr* e = NULL;
	F(VGA_camera_set_frame_rate, void (*)(void*, double, GErr**))(H(cam), hz, &e);
	return done(e, err, cap);
}
int vga_get_frame_rate(uintptr_t cam, double* hz, char* err, size_t cap) {
	GErr* e = NULL;
	*hz = F(VGA_camera_get_frame_rate, double (*)(void*, GErr**))(H(cam), &e);
	return done(e, err, cap);
}
int vga_is_gv(uintptr_t cam) { return F(VGA_camera_is_gv_device, int (*)(void*))(H(cam)); }

static void on_lost(void* device, void* flag) {
	(void)device;
	__atomic_store_n((int*)flag, 1, __ATOMIC_SEQ_CST);
}

int vga_watch_lost(uintptr_t cam, uintptr_t* flag) {
	int* f = calloc(1, sizeof(int));
	*flag = (uintptr_t)f;
	if (f == NULL) return -1;
	void* dev = F(VGA_camera_get_device, void* (*)(void*))(H(cam));
	if (dev == NULL) return -1;
	F(VGA_g_signal_connect_data, unsigned long (*)(void*, const char*, void (*)(void*, void*), void*, void*, int))(
	    dev, "control-lost", on_lost, f, NULL, 0);
	return 0;
}
int vga_lost(uintptr_t flag) { return flag != 0 && __atomic_load_n((int*)flag, __ATOMIC_SEQ_CST); }
void vga_free_flag(uintptr_t flag) { free((void*)flag); }

int vga_create_stream(uintptr_t cam, int resend_never, uintptr_t* stream, char* err, size_t cap) {
	GErr* e = NULL;
	void* s = F(VGA_camera_create_stream, void* (*)(void*, void*, void*, GErr**))(H(cam), NULL, NULL, &e);
	*stream = (uintptr_t)s;
	if (s == NULL && e == NULL) {
		copy(err, cap, "the camera has no stream");
		return -1;
	}
	if (s != NULL && resend_never && vga_is_gv(cam)) {
		// ARV_GV_STREAM_PACKET_RESEND_NEVER (0): missing packets make the
		// frame incomplete at once instead of being asked for again.
		F(VGA_g_object_set, void (*)(void*, const char*, ...))(s, "packet-resend", 0, NULL);
	}
	return done(e, err, cap);
}

void vga_stream_close(uintptr_t stream) {
	if (stream == 0) return;
	// The last reference: the stream's finalizer stops its thread and joins
	// it (arv_stream_stop_thread would warn on a fake stream already
	// stopped), so no buffer is written after this returns.
	vga_unref(stream);
}

int vga_push(uintptr_t stream, uintptr_t data, size_t size) {
	void* b = F(VGA_buffer_new_full, void* (*)(size_t, void*, void*, void*))(size, (void*)data, NULL, NULL);
	if (b == NULL) return -1;
	F(VGA_stream_push_buffer, void (*)(void*, void*))(H(stream), b);
	return 0;
}

int vga_pop(uintptr_t stream, uint64_t timeout_us, uintptr_t* data, int32_t* status, uint64_t* frame_id,
            int32_t* width, int32_t* height, uint32_t* pixel_format) {
	void* b = F(VGA_stream_timeout_pop_buffer, void* (*)(void*, uint64_t))(H(stream), timeout_us);
	if (b == NULL) return 0;
	size_t size = 0;
	*data = (uintptr_t)F(VGA_buffer_get_data, const void* (*)(void*, size_t*))(b, &size);
	*status = F(VGA_buffer_get_status, int (*)(void*))(b);
	*frame_id = F(VGA_buffer_get_frame_id, uint64_t (*)(void*))(b);
	*width = 0, *height = 0, *pixel_format = 0;
	if (*status == 0) { // an image's geometry: Aravis warns when asked of a failed buffer
		*width = F(VGA_buffer_get_image_width, int (*)(void*))(b);
		*height = F(VGA_buffer_get_image_height, int (*)(void*))(b);
		*pixel_format = F(VGA_buffer_get_image_pixel_format, uint32_t (*)(void*))(b);
	}
	vga_unref((uintptr_t)b); // the memory is the caller's (preallocated): not freed
	return 1;
}

void vga_statistics(uintptr_t stream, uint64_t* completed, uint64_t* failures, uint64_t* underruns) {
	F(VGA_stream_get_statistics, void (*)(void*, uint64_t*, uint64_t*, uint64_t*))(H(stream), completed, failures,
	                                                                              underruns);
}

int vga_version(unsigned* major, unsigned* minor, unsigned* micro) {
	if (!vga_has(VGA_get_major_version) || !vga_has(VGA_get_minor_version) || !vga_has(VGA_get_micro_version))
		return -1;
	*major = F(VGA_get_major_version, unsigned (*)(void))();
	*minor = F(VGA_get_minor_version, unsigned (*)(void))();
	*micro = F(VGA_get_micro_version, unsigned (*)(void))();
	return 0;
}
