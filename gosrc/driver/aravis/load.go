package aravis

/*
#cgo CFLAGS: -O2
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// LibraryEnv names the environment variable holding the path of the Aravis
// library to load instead of the system's libaravis-0.8.so.0.
const LibraryEnv = "VORTEXGO_ARAVIS_LIBRARY"

// systemNames are the names Aravis 0.8 installs its C library under (the
// Debian/Ubuntu package libaravis-0.8-0; the -dev package adds the
// unversioned link).
var systemNames = []string{"libaravis-0.8.so.0", "libaravis-0.8.so"}

// ErrNoLibrary is wrapped by every error that comes from Aravis not being
// found or not being Aravis 0.8.
var ErrNoLibrary = errors.New("aravis: the Aravis library (libaravis-0.8.so.0) could not be loaded, expected Aravis 0.8 " +
	"installed (Debian/Ubuntu: apt-get install libaravis-0.8-0 aravis-tools), or " + LibraryEnv +
	"=/path/to/libaravis-0.8.so.0")

// ErrUnsupportedLibrary wraps the error of a library that loads but lacks a
// function vortexgo calls; it wraps ErrNoLibrary too.
var ErrUnsupportedLibrary = fmt.Errorf("%w: unsupported Aravis library", ErrNoLibrary)

// table is the shim's function table (shim.c), filled by the loader.
var table = (*[C.VGA_COUNT]unsafe.Pointer)(unsafe.Pointer(C.vga_table()))

// loader declares the library: the path in $VORTEXGO_ARAVIS_LIBRARY, else
// the system's (the virtual instrument has no Aravis: Aravis's own fake
// camera serves), and the entry points the shim calls. GLib's are resolved
// through Aravis's handle: dlsym searches a library's dependencies, and
// libaravis links libgobject and libglib.
var loader = &dl.Loader{
	Env:   LibraryEnv,
	Names: systemNames,
	Err:   ErrNoLibrary,
	Missing: func(e *dl.SymbolError) error {
		return fmt.Errorf("%w: %s lacks %s: it is not Aravis 0.8 (vortexgo calls Aravis 0.8's API): %w",
			ErrUnsupportedLibrary, e.Library, e.Symbol, e)
	},
	Symbols: []dl.Symbol{
		{Name: "arv_enable_interface", Dst: &table[C.VGA_enable_interface]},
		{Name: "arv_update_device_list", Dst: &table[C.VGA_update_device_list]},
		{Name: "arv_get_n_devices", Dst: &table[C.VGA_get_n_devices]},
		{Name: "arv_get_device_id", Dst: &table[C.VGA_get_device_id]},
		{Name: "arv_camera_new", Dst: &table[C.VGA_camera_new]},
		{Name: "arv_camera_get_device", Dst: &table[C.VGA_camera_get_device]},
		{Name: "arv_camera_create_stream", Dst: &table[C.VGA_camera_create_stream]},
		{Name: "arv_camera_get_vendor_name", Dst: &table[C.VGA_camera_get_vendor_name]},
		{Name: "arv_camera_get_model_name", Dst: &table[C.VGA_camera_get_model_name]},
		{Name: "arv_camera_get_device_id", Dst: &table[C.VGA_camera_get_device_id]},
		{Name: "arv_camera_is_feature_available", Dst: &table[C.VGA_camera_is_feature_available]},
		{Name: "arv_camera_set_integer", Dst: &table[C.VGA_camera_set_integer]},
		{Name: "arv_camera_get_integer", Dst: &table[C.VGA_camera_get_integer]},
		{Name: "arv_camera_set_float", Dst: &table[C.VGA_camera_set_float]},
		{Name: "arv_camera_get_float", Dst: &table[C.VGA_camera_get_float]},
		{Name: "arv_camera_set_string", Dst: &table[C.VGA_camera_set_string]},
		{Name: "arv_camera_get_string", Dst: &table[C.VGA_camera_get_string]},
		{Name: "arv_camera_set_pixel_format_from_string", Dst: &table[C.VGA_camera_set_pixel_format_from_string]},
		{Name: "arv_camera_get_payload", Dst: &table[C.VGA_camera_get_payload]},
		{Name: "arv_camera_start_acquisition", Dst: &table[C.VGA_camera_start_acquisition]},
		{Name: "arv_camera_stop_acquisition", Dst: &table[C.VGA_camera_stop_acquisition]},
		{Name: "arv_camera_set_exposure_time", Dst: &table[C.VGA_camera_set_exposure_time]},
		{Name: "arv_camera_get_exposure_time", Dst: &table[C.VGA_camera_get_exposure_time]},
		{Name: "arv_camera_set_frame_rate", Dst: &table[C.VGA_camera_set_frame_rate]},
		{Name: "arv_camera_get_frame_rate", Dst: &table[C.VGA_camera_get_frame_rate]},
		{Name: "arv_camera_is_gv_device", Dst: &table[C.VGA_camera_is_gv_device]},
		{Name: "arv_stream_push_buffer", Dst: &table[C.VGA_stream_push_buffer]},
		{Name: "arv_stream_timeout_pop_buffer", Dst: &table[C.VGA_stream_timeout_pop_buffer]},
		{Name: "arv_stream_get_statistics", Dst: &table[C.VGA_stream_get_statistics]},
		{Name: "arv_stream_stop_thread", Dst: &table[C.VGA_stream_stop_thread]},
		{Name: "arv_buffer_new_full", Dst: &table[C.VGA_buffer_new_full]},
		{Name: "arv_buffer_get_status", Dst: &table[C.VGA_buffer_get_status]},
		{Name: "arv_buffer_get_frame_id", Dst: &table[C.VGA_buffer_get_frame_id]},
		{Name: "arv_buffer_get_data", Dst: &table[C.VGA_buffer_get_data]},
		{Name: "arv_buffer_get_image_width", Dst: &table[C.VGA_buffer_get_image_width]},
		{Name: "arv_buffer_get_image_height", Dst: &table[C.VGA_buffer_get_image_height]},
		{Name: "arv_buffer_get_image_pixel_format", Dst: &table[C.VGA_buffer_get_image_pixel_format]},
		{Name: "g_object_unref", Dst: &table[C.VGA_g_object_unref]},
		{Name: "g_error_free", Dst: &table[C.VGA_g_error_free]},
		{Name: "g_signal_connect_data", Dst: &table[C.VGA_g_signal_connect_data]},
		{Name: "g_object_set", Dst: &table[C.VGA_g_object_set]},
		{Name: "arv_get_major_version", Optional: true, Dst: &table[C.VGA_get_major_version]},
		{Name: "arv_get_minor_version", Optional: true, Dst: &table[C.VGA_get_minor_version]},
		{Name: "arv_get_micro_version", Optional: true, Dst: &table[C.VGA_get_micro_version]},
		{Name: "arv_set_fake_camera_genicam_filename", Optional: true, Dst: &table[C.VGA_set_fake_camera_genicam_filename]},
	},
}

// Load opens Aravis if it is not open yet: the path in
// $VORTEXGO_ARAVIS_LIBRARY, else the system's libaravis-0.8.so.0. A
// failure wraps ErrNoLibrary and keeps each candidate's dlopen message; a
// later Load tries again.
func Load() error {
	_, err := loader.Load()
	return err
}

// Version is the loaded Aravis's version ("0.8.26"), or "" before Load
// succeeds or when the library does not report it.
func Version() string {
	if loader.Name() == "" {
		return ""
	}
	var major, minor, micro C.unsigned
	if C.vga_version(&major, &minor, &micro) != 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d.%d", major, minor, micro)
}

// Library is the name the library was loaded under ("" before Load
// succeeds).
func Library() string { return loader.Name() }
