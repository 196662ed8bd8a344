// shim.h: the C wrappers over libadq (shim.c), for load.go and board.go.
#ifndef VG_TELEDYNE_SHIM_H
#define VG_TELEDYNE_SHIM_H
#include <stdint.h>
#include "adq.h"
typedef struct {
	int (*validate_version)(int, int);
	void* (*create)(void);
	void (*destroy)(void*);
	int (*enable_error_trace)(void*, unsigned int, const char*);
	int (*list_devices)(void*, vg_adq_info_entry**, unsigned int*);
	int (*setup_device)(void*, int);
	int (*initialize_parameters)(void*, int, int, void*);
	int (*set_parameters)(void*, int, void*);
	int (*read_user_register)(void*, int, int, uint32_t, uint32_t*);
	int (*write_user_register)(void*, int, int, uint32_t, uint32_t, uint32_t, uint32_t*);
	int (*start)(void*, int);
	int (*stop)(void*, int);
	int (*wait_p2p)(void*, int, vg_adq_p2p_status*, int);
	int (*unlock_p2p)(void*, int, int, uint64_t);
	int (*get_status)(void*, int, int, void*);
} vg_adq;
vg_adq* vg_adq_table(void);
int vg_validate_version(int a, int b);
uintptr_t vg_create(void);
void vg_destroy(uintptr_t h);
int vg_enable_error_trace(uintptr_t h);
int vg_list_devices(uintptr_t h, vg_adq_info_entry** l, unsigned int* n);
int vg_setup_device(uintptr_t h, int i);
int vg_initialize_parameters(uintptr_t h, int n, void* p);
int vg_set_parameters(uintptr_t h, int n, void* p);
int vg_read_register(uintptr_t h, int n, uint32_t r, uint32_t* v);
int vg_write_register(uintptr_t h, int n, uint32_t r, uint32_t m, uint32_t v);
int vg_start(uintptr_t h, int n);
int vg_stop(uintptr_t h, int n);
int vg_wait_p2p(uintptr_t h, int n, vg_adq_p2p_status* s, int ms);
int vg_unlock_p2p(uintptr_t h, int n, int ch, uint64_t mask);
int vg_overflow(uintptr_t h, int n, int32_t* o);
#endif
