package pipeline

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// Span is memory the caller owns (a Python Array), described by its
// address and size so that copies and kernel arguments can be bounded.
// Free refuses: the caller frees it.
type Span struct {
	addr uintptr
	n    int
	dev  backend.Device
}

// NewSpan describes n bytes at addr on dev.
func NewSpan(dev backend.Device, addr uintptr, n int) Span { return Span{addr: addr, n: n, dev: dev} }

// Ptr is the address.
func (s Span) Ptr() uintptr { return s.addr }

// Size is the length in bytes.
func (s Span) Size() int { return s.n }

// Kind is DeviceMem: spans stand for arrays given to kernels and copies.
func (s Span) Kind() backend.MemKind { return backend.DeviceMem }

// Device is the device the span was described on.
func (s Span) Device() backend.Device { return s.dev }

// Free refuses: a span's memory belongs to the caller.
func (s Span) Free() error {
	return fmt.Errorf("pipeline.Span: memory owned by the caller: %w", backend.ErrInvalid)
}

// CopyDir says whether a StageOp is a host copy, and which way.
type CopyDir int

// Host copy directions of a StageOp.
const (
	NoCopy       CopyDir = iota
	CopyUpload           // host -> the stage's output buffer 0
	CopyDownload         // the stage's input buffer 0 -> host
)

// HostCopyOp copies between host memory and a stage's buffer 0: an upload
// fills output 0 from host, a download writes input 0 to host. The copy
// size is the stage buffer's; the host range must hold it.
func HostCopyOp(host HostMem, dir CopyDir) (StageOp, error) {
	if host.Ptr == 0 || host.Len <= 0 {
		return StageOp{}, fmt.Errorf("host=(%#x, %d bytes), expected a host address and a length > 0: %w", host.Ptr, host.Len, backend.ErrInvalid)
	}
	if dir != CopyUpload && dir != CopyDownload {
		return StageOp{}, fmt.Errorf("copy direction %d, expected CopyUpload or CopyDownload: %w", dir, backend.ErrInvalid)
	}
	name := map[CopyDir]string{CopyUpload: "upload", CopyDownload: "download"}[dir]
	return StageOp{Kernel: name, Copy: dir, Host: host}, nil
}

// MaxSpin is the longest SpinOp (1000 s).
const MaxSpin = 1000 * time.Second

// SpinOp keeps its stream busy for d (ops.Spin): a stage of known duration
// for tests and benchmarks.
func SpinOp(d time.Duration) (StageOp, error) {
	if d < 0 || d > MaxSpin {
		return StageOp{}, fmt.Errorf("spin of %v, expected 0 <= duration <= %v: %w", d, MaxSpin, backend.ErrInvalid)
	}
	return StageOp{Kernel: "spin_ns", Func: func(sc StageContext) error { return ops.Spin(sc.Stream, d) }}, nil
}

// KernelOp launches kernel name with grid x block threads and args, which
// may hold BufferRefs (resolved per iteration by pipeline stages).
func KernelOp(name string, grid, block [3]uint64, args []any) (StageOp, error) {
	if name == "" {
		return StageOp{}, fmt.Errorf("kernel name is empty, expected a kernel of kernels/: %w", backend.ErrInvalid)
	}
	var g, b [3]uint32
	for i := range 3 {
		if grid[i] < 1 || grid[i] > math.MaxUint32 || block[i] < 1 || block[i] > math.MaxUint32 {
			return StageOp{}, fmt.Errorf("kernel %q: grid=%v block=%v, expected each dimension in 1..%d: %w",
				name, grid, block, uint32(math.MaxUint32), backend.ErrInvalid)
		}
		g[i], b[i] = uint32(grid[i]), uint32(block[i])
	}
	if err := CheckKernelArgs(name, args); err != nil {
		return StageOp{}, err
	}
	return StageOp{Kernel: name, Grid: g, Block: b, Args: append([]any(nil), args...)}, nil
}

// HasRefs reports whether the op's arguments name stage buffers (In/Out).
func (o StageOp) HasRefs() bool {
	for _, a := range o.Args {
		if _, ok := a.(BufferRef); ok {
			return true
		}
	}
	return false
}

// Compute turns a kernel or Func op into a coordinator compute op. Host
// copies and kernels with stage buffer references are pipeline stages only.
func (o StageOp) Compute() (ComputeOp, error) {
	switch {
	case o.Copy != NoCopy:
		return ComputeOp{}, fmt.Errorf("a %s op is a pipeline stage op, expected a kernel or spin op (use queue_upload/queue_download): %w", o.Kernel, backend.ErrInvalid)
	case o.HasRefs():
		return ComputeOp{}, fmt.Errorf("kernel %q has stage buffer references (In/Out), which only pipeline stages resolve; pass arrays instead: %w", o.Kernel, backend.ErrInvalid)
	case o.Func != nil:
		f := o.Func
		return ComputeOp{Kernel: o.Kernel, Func: func(s backend.Stream) error { return f(StageContext{Stream: s}) }}, nil
	}
	return ComputeOp{Kernel: o.Kernel, Grid: o.Grid, Block: o.Block, Args: o.Args}, nil
}

// runCopy runs a host copy op on sc.
func runCopy(o StageOp, sc StageContext) error {
	b, what := sc.Outputs, "output"
	if o.Copy == CopyDownload {
		b, what = sc.Inputs, "input"
	}
	if len(b) == 0 {
		return fmt.Errorf("%s op: the stage has no %s buffer, expected one: %w", o.Kernel, what, backend.ErrInvalid)
	}
	n := b[0].Size()
	if n > o.Host.Len {
		return fmt.Errorf("%s op: host range of %d bytes, expected at least %d (the buffer): %w", o.Kernel, o.Host.Len, n, ErrHostTooSmall)
	}
	if o.Copy == CopyUpload {
		return sc.Stream.Copy(b[0].Ptr(), o.Host.Ptr, n)
	}
	return sc.Stream.Copy(o.Host.Ptr, b[0].Ptr(), n)
}

// elementwise is the signature of a kernel of kernels/elementwise.cu:
// which argument is the element count and the element size of each array
// argument before it.
type elementwise struct {
	nArg  int
	elems []int
}

var signatures sync.Map // kernel name -> *elementwise (nil: not an elementwise kernel)

// signatureOf parses fill_<T>, scale_offset_<T> and cast_<S>_<D>.
func signatureOf(name string) *elementwise {
	if v, ok := signatures.Load(name); ok {
		return v.(*elementwise)
	}
	size := func(t string) int {
		dt, err := backend.ParseDType(t)
		if err != nil {
			return 0
		}
		return dt.Size()
	}
	var sig *elementwise
	switch {
	case strings.HasPrefix(name, "fill_"):
		if e := size(name[len("fill_"):]); e > 0 {
			sig = &elementwise{nArg: 1, elems: []int{e}}
		}
	case strings.HasPrefix(name, "scale_offset_"):
		if e := size(name[len("scale_offset_"):]); e > 0 {
			sig = &elementwise{nArg: 2, elems: []int{e, e}}
		}
	case strings.HasPrefix(name, "cast_"):
		for i := len("cast_"); i < len(name); i++ {
			if name[i] != '_' {
				continue
			}
			if s, d := size(name[len("cast_"):i]), size(name[i+1:]); s > 0 && d > 0 {
				sig = &elementwise{nArg: 2, elems: []int{d, s}}
				break
			}
		}
	}
	signatures.Store(name, sig)
	return sig
}

// CheckKernelArgs refuses, before launch, an elementwise kernel whose
// element count n exceeds an array argument of known size (a
// backend.Buffer, e.g. a Span or a stage buffer): the kernel would read
// or write past the array (a SIGSEGV in the CPU twins, an illegal address
// on CUDA). Bare addresses (uintptr) carry no size and are not checked.
func CheckKernelArgs(name string, args []any) error {
	sig := signatureOf(name)
	if sig == nil || len(args) <= sig.nArg {
		return nil
	}
	n, ok := args[sig.nArg].(uint64)
	if !ok {
		return nil // the launch reports the type mismatch
	}
	for i, elem := range sig.elems {
		b, ok := args[i].(backend.Buffer)
		if !ok {
			continue
		}
		if n > uint64(b.Size()/elem) {
			return fmt.Errorf("kernel %q: n=%d elements, but argument %d holds %d bytes (%d elements of %d bytes): %w",
				name, n, i, b.Size(), b.Size()/elem, elem, backend.ErrInvalid)
		}
	}
	return nil
}
