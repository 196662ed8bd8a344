package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// Stream is a CUDA stream. Streams made by CreateStream are non-blocking
// (CU_STREAM_NON_BLOCKING: no implicit ordering with the legacy default
// stream) and owned; streams from AdoptStream belong to someone else.
//
// A Stream may be used from several goroutines; the order of work issued
// concurrently is whatever order the calls reach the driver.
type Stream struct {
	dev   *Device
	ctx   C.uintptr_t
	h     C.uintptr_t
	prio  int
	owned bool
	g     guard // Go calls in flight; Close waits for them
	inv   invariants.Obj
}

var _ backend.Stream = (*Stream)(nil)

// CreateStream creates a non-blocking stream with the priority clamped to
// the device's range; Priority reports the value the driver applied.
func (d *Device) CreateStream(priority int) (*Stream, error) {
	p := ClampPriority(priority, d.least, d.greatest)
	r := C.vg_stream_create(C.uintptr_t(d.ctx), C.int(p))
	if err := errOf(r); err != nil {
		return nil, err
	}
	s := &Stream{dev: d, ctx: C.uintptr_t(d.ctx), h: C.uintptr_t(r.v0), prio: p, owned: true}
	if pr := C.vg_stream_priority(s.ctx, s.h); pr.code == 0 {
		s.prio = int(pr.i)
	}
	s.inv = invariants.Track("cuda.Stream", uintptr(s.h))
	return s, nil
}

// AdoptStream wraps a CUstream created elsewhere (CuPy, PyTorch,
// cuda.core). It is not owned: Close forgets it without destroying it.
// Handle 0 is the legacy default stream. The priority is read back from
// the driver, which also checks that the handle is a stream.
func (d *Device) AdoptStream(handle uintptr) (*Stream, error) {
	s := &Stream{dev: d, ctx: C.uintptr_t(d.ctx), h: C.uintptr_t(handle)}
	r := C.vg_stream_priority(s.ctx, s.h)
	if err := errOf(r); err != nil {
		return nil, fmt.Errorf("cuda.Device.WrapStream: handle=%#x: %w", handle, err)
	}
	s.prio = int(r.i)
	s.inv = invariants.Track("cuda.Stream (adopted)", handle)
	return s, nil
}

// Device returns the owning device.
func (s *Stream) Device() backend.Device { return s.dev }

// CUDADevice returns the owning device as a *Device.
func (s *Stream) CUDADevice() *Device { return s.dev }

// Handle returns the CUstream.
func (s *Stream) Handle() uintptr { return uintptr(s.h) }

// Priority returns the priority in effect.
func (s *Stream) Priority() int { return s.prio }

// Owned reports whether Close destroys the CUstream.
func (s *Stream) Owned() bool { return s.owned }

// errClosed reports use of a closed object, wrapping backend.ErrClosed.
func errClosed(op string) error { return fmt.Errorf("%s: %w", op, backend.ErrClosed) }

// asEvent extracts a live *Event from a backend.Event, marked in use: the
// caller calls e.g.exit() when done with it.
func asEvent(op string, ev backend.Event) (*Event, error) {
	e, ok := ev.(*Event)
	if !ok || e == nil {
		return nil, fmt.Errorf("%s: ev is %T, expected a non-nil *cuda.Event", op, ev)
	}
	if !e.g.enter() {
		return nil, e.inv.Misuse(errClosed(op + ": event"))
	}
	return e, nil
}

// Record records ev at the current tail of the stream.
func (s *Stream) Record(ev backend.Event) error {
	return s.withEvent("cuda.Stream.Record", ev, recordEvent)
}

// RecordExternal records ev at the current tail of a stream that is
// capturing a graph as an external event node (CU_EVENT_RECORD_EXTERNAL):
// nothing is recorded now; each launch of the graph records ev when the
// node's dependencies are done, so a stream that waits on ev after the
// launch waits for that point of the graph, not for the whole graph. The
// driver refuses it on a stream that is not capturing.
func (s *Stream) RecordExternal(ev *Event) error {
	return s.withEvent("cuda.Stream.RecordExternal", ev, recordEventExternal)
}

// WaitExternal makes later work on a stream that is capturing a graph
// wait for ev as an external event wait node (CU_EVENT_WAIT_EXTERNAL):
// nothing waits now; each launch of the graph waits at that node for ev's
// latest record as of the launch, whichever stream recorded it outside the
// capture (a plain WaitEvent there is refused: the capture's isolation).
func (s *Stream) WaitExternal(ev *Event) error {
	return s.withEvent("cuda.Stream.WaitExternal", ev, waitEventExternal)
}

// WaitEvent makes later work on the stream wait for ev; the host does not
// block.
func (s *Stream) WaitEvent(ev backend.Event) error {
	return s.withEvent("cuda.Stream.WaitEvent", ev, waitEvent)
}

// withEvent makes driver call between stream s and event ev (op names
// it in errors) with both held open (Close waits for it); call is one of
// the plain functions below, so nothing is allocated per call.
func (s *Stream) withEvent(op string, ev backend.Event, call func(ctx, st, ev C.uintptr_t) C.vg_ret) error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed(op))
	}
	defer s.g.exit()
	e, err := asEvent(op, ev)
	if err != nil {
		return err
	}
	defer e.g.exit()
	return errOf(call(s.ctx, s.h, e.h))
}

func recordEvent(ctx, st, ev C.uintptr_t) C.vg_ret { return C.vg_event_record(ctx, ev, st) }

func recordEventExternal(ctx, st, ev C.uintptr_t) C.vg_ret {
	return C.vg_event_record_external(ctx, ev, st)
}

func waitEvent(ctx, st, ev C.uintptr_t) C.vg_ret { return C.vg_stream_wait(ctx, st, ev) }

func waitEventExternal(ctx, st, ev C.uintptr_t) C.vg_ret {
	return C.vg_stream_wait_external(ctx, st, ev)
}

// Synchronize blocks the host until all work queued on the stream is done.
func (s *Stream) Synchronize() error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.Synchronize"))
	}
	defer s.g.exit()
	return errOf(C.vg_stream_sync(s.ctx, s.h))
}

// Query reports whether all work queued on the stream is done, without
// blocking.
func (s *Stream) Query() (bool, error) {
	if !s.g.enter() {
		return false, s.inv.Misuse(errClosed("cuda.Stream.Query"))
	}
	defer s.g.exit()
	return queryResult(C.vg_stream_query(s.ctx, s.h))
}

// checkN validates a byte count; zero-length operations are skipped by
// the callers because the driver rejects some of them.
func checkN(op string, n int) error {
	if n < 0 {
		return fmt.Errorf("%s: n=%d, expected n >= 0", op, n)
	}
	return nil
}

// Copy copies n bytes from src to dst in stream order (cuMemcpyAsync):
// with unified addressing the driver infers the direction from the
// pointers. Copies from or to pageable host memory may block the host.
func (s *Stream) Copy(dst, src uintptr, n int) error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.Copy"))
	}
	defer s.g.exit()
	if err := checkN("cuda.Stream.Copy", n); err != nil || n == 0 {
		return err
	}
	return errOf(C.vg_memcpy(s.ctx, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), s.h))
}

// CopyHtoD copies n bytes from host memory src to device memory dst.
func (s *Stream) CopyHtoD(dst, src uintptr, n int) error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.CopyHtoD"))
	}
	defer s.g.exit()
	if err := checkN("cuda.Stream.CopyHtoD", n); err != nil || n == 0 {
		return err
	}
	return errOf(C.vg_memcpy_htod(s.ctx, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), s.h))
}

// CopyDtoH copies n bytes from device memory src to host memory dst.
func (s *Stream) CopyDtoH(dst, src uintptr, n int) error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.CopyDtoH"))
	}
	defer s.g.exit()
	if err := checkN("cuda.Stream.CopyDtoH", n); err != nil || n == 0 {
		return err
	}
	return errOf(C.vg_memcpy_dtoh(s.ctx, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), s.h))
}

// CopyDtoD copies n bytes between device allocations.
func (s *Stream) CopyDtoD(dst, src uintptr, n int) error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.CopyDtoD"))
	}
	defer s.g.exit()
	if err := checkN("cuda.Stream.CopyDtoD", n); err != nil || n == 0 {
		return err
	}
	return errOf(C.vg_memcpy_dtod(s.ctx, C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), s.h))
}

// Copy2D copies height rows of width bytes from src (rows spitch bytes
// apart) to dst (rows dpitch bytes apart) with cuMemcpy2DAsync_v2; both
// sides are CU_MEMORYTYPE_UNIFIED, so any mix of device and host memory
// works.
func (s *Stream) Copy2D(dst uintptr, dpitch int, src uintptr, spitch int, width, height int) error {
	const op = "cuda.Stream.Copy2D"
	if !s.g.enter() {
		return s.inv.Misuse(errClosed(op))
	}
	defer s.g.exit()
	switch {
	case width < 0:
		return fmt.Errorf("%s: width=%d, expected width >= 0", op, width)
	case height < 0:
		return fmt.Errorf("%s: height=%d, expected height >= 0", op, height)
	case width == 0 || height == 0:
		return nil
	case dpitch < width:
		return fmt.Errorf("%s: dpitch=%d, expected dpitch >= width (%d)", op, dpitch, width)
	case spitch < width:
		return fmt.Errorf("%s: spitch=%d, expected spitch >= width (%d)", op, spitch, width)
	}
	return errOf(C.vg_memcpy2d(s.ctx, C.uintptr_t(dst), C.size_t(dpitch), C.uintptr_t(src), C.size_t(spitch),
		C.size_t(width), C.size_t(height), s.h))
}

// Memset sets n bytes at dst to v in stream order.
func (s *Stream) Memset(dst uintptr, v byte, n int) error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.Memset"))
	}
	defer s.g.exit()
	if err := checkN("cuda.Stream.Memset", n); err != nil || n == 0 {
		return err
	}
	return errOf(C.vg_memset(s.ctx, C.uintptr_t(dst), C.uchar(v), C.size_t(n), s.h))
}

// BeginCapture starts capturing the stream's work into a graph. The mode is
// CU_STREAM_CAPTURE_MODE_RELAXED so that other threads (CuPy work issued
// from Python threads) may keep making driver calls that the stricter
// modes forbid during a capture.
func (s *Stream) BeginCapture() error {
	if !s.g.enter() {
		return s.inv.Misuse(errClosed("cuda.Stream.BeginCapture"))
	}
	defer s.g.exit()
	return errOf(C.vg_begin_capture(s.ctx, s.h))
}

// EndCapture ends the capture and returns the instantiated graph.
func (s *Stream) EndCapture() (backend.Graph, error) {
	g, err := s.EndCaptureGraph()
	if err != nil {
		return nil, err
	}
	return g, nil
}

// EndCaptureGraph is EndCapture returning the concrete *Graph.
func (s *Stream) EndCaptureGraph() (*Graph, error) {
	if !s.g.enter() {
		return nil, s.inv.Misuse(errClosed("cuda.Stream.EndCapture"))
	}
	defer s.g.exit()
	r := C.vg_end_capture(s.ctx, s.h)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return &Graph{dev: s.dev, ctx: s.ctx, graph: C.uintptr_t(r.v0), exec: C.uintptr_t(r.v1), nodes: int(r.i),
		inv: invariants.Track("cuda.Graph", uintptr(r.v1))}, nil
}

// Capturing reports whether a capture is in progress on the stream,
// asking the driver, so captures begun by other libraries on an adopted
// stream count too. A closed stream or a failed query reports false.
func (s *Stream) Capturing() bool {
	if !s.g.enter() {
		return false
	}
	defer s.g.exit()
	r := C.vg_is_capturing(s.ctx, s.h)
	return r.code == 0 && r.i == 1 // CU_STREAM_CAPTURE_STATUS_ACTIVE
}

// Launch launches fn with grid x block threads and sharedMem bytes of
// dynamic shared memory. args are the kernel's parameters in order: uintptr
// (device pointers), int32, uint32, int64, uint64, float32, float64 or a
// backend.Buffer (its pointer); each must match the kernel's parameter
// type exactly, since the driver copies as many bytes as the kernel
// declares.
func (s *Stream) Launch(fn *Function, grid, block Dim3, sharedMem int, args ...any) error {
	const op = "cuda.Stream.Launch"
	if !s.g.enter() {
		return s.inv.Misuse(errClosed(op))
	}
	defer s.g.exit()
	if fn == nil {
		return fmt.Errorf("%s: fn is nil, expected a *cuda.Function", op)
	}
	if fn.mod.closed.Load() {
		return errClosed(op + ": module of " + fn.name)
	}
	if err := grid.check(op, "grid"); err != nil {
		return err
	}
	if err := block.check(op, "block"); err != nil {
		return err
	}
	if sharedMem < 0 {
		return fmt.Errorf("%s: sharedMem=%d, expected sharedMem >= 0", op, sharedMem)
	}
	buf := argPool.Get().(*argBuf)
	defer argPool.Put(buf)
	n, err := packArgs(buf, args)
	if err != nil {
		return err
	}
	return errOf(C.vg_launch(s.ctx, fn.h,
		C.uint(grid.X), C.uint(grid.Y), C.uint(grid.Z),
		C.uint(block.X), C.uint(block.Y), C.uint(block.Z),
		C.uint(sharedMem), s.h, (*C.uchar)(&buf.b[0]), C.int(n)))
}

// NativeSlot is what the C fast path needs to call the driver on the
// stream without Go (handle.Native): its kind, context and CUstream. A
// registry that publishes it must release its id before Close (pyapi's
// Stream.Close does).
func (s *Stream) NativeSlot() (kind int32, ctx, ptr uintptr) {
	return fastKindStream, uintptr(s.ctx), uintptr(s.h)
}

// Close destroys an owned stream after its queued work completes (the
// driver defers the release); an adopted stream is only forgotten. Calls
// in flight on other goroutines finish first, as do the fast path's once
// the registry that published the stream released its id: the handle is
// never destroyed under them. Closing twice returns an error wrapping
// backend.ErrClosed.
func (s *Stream) Close() error {
	if !s.g.shut() {
		return s.inv.Misuse(errClosed("cuda.Stream.Close"))
	}
	s.inv.Release()
	if !s.owned {
		return nil
	}
	return errOf(C.vg_stream_destroy(s.ctx, s.h))
}
