package pipeline

import (
	"fmt"
	"math"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// ArgKind codes the kernel arguments of DecodeArgs.
type ArgKind int64

// Argument kinds: an array is followed by its address and size in bytes,
// a number by its value (floats as IEEE-754 bits), In/Out by the index.
const (
	ArgArray ArgKind = iota
	ArgI32
	ArgU32
	ArgI64
	ArgU64
	ArgF32
	ArgF64
	ArgIn
	ArgOut
)

// DecodeArgs turns a flat list of words (kind, payload...) into kernel
// arguments, checking every value against its C type once, here.
func DecodeArgs(words []int64) ([]any, error) {
	var args []any
	for i := 0; i < len(words); i++ {
		k := ArgKind(words[i])
		need := 1
		if k == ArgArray {
			need = 2
		}
		if i+need >= len(words) || k < ArgArray || k > ArgOut {
			return nil, fmt.Errorf("kernel argument %d: kind %d with %d words left, expected a kind 0..%d and its value: %w",
				len(args), k, len(words)-i-1, ArgOut, backend.ErrInvalid)
		}
		v := words[i+1]
		bad := func(lo, hi int64) error {
			if v < lo || v > hi {
				return fmt.Errorf("kernel argument %d: %d, expected %d <= value <= %d: %w", len(args), v, lo, hi, backend.ErrInvalid)
			}
			return nil
		}
		var a any
		var err error
		switch k {
		case ArgArray:
			a, err = NewSpan(nil, uintptr(v), int(words[i+2])), bad(0, math.MaxInt64)
		case ArgI32:
			a, err = int32(v), bad(math.MinInt32, math.MaxInt32)
		case ArgU32:
			a, err = uint32(v), bad(0, math.MaxUint32)
		case ArgI64:
			a = v
		case ArgU64:
			a, err = uint64(v), bad(0, math.MaxInt64)
		case ArgF32:
			a = float32(math.Float64frombits(uint64(v)))
		case ArgF64:
			a = math.Float64frombits(uint64(v))
		case ArgIn, ArgOut:
			a, err = BufferRef{Output: k == ArgOut, Index: int(v)}, bad(0, math.MaxInt32)
		}
		if err != nil {
			return nil, err
		}
		args = append(args, a)
		i += need
	}
	return args, nil
}

// LastID is the latest op id issued on any stream (0 before the first).
func (c *AsyncCoordinator) LastID() OpID {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextID - 1
}

// Timing reports whether ops are timed (CoordinatorOptions.NoTiming unset).
func (c *AsyncCoordinator) Timing() bool { return !c.pool.noTiming }

// BookkeepingNs measures the coordinator's own cost per op: n empty
// compute ops queued and polled, with nothing else in the loop.
func (c *AsyncCoordinator) BookkeepingNs(n int) (float64, error) {
	if n <= 0 {
		return 0, fmt.Errorf("BookkeepingNs: n=%d, expected n > 0: %w", n, backend.ErrInvalid)
	}
	nop := ComputeOp{Kernel: "nop", Func: func(backend.Stream) error { return nil }}
	if err := c.SynchronizeAll(); err != nil {
		return 0, err
	}
	c.Poll()
	t0 := time.Now()
	for range n {
		if _, err := c.QueueCompute(nop); err != nil {
			return 0, err
		}
		c.Poll()
	}
	el := time.Since(t0)
	return float64(el.Nanoseconds()) / float64(n), c.SynchronizeAll()
}

// ExecuteIterations issues n iterations (ExecuteIteration n times).
func (m *PipelineStageManager) ExecuteIterations(n int) error {
	for range n {
		if err := m.ExecuteIteration(); err != nil {
			return err
		}
	}
	return nil
}

// ReplayN launches the graph n times.
func (pg *PipelineGraph) ReplayN(n int) error {
	for range n {
		if err := pg.Replay(); err != nil {
			return err
		}
	}
	return nil
}

// Claim moves the slot of stage (Uploading: the upload stage, Processing,
// Downloading) one state forward and returns its index, or -1 when it is
// not in the state that stage expects (see the Get methods).
func (tb *TripleBuffer) Claim(stage BufferState) int {
	var b backend.Buffer
	var ok bool
	switch stage {
	case Uploading:
		b, ok = tb.GetUploadBuffer()
	case Processing:
		b, ok = tb.GetProcessBuffer()
	case Downloading:
		b, ok = tb.GetDownloadBuffer()
	}
	if !ok {
		return -1
	}
	return tb.slotIndex(b)
}

// DecodeKernel is KernelOp from words: grid x, y, z and block x, y, z,
// then the arguments (DecodeArgs).
func DecodeKernel(name string, words []int64) (StageOp, error) {
	if len(words) < 6 {
		return StageOp{}, fmt.Errorf("kernel %q: %d words, expected grid and block (6) first: %w", name, len(words), backend.ErrInvalid)
	}
	args, err := DecodeArgs(words[6:])
	if err != nil {
		return StageOp{}, err
	}
	var d [6]uint64
	for i, v := range words[:6] {
		d[i] = uint64(max(v, 0)) // 0 is refused by KernelOp, naming the dimensions
	}
	return KernelOp(name, [3]uint64(d[:3]), [3]uint64(d[3:]), args)
}

// The records below are the float64 rows the Python layer reads (one
// format for every result: gosrc/pyapi writes them into its buffer, one
// Record method per type).

// QueueStageOp enqueues a kernel or spin stage op on the compute stream
// after deps (its Compute form; a copy or a kernel naming stage buffers is
// refused).
func (c *AsyncCoordinator) QueueStageOp(op StageOp, deps ...OpID) (OpID, error) {
	cop, err := op.Compute()
	if err != nil {
		return 0, err
	}
	return c.QueueCompute(cop, deps...)
}

// ExternalStep is one step of an external compute op (External).
type ExternalStep int

const (
	// ExternalBegin opens an op after deps (BeginExternal).
	ExternalBegin ExternalStep = iota
	// ExternalEnd closes op id (EndExternal).
	ExternalEnd
	// ExternalTrack tracks work already enqueued as one op (ExternalDone).
	ExternalTrack
)

// External runs one step of an external compute op, for bindings that
// reach every step through one entry: the op id of a begin or track, 0 for
// an end.
func (c *AsyncCoordinator) External(step ExternalStep, id OpID, deps ...OpID) (OpID, error) {
	switch step {
	case ExternalBegin:
		op, _, err := c.BeginExternal(deps...)
		return op, err
	case ExternalEnd:
		return 0, c.EndExternal(id)
	case ExternalTrack:
		return c.ExternalDone()
	}
	return 0, fmt.Errorf("external step %d, expected 0 (begin), 1 (end) or 2 (track): %w", step, backend.ErrInvalid)
}

// StageOpKind names the kind of op DecodeOp builds.
type StageOpKind int

const (
	// StageKernel is KernelOp from DecodeKernel's words.
	StageKernel StageOpKind = iota
	// StageSpin is SpinOp of words[0] nanoseconds.
	StageSpin
	// StageUpload is HostCopyOp(CopyUpload) of host address words[0] and
	// length words[1].
	StageUpload
	// StageDownload is HostCopyOp(CopyDownload), words as StageUpload's.
	StageDownload
)

// DecodeOp is the stage op of kind from words, for bindings that pass
// every op as one list of int64 words.
func DecodeOp(kind StageOpKind, name string, words []int64) (StageOp, error) {
	need := map[StageOpKind]int{StageSpin: 1, StageUpload: 2, StageDownload: 2}[kind]
	switch {
	case kind == StageKernel:
		return DecodeKernel(name, words)
	case need == 0:
		return StageOp{}, fmt.Errorf("stage op kind %d, expected 0 (kernel) to 3 (download): %w", kind, backend.ErrInvalid)
	case len(words) != need:
		return StageOp{}, fmt.Errorf("stage op kind %d: %d words, expected %d: %w", kind, len(words), need, backend.ErrInvalid)
	case kind == StageSpin:
		return SpinOp(time.Duration(words[0]))
	}
	dir := CopyUpload
	if kind == StageDownload {
		dir = CopyDownload
	}
	return HostCopyOp(HostMem{Ptr: uintptr(words[0]), Len: int(words[1])}, dir)
}

// AddBufferAt is AddBuffer of the caller's device ranges of size bytes at
// addrs on dev, one version each.
func (m *PipelineStageManager) AddBufferAt(dev backend.Device, size int, addrs ...uintptr) (int, error) {
	var bs []backend.Buffer
	for _, a := range addrs {
		bs = append(bs, NewSpan(dev, a, size))
	}
	return m.AddBuffer(bs...)
}
