// The fused processing kernel for 1024-point records (fused.cuh): one record
// a block of 256 threads, five radix-4 passes.
#include "fused.cuh"

FUSED_ENTRY(1024)
