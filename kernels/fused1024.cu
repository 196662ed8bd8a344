// The fused processing kernel for 1024-point records (fused.cuh):
// 1024 = 32 x 32: two records a block of 64 threads, one column and then one row a thread.
#include "fused.cuh"

FUSED_ENTRY(32, 32, 2, 64)
