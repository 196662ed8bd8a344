// The fused processing kernel for 2048-point records (fused.cuh):
// 2048 = 32 x 64: two records a block of 128 threads, one column a thread, then one row for half of them.
#include "fused.cuh"

FUSED_ENTRY(32, 64, 2, 128)
