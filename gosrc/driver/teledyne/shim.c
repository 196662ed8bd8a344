// shim.c: the function table libadq is bound into (load.go) and one C wrapper per ADQAPI call.
#include <stdint.h>
#include <stdlib.h>
#include "shim.h"


vg_adq adq;
vg_adq* vg_adq_table(void) { return &adq; }

#define H(h) ((void*)(uintptr_t)(h))
int vg_validate_version(int a, int b) { return adq.validate_version(a, b); }
uintptr_t vg_create(void) { return (uintptr_t)adq.create(); }
void vg_destroy(uintptr_t h) { adq.destroy(H(h)); }
int vg_enable_error_trace(uintptr_t h, unsigned int level) { return adq.enable_error_trace(H(h), level, "."); }
int vg_list_devices(uintptr_t h, void** l, unsigned int* n) { return adq.list_devices(H(h), l, n); }
int vg_setup_device(uintptr_t h, int i) { return adq.setup_device(H(h), i); }
int vg_initialize_parameters(uintptr_t h, int n, int id, void* p) { return adq.initialize_parameters(H(h), n, id, p); }
int vg_set_parameters(uintptr_t h, int n, void* p) { return adq.set_parameters(H(h), n, p); }
int vg_read_register(uintptr_t h, int n, int ul, uint32_t r, uint32_t* v) { return adq.read_user_register(H(h), n, ul, r, v); }
int vg_write_register(uintptr_t h, int n, int ul, uint32_t r, uint32_t m, uint32_t v) {
	return adq.write_user_register(H(h), n, ul, r, m, v, NULL);
}
int vg_start(uintptr_t h, int n) { return adq.start(H(h), n); }
int vg_stop(uintptr_t h, int n) { return adq.stop(H(h), n); }
int vg_wait_p2p(uintptr_t h, int n, void* s, int ms) { return adq.wait_p2p(H(h), n, s, ms); }
int vg_unlock_p2p(uintptr_t h, int n, int ch, uint64_t mask) { return adq.unlock_p2p(H(h), n, ch, mask); }
int vg_get_status(uintptr_t h, int n, int id, void* s) { return adq.get_status(H(h), n, id, s); }
