package pyapi

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// One budget for the whole process (forge3d's model): every allocation made
// through pyapi, on any device, is charged to it by purpose.
var (
	budgetOnce sync.Once
	budget     *memory.Budget
	allocMu    sync.Mutex
	allocators = map[backend.Device]*memory.Allocator{}
)

func processBudget() *memory.Budget {
	budgetOnce.Do(func() {
		b, err := memory.NewBudget(0, 0)
		if err != nil {
			panic(err) // unreachable: zero limits are always valid
		}
		budget = b
	})
	return budget
}

// allocatorFor returns the budgeted allocator of dev labelled purpose.
func allocatorFor(dev backend.Device, purpose string) (*memory.Allocator, error) {
	allocMu.Lock()
	a, ok := allocators[dev]
	if !ok {
		var err error
		if a, err = memory.NewAllocator(dev, processBudget()); err != nil {
			allocMu.Unlock()
			return nil, err
		}
		allocators[dev] = a
	}
	allocMu.Unlock()
	return a.WithPurpose(purpose), nil
}

// SetMemoryBudget sets the limits in bytes for device and pinned memory
// (0 = unlimited). Lowering a limit below current usage refuses new
// allocations until usage falls; nothing already allocated is touched.
func SetMemoryBudget(deviceBytes, pinnedBytes int) error {
	if deviceBytes < 0 || pinnedBytes < 0 {
		return tag(badArg("device=%d pinned=%d, expected limits >= 0 bytes (0 = unlimited)", deviceBytes, pinnedBytes))
	}
	b := processBudget()
	if err := b.SetLimit(backend.DeviceMem, int64(deviceBytes)); err != nil {
		return tag(err)
	}
	return tag(b.SetLimit(backend.PinnedMem, int64(pinnedBytes)))
}

// MemoryUsage returns the budget's state as "key=value" lines:
// kind.limit, kind.current, kind.peak, kind.active, and
// kind.purpose.<name>.bytes / .count per purpose.
func MemoryUsage() string {
	u := processBudget().Usage()
	var sb strings.Builder
	for _, k := range []struct {
		name string
		ku   memory.KindUsage
	}{{"device", u.Device}, {"pinned", u.Pinned}} {
		fmt.Fprintf(&sb, "%s.limit=%d\n%s.current=%d\n%s.peak=%d\n%s.active=%d\n",
			k.name, k.ku.Limit, k.name, k.ku.Current, k.name, k.ku.Peak, k.name, k.ku.Active)
		for purpose, pu := range k.ku.ByPurpose {
			fmt.Fprintf(&sb, "%s.purpose.%s.bytes=%d\n%s.purpose.%s.count=%d\n",
				k.name, purpose, pu.Bytes, k.name, purpose, pu.Count)
		}
	}
	return sb.String()
}

// ResetMemoryPeak sets the peak usage to the current usage.
func ResetMemoryPeak() { processBudget().ResetPeak() }

func parseShape(s string) ([]int, error) {
	if s == "" {
		return []int{}, nil
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || v < 0 {
			return nil, badArg("shape=%q, expected comma-separated non-negative ints", s)
		}
		out[i] = v
	}
	return out, nil
}

func formatShape(shape []int) string {
	parts := make([]string, len(shape))
	for i, v := range shape {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

// Tensor is a lockable, resizable n-d buffer (memory.DeviceTensor).
type Tensor struct{ t *memory.DeviceTensor }

// NewTensor allocates a tensor; shape is comma-separated ("3,4,5").
func NewTensor(dev *Device, shape, dtype string, pinned bool) (*Tensor, error) {
	if dev == nil {
		return nil, tag(badArg("device=None, expected a Device"))
	}
	sh, err := parseShape(shape)
	if err != nil {
		return nil, tag(err)
	}
	dt, err := parseDType(dtype)
	if err != nil {
		return nil, tag(err)
	}
	a, err := allocatorFor(dev.d, "tensor")
	if err != nil {
		return nil, tag(err)
	}
	kind := backend.DeviceMem
	if pinned {
		kind = backend.PinnedMem
	}
	t, err := memory.NewDeviceTensor(a, kind, sh, dt)
	if err != nil {
		return nil, tag(err)
	}
	return &Tensor{t: t}, nil
}

// Lock takes the lock for owner; timeoutMs < 0 waits forever (GIL released).
func (t *Tensor) Lock(owner int, exclusive bool, timeoutMs int) error {
	timeout := time.Duration(timeoutMs) * time.Millisecond
	if timeoutMs < 0 {
		timeout = -1
	}
	return tag(t.t.Lock(int64(owner), exclusive, timeout))
}

// Unlock releases one level of owner's lock.
func (t *Tensor) Unlock(owner int, exclusive bool) error {
	return tag(t.t.Unlock(int64(owner), exclusive))
}

// Resize changes shape and dtype; a LockError if owner holds the lock
// (memory.ErrLockHeld).
func (t *Tensor) Resize(owner int, shape, dtype string) error {
	sh, err := parseShape(shape)
	if err != nil {
		return tag(err)
	}
	dt, err := parseDType(dtype)
	if err != nil {
		return tag(err)
	}
	return tag(t.t.Resize(int64(owner), sh, dt))
}

// Ptr is the current address.
func (t *Tensor) Ptr() int { return int(t.t.Ptr()) }

// Shape is the shape, comma-separated.
func (t *Tensor) Shape() string { return formatShape(t.t.Shape()) }

// DType is the NumPy dtype name.
func (t *Tensor) DType() string { return t.t.DType().String() }

// Nbytes is the size in bytes.
func (t *Tensor) Nbytes() int { return t.t.Size() }

// SetReady records the ready event on s after the last write.
func (t *Tensor) SetReady(s *Stream) error {
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return tag(t.t.SetReady(s.s))
}

// WaitReady makes s wait for the ready event (no host wait).
func (t *Tensor) WaitReady(s *Stream) error {
	if s == nil {
		return tag(badArg("stream=None, expected a Stream"))
	}
	return tag(s.s.WaitEvent(t.t.Ready()))
}

// Close frees the tensor.
func (t *Tensor) Close() error { return tag(t.t.Close()) }
