package ops

import (
	"errors"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/kernels"
)

// newStream returns a CPU stream closed at the end of the test.
func newStream(t *testing.T) backend.Stream {
	t.Helper()
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// alloc returns a CPU buffer of n elements of T holding vals (if any).
func alloc[T number](t *testing.T, n int, vals ...T) backend.Buffer {
	t.Helper()
	var z T
	b, err := cpu.Default().Alloc(max(n, 1) * sizeOf(z))
	require.NoError(t, err)
	t.Cleanup(func() { _ = b.Free() })
	copy(hostSlice[T](b.Ptr(), uint64(n)), vals)
	return b
}

func sizeOf[T number](z T) int {
	switch any(z).(type) {
	case int8, uint8:
		return 1
	case int16, uint16:
		return 2
	case int32, uint32, float32:
		return 4
	}
	return 8
}

func read[T number](b backend.Buffer, n int) []T {
	return append([]T(nil), hostSlice[T](b.Ptr(), uint64(n))...)
}

func TestFill(t *testing.T) {
	s := newStream(t)
	tests := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"int8 saturates high", func(t *testing.T) { fillCase[int8](t, s, backend.Int8, 300, 127) }},
		{"int8 saturates low", func(t *testing.T) { fillCase[int8](t, s, backend.Int8, -1000, -128) }},
		{"uint8 negative is 0", func(t *testing.T) { fillCase[uint8](t, s, backend.Uint8, -5, 0) }},
		{"int16 ties to even", func(t *testing.T) { fillCase[int16](t, s, backend.Int16, 2.5, 2) }},
		{"uint16 rounds", func(t *testing.T) { fillCase[uint16](t, s, backend.Uint16, 41.6, 42) }},
		{"int32 NaN is 0", func(t *testing.T) { fillCase[int32](t, s, backend.Int32, math.NaN(), 0) }},
		{"uint32 max", func(t *testing.T) { fillCase[uint32](t, s, backend.Uint32, 1e12, math.MaxUint32) }},
		{"float32", func(t *testing.T) { fillCase[float32](t, s, backend.Float32, 1.25, 1.25) }},
		{"float64", func(t *testing.T) { fillCase[float64](t, s, backend.Float64, -3.5e100, -3.5e100) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.run)
	}
}

func fillCase[T number](t *testing.T, s backend.Stream, dt backend.DType, v float64, want T) {
	const n = 1000
	b := alloc[T](t, n+1)
	sentinel := hostSlice[T](b.Ptr(), n+1)
	sentinel[n] = 7
	require.NoError(t, Fill(s, b.Ptr(), n, dt, v))
	got := read[T](b, n+1)
	for i := 0; i < n; i++ {
		require.Equal(t, want, got[i], "element %d", i)
	}
	require.Equal(t, T(7), got[n], "Fill wrote past n")
}

func TestScaleOffset(t *testing.T) {
	s := newStream(t)
	t.Run("uint16", func(t *testing.T) {
		src := alloc[uint16](t, 4, 0, 100, 40000, 65535)
		dst := alloc[uint16](t, 4)
		require.NoError(t, ScaleOffset(s, dst.Ptr(), src.Ptr(), 4, backend.Uint16, 2, 1))
		require.Equal(t, []uint16{1, 201, 65535, 65535}, read[uint16](dst, 4))
	})
	t.Run("int8 in place saturates and rounds", func(t *testing.T) {
		b := alloc[int8](t, 4, -100, 50, 3, 1)
		require.NoError(t, ScaleOffset(s, b.Ptr(), b.Ptr(), 4, backend.Int8, 2, 0.5))
		// 3*2+0.5 = 6.5 -> 6 (ties to even); 1*2+0.5 = 2.5 -> 2.
		require.Equal(t, []int8{-128, 100, 6, 2}, read[int8](b, 4))
	})
	t.Run("int32 computes in float64", func(t *testing.T) {
		src := alloc[int32](t, 2, 16777217, -7)
		dst := alloc[int32](t, 2)
		require.NoError(t, ScaleOffset(s, dst.Ptr(), src.Ptr(), 2, backend.Int32, 1, 0))
		require.Equal(t, []int32{16777217, -7}, read[int32](dst, 2)) // float32 would give 16777216
	})
	t.Run("float32", func(t *testing.T) {
		src := alloc[float32](t, 3, 1, -2, 0.5)
		dst := alloc[float32](t, 3)
		require.NoError(t, ScaleOffset(s, dst.Ptr(), src.Ptr(), 3, backend.Float32, 0.5, -1))
		require.Equal(t, []float32{-0.5, -2, -0.75}, read[float32](dst, 3))
	})
	t.Run("float64", func(t *testing.T) {
		src := alloc[float64](t, 2, 1e300, 3)
		dst := alloc[float64](t, 2)
		require.NoError(t, ScaleOffset(s, dst.Ptr(), src.Ptr(), 2, backend.Float64, 10, 1))
		require.Equal(t, []float64{1e301, 31}, read[float64](dst, 2))
	})
}

func TestCast(t *testing.T) {
	s := newStream(t)
	t.Run("float32 to uint8", func(t *testing.T) {
		src := alloc[float32](t, 7, -1.5, 0.5, 1.5, 254.6, 1e9, float32(math.NaN()), 127.49)
		dst := alloc[uint8](t, 7)
		require.NoError(t, Cast(s, dst.Ptr(), backend.Uint8, src.Ptr(), backend.Float32, 7))
		require.Equal(t, []uint8{0, 0, 2, 255, 255, 0, 127}, read[uint8](dst, 7))
	})
	t.Run("uint16 to float32", func(t *testing.T) {
		src := alloc[uint16](t, 3, 0, 1, 65535)
		dst := alloc[float32](t, 3)
		require.NoError(t, Cast(s, dst.Ptr(), backend.Float32, src.Ptr(), backend.Uint16, 3))
		require.Equal(t, []float32{0, 1, 65535}, read[float32](dst, 3))
	})
	t.Run("uint32 to int32 saturates", func(t *testing.T) {
		src := alloc[uint32](t, 2, math.MaxUint32, 5)
		dst := alloc[int32](t, 2)
		require.NoError(t, Cast(s, dst.Ptr(), backend.Int32, src.Ptr(), backend.Uint32, 2))
		require.Equal(t, []int32{math.MaxInt32, 5}, read[int32](dst, 2))
	})
	t.Run("int8 to int16 and float64", func(t *testing.T) {
		src := alloc[int8](t, 2, -128, 127)
		d16 := alloc[int16](t, 2)
		d64 := alloc[float64](t, 2)
		require.NoError(t, Cast(s, d16.Ptr(), backend.Int16, src.Ptr(), backend.Int8, 2))
		require.NoError(t, Cast(s, d64.Ptr(), backend.Float64, src.Ptr(), backend.Int8, 2))
		require.Equal(t, []int16{-128, 127}, read[int16](d16, 2))
		require.Equal(t, []float64{-128, 127}, read[float64](d64, 2))
	})
	t.Run("float64 to float32 rounds", func(t *testing.T) {
		src := alloc[float64](t, 1, 0.1)
		dst := alloc[float32](t, 1)
		require.NoError(t, Cast(s, dst.Ptr(), backend.Float32, src.Ptr(), backend.Float64, 1))
		require.Equal(t, []float32{0.1}, read[float32](dst, 1))
	})
}

func TestErrors(t *testing.T) {
	s := newStream(t)
	b := alloc[float32](t, 4)
	p := b.Ptr()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nil stream", Fill(nil, p, 4, backend.Float32, 0), "ops.Fill: s is nil, expected a stream"},
		{"negative n", Fill(s, p, -1, backend.Float32, 0), "ops.Fill: n=-1, expected n >= 0"},
		{"null dst", Fill(s, 0, 4, backend.Float32, 0), "ops.Fill: null pointer with n=4"},
		{"complex64", Fill(s, p, 4, backend.Complex64, 0), "ops.Fill: dt=complex64, expected one of int8"},
		{"bad dtype", ScaleOffset(s, p, p, 4, backend.DType(42), 1, 0), "ops.ScaleOffset: dt=DType(42), expected one of"},
		{"cast bad src", Cast(s, p, backend.Float32, p, backend.Complex64, 4), "ops.Cast: srcType=complex64"},
		{"cast bad dst", Cast(s, p, backend.DType(-1), p, backend.Float32, 4), "ops.Cast: dstType=DType(-1)"},
		{"negative spin", Spin(s, -time.Second), "ops.Spin: d=-1s, expected d >= 0"},
		{"unknown kernel", LaunchByName(s, "no_such_kernel", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}),
			`no CPU implementation of kernel "no_such_kernel"`},
		{"wrong arg count", LaunchByName(s, "fill_float32", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, p),
			"fill_float32: got 1 args, expected 3"},
		{"wrong arg type", LaunchByName(s, "fill_float32", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, p, 4, 0.0),
			"fill_float32: args[1] has type int, expected uint64"},
		{"nil stream by name", LaunchByName(nil, "fill_float32", [3]uint32{}, [3]uint32{}), "s is nil"},
		{"foreign stream", LaunchByName(plainStream{}, "fill_float32", [3]uint32{}, [3]uint32{}),
			"s is ops.plainStream, expected a *cuda.Stream or a backend.HostStream"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, tc.err, tc.want)
		})
	}
	// n == 0 is a no-op, even with null pointers.
	require.NoError(t, Fill(s, 0, 0, backend.Float32, 1))
	require.NoError(t, Cast(s, 0, backend.Uint8, 0, backend.Float32, 0))
}

// plainStream is a stream of neither backend ops knows.
type plainStream struct{ backend.Stream }

func TestEveryKernelHasHostTwin(t *testing.T) {
	host := HostKernels()
	for _, mod := range []string{"elementwise"} {
		entries, err := kernels.Entries(mod)
		require.NoError(t, err)
		for _, e := range entries {
			require.Contains(t, host, e, "kernel %s of %s.ptx has no CPU twin", e, mod)
		}
	}
}

func TestKernelIndex(t *testing.T) {
	mod, err := kernelModule("cast_uint16_float32")
	require.NoError(t, err)
	require.Equal(t, "elementwise", mod)
	_, err = kernelModule("nope")
	require.ErrorContains(t, err, `no kernel "nope" in the embedded modules [`)

	entries := map[string][]string{"a": {"k1", "k2"}, "b": {"k3", "k1"}}
	idx, err := buildIndex([]string{"a", "b"}, func(m string) ([]string, error) { return entries[m], nil })
	require.ErrorContains(t, err, `kernel "k1" is defined in both a.ptx and b.ptx`)
	require.Equal(t, "b", idx["k3"])

	_, err = buildIndex([]string{"x"}, func(string) ([]string, error) { return nil, errors.New("boom") })
	require.ErrorContains(t, err, "boom")
}

func TestRegisterHostAndLaunchByName(t *testing.T) {
	s := newStream(t)
	var got []any
	RegisterHost("test_custom_kernel", func(args ...any) error {
		got = args
		return nil
	})
	require.Contains(t, HostKernels(), "test_custom_kernel")
	require.NoError(t, LaunchByName(s, "test_custom_kernel", [3]uint32{1, 1, 1}, [3]uint32{32, 1, 1},
		uintptr(8), int32(-1), float32(2)))
	require.Equal(t, []any{uintptr(8), int32(-1), float32(2)}, got)

	RegisterHost("test_failing_kernel", func(args ...any) error { return errors.New("bad input") })
	require.ErrorContains(t, LaunchByName(s, "test_failing_kernel", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}), "bad input")

	require.Panics(t, func() { RegisterHost("", func(...any) error { return nil }) })
	require.Panics(t, func() { RegisterHost("x", nil) })
}

func TestCaptureAndReplay(t *testing.T) {
	s := newStream(t)
	b := alloc[float32](t, 8)
	require.NoError(t, s.BeginCapture())
	require.NoError(t, Fill(s, b.Ptr(), 8, backend.Float32, 3))
	require.NoError(t, ScaleOffset(s, b.Ptr(), b.Ptr(), 8, backend.Float32, 2, 1))
	g, err := s.EndCapture()
	require.NoError(t, err)
	defer g.Close()
	require.Equal(t, []float32{0, 0, 0, 0, 0, 0, 0, 0}, read[float32](b, 8), "captured work must not run")
	require.NoError(t, g.Launch(s))
	require.Equal(t, []float32{7, 7, 7, 7, 7, 7, 7, 7}, read[float32](b, 8))

	// A captured CPU twin's error has no caller left: it goes to OnReplayError.
	var reported []string
	prev := OnReplayError
	OnReplayError = func(kernel string, err error) { reported = append(reported, kernel+": "+err.Error()) }
	defer func() { OnReplayError = prev }()
	RegisterHost("test_replay_failure", func(args ...any) error { return errors.New("late failure") })
	require.NoError(t, s.BeginCapture())
	require.NoError(t, LaunchByName(s, "test_replay_failure", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}))
	g2, err := s.EndCapture()
	require.NoError(t, err)
	defer g2.Close()
	require.NoError(t, g2.Launch(s))
	require.NoError(t, g2.Launch(s))
	require.Equal(t, []string{"test_replay_failure: late failure", "test_replay_failure: late failure"}, reported)
}

func TestSpinHost(t *testing.T) {
	s := newStream(t)
	start := time.Now()
	require.NoError(t, Spin(s, 20*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
}

func TestGrid1D(t *testing.T) {
	tests := []struct {
		n    int
		want uint32
	}{{1, 1}, {256, 1}, {257, 2}, {1 << 20, 4096}, {1 << 30, maxBlocks}}
	for _, tc := range tests {
		require.Equal(t, [3]uint32{tc.want, 1, 1}, grid1D(tc.n), "n=%d", tc.n)
	}
}

func TestHostKernelsSorted(t *testing.T) {
	names := HostKernels()
	require.True(t, sort.StringsAreSorted(names))
	require.Greater(t, len(names), 80)
	for _, n := range names {
		require.False(t, strings.Contains(n, "complex"), n)
	}
}

// TestPrepareChecksNames: Prepare refuses a name no embedded module
// defines on every backend, and has nothing to load off CUDA.
func TestPrepareChecksNames(t *testing.T) {
	for _, tc := range []struct {
		name  string
		dev   backend.Device
		names []string
		err   string
	}{
		{"cpu, format kernel", cpu.Default(), []string{"vortexgo_stack_i8_i8"}, ""},
		{"cpu, two modules", cpu.Default(), []string{"vortexgo_stack_f32_u16", "fill_float32"}, ""},
		{"no device", nil, []string{"vortexgo_radial_i8_i8"}, ""},
		{"nothing to prepare", cpu.Default(), nil, ""},
		{"unknown", cpu.Default(), []string{"fill_float32", "vortexgo_nope"}, `no kernel "vortexgo_nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Prepare(tc.dev, tc.names...)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, "ops.Prepare")
			require.ErrorContains(t, err, tc.err)
		})
	}
}
