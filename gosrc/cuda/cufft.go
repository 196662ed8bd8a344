package cuda

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// CUFFTPathEnv names an environment variable holding the full path of a
// cuFFT library. The Python layer sets it to the pip nvidia-cufft wheel's
// library, found through cuda-pathfinder, before the first plan is made.
const CUFFTPathEnv = "VORTEXGO_CUFFT_PATH"

// cufftSonames are the cuFFT libraries tried after $VORTEXGO_CUFFT_PATH,
// newest first, each with the CUDA major version it is built for: CUDA 13's
// cuFFT 12.x is libcufft.so.12 (pip: nvidia-cufft 12.x, vortexgo[cuda]),
// CUDA 12's cuFFT 11.x is libcufft.so.11 (nvidia-cufft-cu12,
// vortexgo[cuda12]). A cuFFT runs on a driver of its CUDA major or newer,
// not on an older one, so a CUDA 12 driver is never handed CUDA 13's.
var cufftSonames = []struct {
	name string
	cuda int
}{
	{"libcufft.so.12", 13},
	{"libcufft.so.11", 12},
}

// cufftAnyName is tried last: a toolkit's development symlink, of any version.
const cufftAnyName = "libcufft.so"

var cufftSymbols = []symbol{
	{C.VG_cufftPlanMany, []string{"cufftPlanMany"}},
	{C.VG_cufftSetStream, []string{"cufftSetStream"}},
	{C.VG_cufftExecC2C, []string{"cufftExecC2C"}},
	{C.VG_cufftExecR2C, []string{"cufftExecR2C"}},
	{C.VG_cufftDestroy, []string{"cufftDestroy"}},
}

// ErrNoCUFFT is wrapped by the error returned when no cuFFT library loads.
var ErrNoCUFFT = errors.New("no cuFFT library")

var (
	cufftOnce sync.Once
	cufftErr  error
)

// cufftCUDA returns the CUDA major version a cuFFT library is built for,
// read from its file name (libcufft.so.12, libcufft.so.12.0.0.61, a path
// to either); 0 when the name does not say.
func cufftCUDA(path string) int {
	base := filepath.Base(path)
	for _, s := range cufftSonames {
		if base == s.name || strings.HasPrefix(base, s.name+".") {
			return s.cuda
		}
	}
	return 0
}

// cufftCandidates lists the libraries to try under a driver of version
// driver (DriverVersion's value; 0 when unknown, which filters nothing):
// $VORTEXGO_CUFFT_PATH first, then the sonames, newest cuFFT first. skipped
// lists those left out because the driver is older than their CUDA.
func cufftCandidates(driver int) (names, skipped []string) {
	fits := func(name string) bool {
		c := cufftCUDA(name)
		return driver == 0 || c == 0 || c <= driver/1000
	}
	add := func(name string) {
		if fits(name) {
			names = append(names, name)
		} else {
			skipped = append(skipped, name)
		}
	}
	if p, _ := dl.Getenv(CUFFTPathEnv); p != "" { // the live environment (see dl.Getenv)
		add(p)
	}
	for _, s := range cufftSonames {
		add(s.name)
	}
	return append(names, cufftAnyName), skipped
}

// cufftAdvice says what to install for a driver of version driver.
func cufftAdvice(driver int) string {
	switch major := driver / 1000; {
	case major >= 13:
		return "pip install 'vortexgo[cuda]' (CUDA 13's cuFFT, nvidia-cufft)"
	case major == 12:
		return "pip install 'vortexgo[cuda12]' (CUDA 12's cuFFT, nvidia-cufft-cu12)"
	}
	return "pip install 'vortexgo[cuda]' for a CUDA 13 driver, 'vortexgo[cuda12]' for CUDA 12"
}

// loadCUFFT loads cuFFT once per process, the one that suits the driver.
func loadCUFFT() error {
	cufftOnce.Do(func() {
		driver, _ := DriverVersion() // a plan has a device, so the driver is loaded; 0 if not
		names, skipped := cufftCandidates(driver)
		cufftErr = loadFFTLib(names, skipped, driver, func(idx int, p unsafe.Pointer) { C.vg_set_fft_fn(C.int(idx), p) })
	})
	return cufftErr
}

// loadFFTLib opens the first loadable name and resolves the cuFFT symbols.
// The error names every library tried and left out, so a user can see
// whether $VORTEXGO_CUFFT_PATH was set and what each attempt said, and
// what to install for this driver.
func loadFFTLib(names, skipped []string, driver int, set func(int, unsafe.Pointer)) error {
	lib, err := dl.Open(names...)
	if err != nil {
		left := ""
		if len(skipped) > 0 {
			left = fmt.Sprintf("; left out %s: built for a newer CUDA than this driver's %d.%d",
				strings.Join(skipped, ", "), driver/1000, driver%1000/10)
		}
		return fmt.Errorf("%w (tried %s%s): %s, or set $%s to the library's path: %v",
			ErrNoCUFFT, strings.Join(names, ", "), left, cufftAdvice(driver), CUFFTPathEnv, err)
	}
	if err := resolve(lib, cufftSymbols, set); err != nil {
		return fmt.Errorf("%w: %v", ErrNoCUFFT, err)
	}
	return nil
}

// FFTKind is the transform type of a plan.
type FFTKind int

const (
	// C2C is a complex64 to complex64 transform.
	C2C FFTKind = iota
	// R2C is a float32 to complex64 transform producing n/2+1 bins.
	R2C
)

// cufftType values from cufft.h.
const (
	cufftR2C = 0x2a
	cufftC2C = 0x29
)

// String returns "C2C" or "R2C".
func (k FFTKind) String() string {
	switch k {
	case C2C:
		return "C2C"
	case R2C:
		return "R2C"
	}
	return fmt.Sprintf("FFTKind(%d)", int(k))
}

// FFTPlan is a batched 1-D cuFFT plan on one device. A plan holds a work
// area and a stream binding, so it is not safe for concurrent use: give
// each goroutine its own plan.
type FFTPlan struct {
	dev    *Device
	ctx    C.uintptr_t
	plan   C.int
	n      int
	batch  int
	kind   FFTKind
	closed atomic.Bool
}

// NewFFTPlan makes a plan for batch contiguous transforms of length n
// (cufftPlanMany with the default, packed layout: for R2C each input row
// is n floats and each output row n/2+1 complex values).
func NewFFTPlan(dev *Device, n, batch int, kind FFTKind) (*FFTPlan, error) {
	const op = "cuda.NewFFTPlan"
	switch {
	case dev == nil:
		return nil, fmt.Errorf("%s: dev is nil, expected a *cuda.Device", op)
	case n <= 0:
		return nil, fmt.Errorf("%s: n=%d, expected n > 0", op, n)
	case batch <= 0:
		return nil, fmt.Errorf("%s: batch=%d, expected batch > 0", op, batch)
	}
	var typ C.int
	switch kind {
	case C2C:
		typ = cufftC2C
	case R2C:
		typ = cufftR2C
	default:
		return nil, fmt.Errorf("%s: kind=%v, expected C2C or R2C", op, kind)
	}
	if err := loadCUFFT(); err != nil {
		return nil, err
	}
	r := C.vg_fft_plan(C.uintptr_t(dev.ctx), C.int(n), C.int(batch), typ)
	if err := errOf(r); err != nil {
		return nil, err
	}
	return &FFTPlan{dev: dev, ctx: C.uintptr_t(dev.ctx), plan: C.int(r.i), n: n, batch: batch, kind: kind}, nil
}

// N returns the transform length.
func (p *FFTPlan) N() int { return p.n }

// Batch returns the number of transforms per execution.
func (p *FFTPlan) Batch() int { return p.batch }

// Kind returns the transform type.
func (p *FFTPlan) Kind() FFTKind { return p.kind }

// SetStream makes later executions run on s.
func (p *FFTPlan) SetStream(s *Stream) error {
	const op = "cuda.FFTPlan.SetStream"
	if p.closed.Load() {
		return errClosed(op)
	}
	if s == nil {
		return fmt.Errorf("%s: s is nil, expected a *cuda.Stream", op)
	}
	return errOf(C.vg_fft_set_stream(p.ctx, p.plan, s.h))
}

// ExecC2C runs the C2C transform from in to out (they may be equal);
// forward selects the sign of the exponent (forward = -1, as cuFFT and
// NumPy). The inverse is unnormalised.
func (p *FFTPlan) ExecC2C(in, out uintptr, forward bool) error {
	const op = "cuda.FFTPlan.ExecC2C"
	if p.closed.Load() {
		return errClosed(op)
	}
	if p.kind != C2C {
		return fmt.Errorf("%s: plan kind is %v, expected C2C", op, p.kind)
	}
	dir := C.int(1) // CUFFT_INVERSE
	if forward {
		dir = -1 // CUFFT_FORWARD
	}
	return errOf(C.vg_fft_exec_c2c(p.ctx, p.plan, C.uintptr_t(in), C.uintptr_t(out), dir))
}

// ExecR2C runs the forward real-to-complex transform from in to out.
func (p *FFTPlan) ExecR2C(in, out uintptr) error {
	const op = "cuda.FFTPlan.ExecR2C"
	if p.closed.Load() {
		return errClosed(op)
	}
	if p.kind != R2C {
		return fmt.Errorf("%s: plan kind is %v, expected R2C", op, p.kind)
	}
	return errOf(C.vg_fft_exec_r2c(p.ctx, p.plan, C.uintptr_t(in), C.uintptr_t(out)))
}

// Close destroys the plan. Closing twice returns an error wrapping
// backend.ErrClosed.
func (p *FFTPlan) Close() error {
	if !p.closed.CompareAndSwap(false, true) {
		return errClosed("cuda.FFTPlan.Close")
	}
	return errOf(C.vg_fft_destroy(p.ctx, p.plan))
}

// cufftResults names cufftResult codes (cufft.h), which the library has no
// function to describe.
var cufftResults = map[int][2]string{
	1:  {"CUFFT_INVALID_PLAN", "invalid plan handle"},
	2:  {"CUFFT_ALLOC_FAILED", "GPU or CPU memory allocation failed"},
	3:  {"CUFFT_INVALID_TYPE", "invalid transform type"},
	4:  {"CUFFT_INVALID_VALUE", "invalid pointer or parameter"},
	5:  {"CUFFT_INTERNAL_ERROR", "driver or internal cuFFT library error"},
	6:  {"CUFFT_EXEC_FAILED", "failed to execute an FFT on the GPU"},
	7:  {"CUFFT_SETUP_FAILED", "the cuFFT library failed to initialize"},
	8:  {"CUFFT_INVALID_SIZE", "invalid transform size"},
	9:  {"CUFFT_UNALIGNED_DATA", "unaligned data"},
	10: {"CUFFT_INCOMPLETE_PARAMETER_LIST", "missing parameters in call"},
	11: {"CUFFT_INVALID_DEVICE", "execution of a plan was on a different GPU than plan creation"},
	12: {"CUFFT_PARSE_ERROR", "internal plan database error"},
	13: {"CUFFT_NO_WORKSPACE", "no workspace has been provided prior to plan execution"},
	14: {"CUFFT_NOT_IMPLEMENTED", "functionality not implemented"},
	15: {"CUFFT_LICENSE_ERROR", "license error"},
	16: {"CUFFT_NOT_SUPPORTED", "operation not supported for the given parameters"},
}

// cufftResultText returns the name and description of a cufftResult.
func cufftResultText(code int) (name, msg string) {
	if t, ok := cufftResults[code]; ok {
		return t[0], t[1]
	}
	return fmt.Sprintf("cufftResult(%d)", code), ""
}
