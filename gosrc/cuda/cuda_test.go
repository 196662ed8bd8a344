package cuda

import (
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// These tests run without a GPU. The no-driver test expects the machine
// to lack libcuda.so.1 and skips where a driver is installed.

func TestInitWithoutDriver(t *testing.T) {
	if Available() {
		t.Skip("a CUDA driver is installed; the no-driver path cannot be observed here")
	}
	err := Init()
	require.ErrorIs(t, err, ErrNoDriver)
	require.ErrorContains(t, err, "no CUDA driver: ")
	require.ErrorContains(t, err, "libcuda.so.1") // dlopen's own text names the file

	// Every entry point reports the same error instead of crashing.
	_, err = DeviceCount()
	require.ErrorIs(t, err, ErrNoDriver)
	_, err = GetDevice(0)
	require.ErrorIs(t, err, ErrNoDriver)
}

func TestLoad(t *testing.T) {
	noop := func(int, unsafe.Pointer) {}
	tests := []struct {
		name  string
		libs  []string
		wants []string
	}{
		{"missing library keeps every dlerror", []string{"libvg_nodriver_a.so.1", "libvg_nodriver_b.so.1"},
			[]string{"no CUDA driver: ", "libvg_nodriver_a.so.1", "libvg_nodriver_b.so.1"}},
		{"library without driver symbols", []string{"libc.so.6"},
			[]string{"no CUDA driver: ", "libc.so.6 lacks [cuInit]", "driver too old?"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := load(tc.libs, driverSymbols, noop)
			require.ErrorIs(t, err, ErrNoDriver)
			for _, w := range tc.wants {
				require.ErrorContains(t, err, w)
			}
		})
	}
}

func TestResolveFallbackNames(t *testing.T) {
	// libc stands in for a driver: the first name of an entry is missing,
	// the second exists, as with cuEventElapsedTime_v2 on older drivers.
	lib, err := dl.Open("libc.so.6")
	require.NoError(t, err)
	got := map[int]unsafe.Pointer{}
	err = resolve(lib, []symbol{{7, []string{"vg_missing_v2", "strlen"}}}, func(i int, p unsafe.Pointer) { got[i] = p })
	require.NoError(t, err)
	require.NotNil(t, got[7])
}

func TestDriverSymbolsComplete(t *testing.T) {
	// Every table slot must be filled, or a wrapper would call NULL.
	seen := map[int]bool{}
	for _, s := range driverSymbols {
		require.False(t, seen[s.idx], "slot %d listed twice (%v)", s.idx, s.names)
		seen[s.idx] = true
		require.NotEmpty(t, s.names)
	}
	require.Len(t, seen, driverFnCount)
	require.Len(t, cufftSymbols, fftFnCount)
}

func TestCUFFTMissing(t *testing.T) {
	names := []string{"/nonexistent/libcufft.so.11", "libvg_nocufft.so.11"}
	err := loadFFTLib(names, []string{"libcufft.so.12"}, 12080, func(int, unsafe.Pointer) {})
	require.ErrorIs(t, err, ErrNoCUFFT)
	for _, w := range []string{"/nonexistent/libcufft.so.11", "libvg_nocufft.so.11", CUFFTPathEnv,
		"left out libcufft.so.12", "driver's 12.8", "pip install 'vortexgo[cuda12]'"} {
		require.ErrorContains(t, err, w)
	}
	err = loadFFTLib(names, nil, 13000, func(int, unsafe.Pointer) {})
	require.ErrorContains(t, err, "pip install 'vortexgo[cuda]'")
	require.NotContains(t, err.Error(), "left out")
}

// TestCUFFTCandidates: which cuFFT libraries are tried under which driver.
// CUDA 13's cuFFT (libcufft.so.12, nvidia-cufft) needs a CUDA 13 driver;
// CUDA 12's (libcufft.so.11, nvidia-cufft-cu12) runs on 12 and 13.
func TestCUFFTCandidates(t *testing.T) {
	const pip13 = "/venv/lib/python3.12/site-packages/nvidia/cu13/lib/libcufft.so.12"
	const pip12 = "/venv/lib/python3.12/site-packages/nvidia/cufft/lib/libcufft.so.11"
	tests := []struct {
		name           string
		env            string
		driver         int
		names, skipped []string
	}{
		{"CUDA 13 driver, nothing set", "", 13000,
			[]string{"libcufft.so.12", "libcufft.so.11", "libcufft.so"}, nil},
		{"CUDA 13.1 driver, pip's CUDA 13 cuFFT", pip13, 13010,
			[]string{pip13, "libcufft.so.12", "libcufft.so.11", "libcufft.so"}, nil},
		{"CUDA 13 driver, pip's CUDA 12 cuFFT", pip12, 13000,
			[]string{pip12, "libcufft.so.12", "libcufft.so.11", "libcufft.so"}, nil},
		{"CUDA 12 driver, nothing set", "", 12080,
			[]string{"libcufft.so.11", "libcufft.so"}, []string{"libcufft.so.12"}},
		{"CUDA 12 driver, pip's CUDA 12 cuFFT", pip12, 12040,
			[]string{pip12, "libcufft.so.11", "libcufft.so"}, []string{"libcufft.so.12"}},
		{"CUDA 12 driver, pip's CUDA 13 cuFFT (the wrong extra)", pip13, 12080,
			[]string{"libcufft.so.11", "libcufft.so"}, []string{pip13, "libcufft.so.12"}},
		{"CUDA 12 driver, a toolkit's full file name", "/usr/local/cuda/lib64/libcufft.so.12.0.0.61", 12080,
			[]string{"libcufft.so.11", "libcufft.so"}, []string{"/usr/local/cuda/lib64/libcufft.so.12.0.0.61", "libcufft.so.12"}},
		{"CUDA 12 driver, a name that does not say", "/opt/x/cufft.so", 12080,
			[]string{"/opt/x/cufft.so", "libcufft.so.11", "libcufft.so"}, []string{"libcufft.so.12"}},
		{"driver version unknown", pip13, 0,
			[]string{pip13, "libcufft.so.12", "libcufft.so.11", "libcufft.so"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(CUFFTPathEnv, tc.env)
			names, skipped := cufftCandidates(tc.driver)
			require.Equal(t, tc.names, names)
			require.Equal(t, tc.skipped, skipped)
		})
	}
}

func TestCUFFTCUDA(t *testing.T) {
	for path, want := range map[string]int{
		"libcufft.so.12": 13, "/a/b/libcufft.so.12.0.0.61": 13, "libcufft.so.11": 12,
		"libcufft.so.11.4.1.4": 12, "libcufft.so": 0, "libcufft.so.10": 0, "libcufft.so.120": 0, "": 0,
	} {
		require.Equal(t, want, cufftCUDA(path), path)
	}
}

func TestErrorFormat(t *testing.T) {
	tests := []struct {
		name string
		err  *Error
		want string
	}{
		{"full", &Error{Op: "cuMemAlloc_v2", Code: 2, Name: "CUDA_ERROR_OUT_OF_MEMORY", Msg: "out of memory"},
			"cuda: cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"},
		{"no message", &Error{Op: "cuEventQuery", Code: 600, Name: "CUDA_ERROR_NOT_READY"},
			"cuda: cuEventQuery: CUDA_ERROR_NOT_READY (600)"},
		{"unknown code", &Error{Op: "cuInit", Code: 12345}, "cuda: cuInit: CUresult(12345) (12345)"},
		{"cufft", newError("cufftExecC2C", 6), "cuda: cufftExecC2C: CUFFT_EXEC_FAILED (6): failed to execute an FFT on the GPU"},
		{"cufft unknown", newError("cufftPlanMany", 99), "cuda: cufftPlanMany: cufftResult(99) (99)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, tc.err.Error())
		})
	}
}

// The stream-capture errors say what to do; other codes keep the driver's text alone.
func TestErrorCaptureHints(t *testing.T) {
	tests := []struct {
		name   string
		err    *Error
		prefix string
		says   string
	}{
		{"wait outside the capture", &Error{Op: "cuStreamWaitEvent", Code: CodeCaptureIsolation,
			Name: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION"},
			"cuda: cuStreamWaitEvent: CUDA_ERROR_STREAM_CAPTURE_ISOLATION (905); ",
			"synchronize that work before the capture begins"},
		{"sync inside the capture", &Error{Op: "cuStreamSynchronize", Code: CodeCaptureUnsupported,
			Name: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", Msg: "operation not permitted when stream is capturing"},
			"cuda: cuStreamSynchronize: CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED (900): operation not permitted " +
				"when stream is capturing; ",
			"synchronize before the capture begins or after it ends"},
		{"invalidated names every cause", &Error{Op: "cuStreamEndCapture", Code: CodeCaptureInvalidated},
			"cuda: cuStreamEndCapture: CUresult(901) (901); ",
			"cannot wait on an event recorded outside the capture"},
		{"captured event", &Error{Op: "cuEventQuery", Code: CodeCapturedEvent},
			"cuda: cuEventQuery: CUresult(907) (907); ", "launch the graph"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.err.Error()
			require.True(t, strings.HasPrefix(got, tc.prefix), got)
			require.Contains(t, got[len(tc.prefix):], tc.says)
		})
	}
	require.Equal(t, "cuda: cuMemAlloc_v2: CUresult(2) (2)", (&Error{Op: "cuMemAlloc_v2", Code: 2}).Error())
	require.NotContains(t, newError("cufftExecC2C", CodeCaptureUnsupported).Error(), ";",
		"a cuFFT code is no CUresult: no capture hint")
}

func TestErrorIs(t *testing.T) {
	var err error = &Error{Op: "cuMemAlloc_v2", Code: CodeOutOfMemory}
	wrapped := errors.Join(errors.New("context"), err)
	require.ErrorIs(t, wrapped, &Error{Code: CodeOutOfMemory})
	require.NotErrorIs(t, wrapped, &Error{Code: CodeNotReady})
	var ce *Error
	require.ErrorAs(t, wrapped, &ce)
	require.Equal(t, "cuMemAlloc_v2", ce.Op)
}

func TestClampPriority(t *testing.T) {
	tests := []struct {
		name               string
		p, least, greatest int
		want               int
	}{
		{"inside", -3, 0, -5, -3},
		{"least", 0, 0, -5, 0},
		{"greatest", -5, 0, -5, -5},
		{"below greatest", -100, 0, -5, -5},
		{"above least", 7, 0, -5, 0},
		{"bounds swapped", -9, -5, 0, -5},
		{"single-level device", 3, 0, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ClampPriority(tc.p, tc.least, tc.greatest))
		})
	}
}

// fakeBuffer is a backend.Buffer that is not a *cuda.Buffer.
type fakeBuffer struct{ backend.Buffer }

func (fakeBuffer) Ptr() uintptr { return 0xdead0000 }

func TestPackArgs(t *testing.T) {
	ne := binary.NativeEndian
	tests := []struct {
		name  string
		args  []any
		check func(t *testing.T, b []byte)
		err   string
	}{
		{"empty", nil, func(t *testing.T, b []byte) {}, ""},
		{"every type", []any{uintptr(0x1234_5678_9abc), int32(-2), uint32(7), int64(-3), uint64(1 << 40),
			float32(1.5), float64(-2.25), fakeBuffer{}},
			func(t *testing.T, b []byte) {
				require.Equal(t, uint64(0x1234_5678_9abc), ne.Uint64(b[0:]))
				require.Equal(t, int32(-2), int32(ne.Uint32(b[8:])))
				require.Equal(t, uint32(7), ne.Uint32(b[16:]))
				require.Equal(t, int64(-3), int64(ne.Uint64(b[24:])))
				require.Equal(t, uint64(1<<40), ne.Uint64(b[32:]))
				require.Equal(t, float32(1.5), math.Float32frombits(ne.Uint32(b[40:])))
				require.Equal(t, -2.25, math.Float64frombits(ne.Uint64(b[48:])))
				require.Equal(t, uint64(0xdead0000), ne.Uint64(b[56:]))
			}, ""},
		{"nil cuda buffer is a null pointer", []any{(*Buffer)(nil)},
			func(t *testing.T, b []byte) { require.Zero(t, ne.Uint64(b)) }, ""},
		{"plain int is ambiguous", []any{uintptr(1), 5}, nil, "args[1] has type int, expected uintptr"},
		{"string", []any{"x"}, nil, "args[0] has type string"},
		{"too many", make([]any, MaxKernelArgs+1), nil, "expected at most 32"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf argBuf
			n, err := packArgs(&buf, tc.args)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, len(tc.args), n)
			tc.check(t, buf.b[:])
		})
	}
}

func TestPackArgsAllocFree(t *testing.T) {
	// The launch path's packing must not allocate (the args slice itself
	// is the caller's).
	args := []any{uintptr(1), int32(2), float32(3)}
	buf := new(argBuf)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := packArgs(buf, args); err != nil {
			t.Fatal(err)
		}
	})
	require.Zero(t, allocs)
}

func TestDim3Check(t *testing.T) {
	require.NoError(t, Dim3{1, 1, 1}.check("op", "grid"))
	require.ErrorContains(t, Dim3{4, 0, 1}.check("op", "block"), "op: block={4 0 1}, expected every extent >= 1")
}

func TestFFTKindString(t *testing.T) {
	require.Equal(t, "C2C", C2C.String())
	require.Equal(t, "R2C", R2C.String())
	require.Equal(t, "FFTKind(9)", FFTKind(9).String())
}
