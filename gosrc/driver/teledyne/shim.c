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
int vg_enable_error_trace(uintptr_t h) { return adq.enable_error_trace(H(h), LOG_LEVEL_INFO, "."); }
int vg_list_devices(uintptr_t h, vg_adq_info_entry** l, unsigned int* n) { return adq.list_devices(H(h), l, n); }
int vg_setup_device(uintptr_t h, int i) { return adq.setup_device(H(h), i); }
int vg_initialize_parameters(uintptr_t h, int n, void* p) {
	return adq.initialize_parameters(H(h), n, ADQ_PARAMETER_ID_TOP, p);
}
int vg_set_parameters(uintptr_t h, int n, void* p) { return adq.set_parameters(H(h), n, p); }
int vg_read_register(uintptr_t h, int n, uint32_t r, uint32_t* v) { return adq.read_user_register(H(h), n, ADQ_USER_LOGIC2, r, v); }
int vg_write_register(uintptr_t h, int n, uint32_t r, uint32_t m, uint32_t v) {
	return adq.write_user_register(H(h), n, ADQ_USER_LOGIC2, r, m, v, NULL);
}
int vg_start(uintptr_t h, int n) { return adq.start(H(h), n); }
int vg_stop(uintptr_t h, int n) { return adq.stop(H(h), n); }
int vg_wait_p2p(uintptr_t h, int n, vg_adq_p2p_status* s, int ms) { return adq.wait_p2p(H(h), n, s, ms); }
int vg_unlock_p2p(uintptr_t h, int n, int ch, uint64_t mask) { return adq.unlock_p2p(H(h), n, ch, mask); }
int vg_overflow(uintptr_t h, int n, int32_t* o) {
	vg_adq_overflow_status s;
	int rc = adq.get_status(H(h), n, ADQ_STATUS_ID_OVERFLOW, &s);
	*o = s.overflow;
	return rc == (int)sizeof s ? 0 : (rc < 0 ? rc : ADQ_EINTERNAL);
}
