//go:build gpu

package ops

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// These tests run each kernel on the GPU and its CPU twin on the CPU
// backend over the same inputs and require equal outputs.

var allTypes = []backend.DType{backend.Int8, backend.Uint8, backend.Int16, backend.Uint16,
	backend.Int32, backend.Uint32, backend.Float32, backend.Float64}

// testValues are inputs that exercise rounding, ties, saturation and NaN.
var testValues = []float64{0, 1, -1, 0.5, 1.5, 2.5, -2.5, 126.6, 127.5, -128.5, 255.5, 300, -300,
	32767.5, 65535.4, 70000, 2147483647, -2147483649, 4294967295.6, 1e10, -1e10, 3.14159, math.NaN(),
	math.Inf(1), math.Inf(-1), 1e-3}

type rig struct {
	dev  *cuda.Device
	gs   *cuda.Stream
	hs   backend.Stream
	n    int
	tmp  *cuda.Buffer // pinned staging
	bufs []backend.Buffer
}

func newRig(t *testing.T, n int) *rig {
	d, err := cuda.GetDevice(0)
	require.NoError(t, err)
	gs, err := d.CreateStream(0)
	require.NoError(t, err)
	hs, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	tmp, err := d.MallocHost(8 * n)
	require.NoError(t, err)
	r := &rig{dev: d, gs: gs, hs: hs, n: n, tmp: tmp}
	t.Cleanup(func() {
		for _, b := range r.bufs {
			_ = b.Free()
		}
		_ = tmp.Free()
		_ = gs.Close()
		_ = hs.Close()
	})
	return r
}

// pair allocates a GPU and a CPU buffer of n elements of dt holding the
// test values converted to dt (by the CPU fill twin's rules).
func (r *rig) pair(t *testing.T, dt backend.DType) (g, h backend.Buffer) {
	g, err := r.dev.Alloc(dt.Size() * r.n)
	require.NoError(t, err)
	h, err = cpu.Default().Alloc(dt.Size() * r.n)
	require.NoError(t, err)
	r.bufs = append(r.bufs, g, h)
	// Fill the CPU buffer element by element, then upload the same bytes.
	for i := 0; i < r.n; i++ {
		v := testValues[i%len(testValues)]
		require.NoError(t, Fill(r.hs, h.Ptr()+uintptr(i*dt.Size()), 1, dt, v))
	}
	require.NoError(t, r.gs.Copy(g.Ptr(), h.Ptr(), dt.Size()*r.n))
	require.NoError(t, r.gs.Synchronize())
	return g, h
}

// requireSame downloads g and compares it with h byte for byte.
func (r *rig) requireSame(t *testing.T, g, h backend.Buffer, dt backend.DType, what string) {
	n := dt.Size() * r.n
	require.NoError(t, r.gs.Copy(r.tmp.Ptr(), g.Ptr(), n))
	require.NoError(t, r.gs.Synchronize())
	got := cpu.HostBytes(r.tmp.Ptr(), n)
	want := cpu.HostBytes(h.Ptr(), n)
	if dt == backend.Float32 || dt == backend.Float64 {
		// NaN payloads differ by design (CUDA's canonical NaN is 0x7fffffff,
		// Go's 0x7fc00000): compare NaN-ness, and every other value bit for bit.
		canonNaN(got, dt)
		canonNaN(want, dt)
	}
	require.Equal(t, want, got, "%s: GPU and CPU results differ", what)
}

func TestGPUMatchesCPU(t *testing.T) {
	r := newRig(t, 3*len(testValues))
	for _, dt := range allTypes {
		t.Run("fill_"+dt.String(), func(t *testing.T) {
			for _, v := range []float64{-1e9, -2.5, 0.5, 3.5, 1e9, math.NaN()} {
				g, h := r.pair(t, dt)
				require.NoError(t, Fill(r.gs, g.Ptr(), r.n, dt, v))
				require.NoError(t, Fill(r.hs, h.Ptr(), r.n, dt, v))
				r.requireSame(t, g, h, dt, fmt.Sprintf("fill %v", v))
			}
		})
		t.Run("scale_offset_"+dt.String(), func(t *testing.T) {
			g, h := r.pair(t, dt)
			require.NoError(t, ScaleOffset(r.gs, g.Ptr(), g.Ptr(), r.n, dt, 1.75, -3.25))
			require.NoError(t, ScaleOffset(r.hs, h.Ptr(), h.Ptr(), r.n, dt, 1.75, -3.25))
			r.requireSame(t, g, h, dt, "scale_offset")
		})
		for _, dst := range allTypes {
			t.Run(fmt.Sprintf("cast_%s_%s", dt, dst), func(t *testing.T) {
				gs, hs := r.pair(t, dt)
				gd, hd := r.pair(t, dst)
				require.NoError(t, Cast(r.gs, gd.Ptr(), dst, gs.Ptr(), dt, r.n))
				require.NoError(t, Cast(r.hs, hd.Ptr(), dst, hs.Ptr(), dt, r.n))
				r.requireSame(t, gd, hd, dst, "cast")
			})
		}
	}
}

func TestGPULargeFill(t *testing.T) {
	// More elements than one grid covers: the grid-stride loop must reach all.
	d, err := cuda.GetDevice(0)
	require.NoError(t, err)
	s, err := d.CreateStream(0)
	require.NoError(t, err)
	defer s.Close()
	const n = maxBlocks*blockSize*3 + 17
	g, err := d.Alloc(n)
	require.NoError(t, err)
	defer g.Free()
	h, err := d.AllocPinned(n)
	require.NoError(t, err)
	defer h.Free()
	require.NoError(t, Fill(s, g.Ptr(), n, backend.Uint8, 9))
	require.NoError(t, s.Copy(h.Ptr(), g.Ptr(), n))
	require.NoError(t, s.Synchronize())
	for i, v := range cpu.HostBytes(h.Ptr(), n) {
		if v != 9 {
			t.Fatalf("byte %d = %d, expected 9", i, v)
		}
	}
}

func TestGPUSpinAndLaunchByName(t *testing.T) {
	d, err := cuda.GetDevice(0)
	require.NoError(t, err)
	s, err := d.CreateStream(0)
	require.NoError(t, err)
	defer s.Close()
	a, _ := d.CreateEvent(true)
	b, _ := d.CreateEvent(true)
	defer a.Close()
	defer b.Close()
	require.NoError(t, s.Record(a))
	require.NoError(t, Spin(s, 20*time.Millisecond))
	require.NoError(t, s.Record(b))
	require.NoError(t, b.Synchronize())
	ms, err := a.ElapsedTime(b)
	require.NoError(t, err)
	require.InDelta(t, 20, ms, 5)

	err = LaunchByName(s, "no_such_kernel", [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1})
	require.ErrorContains(t, err, `no kernel "no_such_kernel" in the embedded modules`)
}

func BenchmarkLaunchByName(b *testing.B) {
	d, err := cuda.GetDevice(0)
	require.NoError(b, err)
	s, err := d.CreateStream(0)
	require.NoError(b, err)
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := Spin(s, 0); err != nil {
			b.Fatal(err)
		}
	}
	_ = s.Synchronize()
}

// canonNaN rewrites every NaN in b (of float type dt) to one bit pattern.
func canonNaN(b []byte, dt backend.DType) {
	switch dt {
	case backend.Float32:
		for i := 0; i+4 <= len(b); i += 4 {
			if math.IsNaN(float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))) {
				binary.LittleEndian.PutUint32(b[i:], 0x7fc00000)
			}
		}
	case backend.Float64:
		for i := 0; i+8 <= len(b); i += 8 {
			if math.IsNaN(math.Float64frombits(binary.LittleEndian.Uint64(b[i:]))) {
				binary.LittleEndian.PutUint64(b[i:], 0x7ff8000000000000)
			}
		}
	}
}

// TestGPUPrepareLoadsTheModule: Prepare compiles the module that defines a
// kernel and resolves the kernel, so that LaunchByName finds it cached.
func TestGPUPrepareLoadsTheModule(t *testing.T) {
	dev, err := cuda.GetDevice(0)
	require.NoError(t, err)
	require.NoError(t, Prepare(dev, "vortexgo_stack_u16_u16", "fill_int8"))
	require.True(t, dev.Loaded("kernels/format"))
	require.True(t, dev.Loaded("kernels/elementwise"))
	v, ok := cudaFns.Load(dev)
	require.True(t, ok)
	dk := v.(*deviceKernels)
	dk.mu.RLock()
	defer dk.mu.RUnlock()
	require.Contains(t, dk.fns, "vortexgo_stack_u16_u16")
	require.Contains(t, dk.fns, "fill_int8")
	require.ErrorContains(t, Prepare(dev, "vortexgo_nope"), `no kernel "vortexgo_nope"`)
}

func TestGPUUnpackBitsMatchesCPU(t *testing.T) {
	const n = 100_003 // a tail after the packing groups, and many grid strides' worth
	r := newRig(t, n)
	for _, bits := range []int{8, 10, 12, 16} {
		t.Run(fmt.Sprintf("bits=%d", bits), func(t *testing.T) {
			nb := PackedBytes(n, bits)
			packed := make([]byte, nb)
			for i := range packed {
				packed[i] = byte(i*131 + i>>7)
			}
			hsrc, err := cpu.Default().Alloc(nb)
			require.NoError(t, err)
			hdst, err := cpu.Default().Alloc(2 * n)
			require.NoError(t, err)
			gsrc, err := r.dev.Alloc(nb)
			require.NoError(t, err)
			gdst, err := r.dev.Alloc(2 * n)
			require.NoError(t, err)
			r.bufs = append(r.bufs, hsrc, hdst, gsrc, gdst)
			copy(cpu.HostBytes(hsrc.Ptr(), nb), packed)
			require.NoError(t, r.gs.Copy(gsrc.Ptr(), hsrc.Ptr(), nb))
			require.NoError(t, UnpackBits(r.gs, gdst.Ptr(), gsrc.Ptr(), n, bits, nb))
			require.NoError(t, UnpackBits(r.hs, hdst.Ptr(), hsrc.Ptr(), n, bits, nb))
			require.NoError(t, r.hs.Synchronize())
			r.requireSame(t, gdst, hdst, backend.Uint16, "unpack_bits_u16")
		})
	}
}
