// The fused processing kernel for 2048-point records (fused.cuh): one record
// a block of 512 threads, a radix-2 pass and five radix-4 passes.
#include "fused.cuh"

FUSED_ENTRY(2048)
