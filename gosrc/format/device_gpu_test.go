//go:build gpu

package format

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
)

// gpuRig keeps volumes and blocks in device memory, staged through CPU
// backend memory.
type gpuRig struct {
	dev  *cuda.Device
	s    *cuda.Stream
	bufs []backend.Buffer
}

func newGPURig(t *testing.T) *gpuRig {
	d, err := cuda.GetDevice(0)
	require.NoError(t, err, "the gpu tag needs a CUDA device")
	s, err := d.CreateStream(0)
	require.NoError(t, err)
	r := &gpuRig{dev: d, s: s}
	t.Cleanup(func() {
		_ = s.Synchronize()
		for _, b := range r.bufs {
			_ = b.Free()
		}
		_ = s.Close()
	})
	return r
}

func (r *gpuRig) stream() backend.Stream { return r.s }

func (r *gpuRig) staging(t *testing.T, n int) backend.Buffer {
	b, err := cpu.Default().Alloc(max(n, 1))
	require.NoError(t, err)
	r.bufs = append(r.bufs, b)
	return b
}

func (r *gpuRig) upload(t *testing.T, b []byte) uintptr {
	st := r.staging(t, len(b))
	copy(cpu.HostBytes(st.Ptr(), len(b)), b)
	g, err := r.dev.Alloc(max(len(b), 1))
	require.NoError(t, err)
	r.bufs = append(r.bufs, g)
	require.NoError(t, r.s.Copy(g.Ptr(), st.Ptr(), len(b)))
	// The staging buffer must outlive the copy: synchronize before it can
	// be reused (test setup, not a hot path).
	require.NoError(t, r.s.Synchronize())
	return g.Ptr()
}

func (r *gpuRig) download(t *testing.T, ptr uintptr, n int) []byte {
	st := r.staging(t, n)
	require.NoError(t, r.s.Copy(st.Ptr(), ptr, n))
	require.NoError(t, r.s.Synchronize())
	return append([]byte(nil), cpu.HostBytes(st.Ptr(), n)...)
}

// TestGPULaunchMatchesExecutors runs each executor's kernels on the GPU
// and requires the CPU executor's volume: exactly for stack and position;
// for radial and spiral up to 2% of pixels may differ, where CUDA's
// hypotf/atan2f and Go's libm round a boundary pixel's geometry apart.
func TestGPULaunchMatchesExecutors(t *testing.T) {
	for _, c := range deviceCases() {
		t.Run(c.name, func(t *testing.T) {
			host, dev, pixel, tol := c.run(t, newGPURig(t))
			require.Len(t, dev, len(host))
			if tol == 0 {
				require.Equal(t, host, dev)
				return
			}
			n := elementsDiffering(host, dev, pixel)
			far := pixelsApart(host, dev, pixel, c.dtype)
			t.Logf("%d of %d pixels differ, %d by more than float32 rounding", n, len(host)/pixel, far)
			require.LessOrEqual(t, far, tol, "pixels differing from the CPU executor")
		})
	}
}

// pixelsApart counts pixels with an element that differs by more than
// float32 rounding could explain (a relative 1e-4; integers must be equal):
// a float volume shows the last-bit differences of CUDA's hypotf/atan2f in
// the interpolation weight, which integer outputs round away.
func pixelsApart(a, b []byte, pixel int, dt backend.DType) int {
	n := 0
	for p := 0; p+pixel <= len(a); p += pixel {
		if dt != backend.Float32 {
			if string(a[p:p+pixel]) != string(b[p:p+pixel]) {
				n++
			}
			continue
		}
		x, y := fromBytes[float32](a[p:p+pixel]), fromBytes[float32](b[p:p+pixel])
		for i := range x {
			if math.Abs(float64(x[i]-y[i])) > 1e-4*math.Max(1, math.Abs(float64(x[i]))) {
				n++
				break
			}
		}
	}
	return n
}

// TestGPUGoldenEngine replays vortex's engine scenarios with every copy
// launched on the GPU, requiring vortex's volumes at each volume callback.
func TestGPUGoldenEngine(t *testing.T) {
	replayGoldenEngine(t, func(t *testing.T) rig { return newGPURig(t) })
}
