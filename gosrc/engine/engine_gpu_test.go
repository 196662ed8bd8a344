//go:build gpu

package engine_test

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cuda"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/ops"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// castProc is a GPU processor for tests: float32 = raw, int8 = raw
// saturated (ops.Cast), so outputs are predictable from rawValue.
type castProc struct{ samples int }

func (p *castProc) Prepare() error     { return nil }
func (p *castProc) OutputSamples() int { return p.samples }
func (p *castProc) Close() error       { return nil }
func (p *castProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	n := records * p.samples
	if err := ops.Cast(s, out, backend.Float32, in, backend.Uint16, n); err != nil {
		return err
	}
	return ops.Cast(s, out8, backend.Int8, in, backend.Uint16, n)
}

func gpuDevice(t *testing.T) *cuda.Device {
	d, err := cuda.GetDevice(0)
	require.NoError(t, err)
	return d
}

// download copies n bytes of device memory to the host.
func download(t *testing.T, dev *cuda.Device, ptr uintptr, n int) []byte {
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	defer s.Close()
	h, err := dev.AllocPinned(n)
	require.NoError(t, err)
	defer h.Free()
	require.NoError(t, s.Copy(h.Ptr(), ptr, n))
	require.NoError(t, s.Synchronize())
	return append([]byte(nil), hostSlice[byte](h.Ptr(), n)...)
}

func TestGPUEngineFormatsAndStores(t *testing.T) {
	dev := gpuDevice(t)
	const samples = 64
	scan := raster{AscansPerBscan: 32, BscansPerVolume: 8, Bidirectional: true, Volumes: 5}
	depth := 32
	tests := []struct {
		name    string
		dtype   backend.DType
		timings bool // Config.DeviceTimings
	}{
		{"float32 (kernel for reversed lines, Copy2D for forward)", backend.Float32, true},
		{"uint16 (cast kernel), no device timings", backend.Uint16, false},
		{"int8", backend.Int8, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := endpoint.NewStackDeviceTensorEndpoint(tc.dtype)
			require.NoError(t, err)
			require.NoError(t, ep.SetExecutor(sliced(t, 4, 36), nil))
			defer func() { require.NoError(t, ep.Close()) }()
			path := filepath.Join(t.TempDir(), "gpu.npy")
			stack, err := storage.NewSimpleStack(tc.dtype)
			require.NoError(t, err)
			require.NoError(t, stack.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{8, 32, depth}, Header: storage.HeaderNumPy}))
			sep, err := endpoint.NewAscanStackEndpoint(stack)
			require.NoError(t, err)
			require.NoError(t, sep.SetExecutor(sliced(t, 4, 36)))
			defer func() { require.NoError(t, sep.Close()) }()

			acq, proc := newFakeAcq(samples), &castProc{samples: samples}
			f, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
			require.NoError(t, err)
			cfg := engine.Config{RecordsPerBlock: 100, BlocksToAllocate: 6, PreloadCount: 2, DeviceTimings: tc.timings}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, f)
			cfg.AddFormatter(f, ep, sep)
			e, err := engine.New(cfg, dev)
			require.NoError(t, err)
			defer func() { require.NoError(t, e.Close()) }()
			queueRaster(t, e, scan)
			require.NoError(t, e.Prepare())
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.True(t, e.WaitFor(30*time.Second))
			require.NoError(t, e.Err())
			evs := d.wait(t)
			require.Equal(t, 5, count(evs, engine.EventVolume, 0))
			require.Equal(t, 5, count(evs, engine.EventVolume, 1))
			require.Equal(t, 5, sep.Written())
			require.NoError(t, stack.Close())

			check := func(vol int, data []byte, what string) {
				es := tc.dtype.Size()
				for b := range 8 {
					for a := range 32 {
						for s := range depth {
							i := ((b*32+a)*depth + s) * es
							want := expected(scan, vol, b, a, s+4)
							switch tc.dtype {
							case backend.Float32:
								require.Equal(t, float32(want), hostFloat(data[i:]), "%s b%d a%d s%d", what, b, a, s)
							case backend.Uint16:
								require.Equal(t, want, binary.LittleEndian.Uint16(data[i:]), "%s b%d a%d s%d", what, b, a, s)
							case backend.Int8:
								require.Equal(t, int8(min(want, 127)), int8(data[i]), "%s b%d a%d s%d", what, b, a, s)
							}
						}
					}
				}
			}
			volBytes := 8 * 32 * depth * tc.dtype.Size()
			check(4, download(t, dev, ep.Tensor().Ptr(), volBytes), "tensor")
			shape, data := readNPY(t, path)
			require.Equal(t, []int{5, 8, 32, depth}, shape)
			for v := range 5 {
				check(v, data[v*volBytes:(v+1)*volBytes], "file")
			}
			sum := e.Timings()
			if !tc.timings {
				require.Zero(t, sum.Process.Count, "no timestamped events without DeviceTimings")
				require.Zero(t, sum.Upload.Count, "no timestamped events without DeviceTimings")
				return
			}
			// One block of the pool in four is timed on a GPU (timingEvery).
			require.Positive(t, sum.Process.Count, "timed blocks")
			require.Less(t, int64(sum.Process.Count), e.Status().BlocksFormatted, "only a sample of the blocks is timed")
			t.Logf("%s: process p50 %.3f ms, format p50 %.3f ms over %d blocks", tc.dtype, sum.Process.P50, sum.Format.P50, sum.Process.Count)
		})
	}
}

func hostFloat(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) }
