package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// MaxKernelArgs is the most parameters one launch may pass.
const MaxKernelArgs = 32 // keep equal to VG_MAX_KERNEL_ARGS in shim.h

// argSlot is the bytes each parameter occupies in the packed buffer: every
// supported type fits in 8, and a fixed stride lets the C side build the
// void* params[] array without an offsets table.
const argSlot = 8

// argBuf holds packed kernel parameters. It contains no Go pointers, so cgo
// lets C read it during the launch call.
type argBuf struct {
	b [MaxKernelArgs * argSlot]byte
}

// argPool recycles argBufs so a launch allocates no buffer of its own.
var argPool = sync.Pool{New: func() any { return new(argBuf) }}

// ClampPriority clamps a stream priority to the device's range. CUDA
// numbers priorities backwards (greatest is the smaller number, e.g. least
// 0, greatest -5), so the bounds are taken in either order.
func ClampPriority(p, least, greatest int) int {
	lo, hi := greatest, least
	if lo > hi {
		lo, hi = hi, lo
	}
	return min(max(p, lo), hi)
}

// packArgs writes args into buf, one 8-byte slot each, in native byte
// order (each value starts at its slot, which is what the driver reads for
// a parameter of that size). It returns the number of slots used.
func packArgs(buf *argBuf, args []any) (int, error) {
	if len(args) > MaxKernelArgs {
		return 0, fmt.Errorf("cuda.Stream.Launch: %d args, expected at most %d", len(args), MaxKernelArgs)
	}
	ne := binary.NativeEndian
	for i, a := range args {
		slot := buf.b[i*argSlot : (i+1)*argSlot]
		switch v := a.(type) {
		case uintptr:
			ne.PutUint64(slot, uint64(v))
		case int32:
			ne.PutUint32(slot, uint32(v))
		case uint32:
			ne.PutUint32(slot, v)
		case int64:
			ne.PutUint64(slot, uint64(v))
		case uint64:
			ne.PutUint64(slot, v)
		case float32:
			ne.PutUint32(slot, math.Float32bits(v))
		case float64:
			ne.PutUint64(slot, math.Float64bits(v))
		case backend.Buffer:
			// A buffer stands for its device pointer, as in CuPy.
			ne.PutUint64(slot, uint64(v.Ptr()))
		default:
			return 0, fmt.Errorf("cuda.Stream.Launch: args[%d] has type %T, expected uintptr, int32, uint32, int64, uint64, float32, float64 or a backend.Buffer", i, a)
		}
	}
	return len(args), nil
}
