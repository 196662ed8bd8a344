// shim.h: the C wrappers over libadq (shim.c), for load.go and board.go.
// The structures are opaque (void*): their layouts and the constants passed
// (parameter and status ids, user logic, log level) come from the layout
// table (layout.go).
#ifndef VG_TELEDYNE_SHIM_H
#define VG_TELEDYNE_SHIM_H
#include <stdint.h>
#include "adq.h"
typedef struct {
	vg_adq_validate_version_fn validate_version;
	vg_adq_create_fn create;
	vg_adq_destroy_fn destroy;
	vg_adq_enable_error_trace_fn enable_error_trace;
	vg_adq_list_devices_fn list_devices;
	vg_adq_setup_device_fn setup_device;
	vg_adq_initialize_parameters_fn initialize_parameters;
	vg_adq_set_parameters_fn set_parameters;
	vg_adq_read_user_register_fn read_user_register;
	vg_adq_write_user_register_fn write_user_register;
	vg_adq_start_fn start;
	vg_adq_stop_fn stop;
	vg_adq_wait_p2p_fn wait_p2p;
	vg_adq_unlock_p2p_fn unlock_p2p;
	vg_adq_get_status_fn get_status;
} vg_adq;
vg_adq* vg_adq_table(void);
int vg_validate_version(int a, int b);
uintptr_t vg_create(void);
void vg_destroy(uintptr_t h);
int vg_enable_error_trace(uintptr_t h, unsigned int level);
int vg_list_devices(uintptr_t h, void** l, unsigned int* n);
int vg_setup_device(uintptr_t h, int i);
int vg_initialize_parameters(uintptr_t h, int n, int id, void* p);
int vg_set_parameters(uintptr_t h, int n, void* p);
int vg_read_register(uintptr_t h, int n, int ul, uint32_t r, uint32_t* v);
int vg_write_register(uintptr_t h, int n, int ul, uint32_t r, uint32_t m, uint32_t v);
int vg_start(uintptr_t h, int n);
int vg_stop(uintptr_t h, int n);
int vg_wait_p2p(uintptr_t h, int n, void* s, int ms);
int vg_unlock_p2p(uintptr_t h, int n, int ch, uint64_t mask);
int vg_get_status(uintptr_t h, int n, int id, void* s);
#endif
