//go:build gpu

package engine_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// TestGPUGenerateRadialAndSpiralEndToEnd runs the raster, radial and
// spiral scans through the engine on the GPU (the scan queue, the planner,
// the executors' kernels on the endpoint's stream) into device tensor
// endpoints and compares each volume with the CPU executor's.
func TestGPUGenerateRadialAndSpiralEndToEnd(t *testing.T) {
	const samples = 8
	dev := gpuDevice(t)
	for _, tc := range genCases() {
		t.Run(tc.name, func(t *testing.T) {
			_, markers, n := reference(t, tc.scan(t), 7, tc.records)
			segments, records := shapeOf(markers)
			plannerCfg := format.DefaultFormatPlannerConfig(segments, records)
			exec, shape := tc.exec(t, segments, records)
			planner, err := format.NewFormatPlanner(plannerCfg)
			require.NoError(t, err)
			ep, err := endpoint.NewStackDeviceTensorEndpoint(backend.Float32)
			require.NoError(t, err)
			require.NoError(t, ep.SetExecutor(exec, shape))
			closeEndpoint(t, ep)
			acq, proc := newFakeAcq(samples), &castProc{samples: samples}
			cfg := engine.Config{RecordsPerBlock: tc.records, BlocksToAllocate: 4, PreloadCount: 2}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner, ep)
			e, err := engine.New(cfg, dev)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			require.NoError(t, e.ScanQueue().Append(tc.scan(t), nil, marker.NewScanBoundary(0, 7, 0)))
			require.NoError(t, e.Prepare())
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())

			vshape := ep.Tensor().Shape()
			want := expectVolume(t, exec, plannerCfg, markers, n, tc.records, samples, [4]int{vshape[0], vshape[1], vshape[2], 1})
			raw := download(t, dev, ep.Tensor().Ptr(), 4*len(want))
			for i, w := range want {
				g := math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
				require.InDelta(t, w, g, 1e-3*math.Max(1, math.Abs(float64(w))), "element %d", i)
			}
		})
	}
}
