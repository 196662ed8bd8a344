package format

import (
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

// rig moves bytes to and from a backend's memory; the CPU rig is here, the
// CUDA one in device_gpu_test.go. The same cases run on both and compare
// the launched kernels with the CPU executors.
type rig interface {
	stream() backend.Stream
	upload(t *testing.T, b []byte) uintptr
	download(t *testing.T, ptr uintptr, n int) []byte
}

type cpuRig struct {
	s    backend.Stream
	bufs []backend.Buffer
}

func newCPURig(t *testing.T) *cpuRig {
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	r := &cpuRig{s: s}
	t.Cleanup(func() {
		for _, b := range r.bufs {
			_ = b.Free()
		}
		_ = s.Close()
	})
	return r
}

func (r *cpuRig) stream() backend.Stream { return r.s }

func (r *cpuRig) upload(t *testing.T, b []byte) uintptr {
	buf, err := cpu.Default().Alloc(max(len(b), 1))
	require.NoError(t, err)
	r.bufs = append(r.bufs, buf)
	copy(cpu.HostBytes(buf.Ptr(), len(b)), b)
	return buf.Ptr()
}

func (r *cpuRig) download(t *testing.T, ptr uintptr, n int) []byte {
	require.NoError(t, r.s.Synchronize())
	return append([]byte(nil), cpu.HostBytes(ptr, n)...)
}

func bytesOf[T Element | float64](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

func fromBytes[T Element](b []byte) []T {
	var z T
	out := make([]T, len(b)/int(unsafe.Sizeof(z)))
	copy(bytesOf(out), b)
	return out
}

func randBlock[S Element](rng *rand.Rand, records, samples, channels int) Block[S] {
	b := Block[S]{Records: records, Samples: samples, Channels: channels, Data: make([]S, records*samples*channels)}
	for i := range b.Data {
		b.Data[i] = S(rng.IntN(100))
	}
	return b
}

// deviceCase is one launch compared with the CPU executor.
type deviceCase struct {
	name string
	// dtype is the volume's element type.
	dtype backend.DType
	// run executes on the CPU (host) and through Launch (device), returning
	// both volumes' bytes, the bytes of one pixel (an A-scan) and the
	// count of pixels a geometric kernel may legitimately place
	// differently (libm's last bit on the GPU).
	run func(t *testing.T, r rig) (host, dev []byte, pixelBytes, tolerance int)
}

func stackCase[D, S Element](name string, cfg StackFormatExecutorConfig, channels int) deviceCase {
	return deviceCase{name: name, dtype: DTypeOf[D](), run: func(t *testing.T, r rig) ([]byte, []byte, int, int) {
		rng := rand.New(rand.NewPCG(3, 4))
		e, err := NewStackFormatExecutor(cfg)
		require.NoError(t, err)
		blk := randBlock[S](rng, 20, 8, channels)
		depth := 8
		if cfg.SampleSlice.Simple {
			depth = cfg.SampleSlice.Count()
		}
		vol := Volume[D]{Shape: [4]int{3, 12, depth, channels}, Data: make([]D, 3*12*depth*channels)}
		for i := range vol.Data {
			vol.Data[i] = D(i % 50)
		}
		dv := DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: DTypeOf[D](), Shape: vol.Shape}
		db := DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: DTypeOf[S](), Records: 20, Samples: 8, Channels: channels}
		for _, a := range []Action{copyAct(5, 0, 0, 2, false), copyAct(12, 5, 1, 0, true), copyAct(3, 17, 2, 9, false), copyAct(0, 20, 2, 0, true)} {
			require.NoError(t, ExecuteStack(e, vol, blk, a))
			require.NoError(t, e.Launch(r.stream(), dv, db, a))
		}
		return bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), 1, 0
	}}
}

// launchAllCase formats a plan with LaunchAll: a raster's copies into
// consecutive segments (one launch), a reversed copy and a copy after a gap
// (launches of their own), with a non-copy action between them, against
// ExecuteStack per action.
func launchAllCase[D, S Element](name string, cfg StackFormatExecutorConfig) deviceCase {
	return deviceCase{name: name, dtype: DTypeOf[D](), run: func(t *testing.T, r rig) ([]byte, []byte, int, int) {
		rng := rand.New(rand.NewPCG(7, 8))
		e, err := NewStackFormatExecutor(cfg)
		require.NoError(t, err)
		blk := randBlock[S](rng, 40, 8, 1)
		vol := Volume[D]{Shape: [4]int{3, 12, 8, 1}, Data: make([]D, 3*12*8)}
		dv := DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: DTypeOf[D](), Shape: vol.Shape}
		db := DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: DTypeOf[S](), Records: 40, Samples: 8, Channels: 1}
		acts := []Action{copyAct(12, 0, 0, 0, false), segAct(0, 0, 0, 0), copyAct(12, 12, 1, 0, false),
			copyAct(4, 24, 2, 0, false), copyAct(5, 28, 2, 6, true), copyAct(3, 35, 0, 9, false)}
		runs, err := e.stackRuns(vol.Shape, db, acts, nil)
		require.NoError(t, err)
		require.Len(t, runs, 3, "the first three copies are one run")
		for _, a := range acts {
			if a.Kind == Copy {
				require.NoError(t, ExecuteStack(e, vol, blk, a))
			}
		}
		require.NoError(t, e.LaunchAll(r.stream(), dv, db, acts))
		return bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), 1, 0
	}}
}

func radialCfg() RadialFormatExecutorConfig {
	return RadialFormatExecutorConfig{
		VolumeXYExtent:  [2]Range{{-1, 1}, {-1.2, 1.2}},
		SegmentRTExtent: [2]Range{{-1, 1}, {0, math.Pi}},
		RadialShape:     [2]int{6, 24},
	}
}

func radialCase[D, S Element](name string, cfg RadialFormatExecutorConfig) deviceCase {
	return deviceCase{name: name, dtype: DTypeOf[D](), run: func(t *testing.T, r rig) ([]byte, []byte, int, int) {
		rng := rand.New(rand.NewPCG(5, 6))
		e, err := NewRadialFormatExecutor(cfg)
		require.NoError(t, err)
		blk := randBlock[S](rng, 60, 6, 1)
		depth := 6
		if cfg.SampleSlice.Simple {
			depth = cfg.SampleSlice.Count()
		}
		vol := Volume[D]{Shape: [4]int{40, 36, depth, 1}, Data: make([]D, 40*36*depth)}
		dv := DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: DTypeOf[D](), Shape: vol.Shape}
		db := DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: DTypeOf[S](), Records: 60, Samples: 6, Channels: 1}
		for _, a := range []Action{copyAct(24, 0, 0, 0, false), copyAct(24, 24, 1, 0, true), copyAct(10, 48, 3, 4, false), copyAct(2, 58, 3, 14, true)} {
			require.NoError(t, ExecuteRadial(e, vol, blk, a))
			require.NoError(t, e.Launch(r.stream(), dv, db, a))
		}
		return bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), depth * DTypeOf[D]().Size(), 40 * 36 / 50
	}}
}

func spiralCase[D, S Element](name string) deviceCase {
	return deviceCase{name: name, dtype: DTypeOf[D](), run: func(t *testing.T, r rig) ([]byte, []byte, int, int) {
		rng := rand.New(rand.NewPCG(7, 8))
		e, err := NewSpiralFormatExecutor(SpiralFormatExecutorConfig{
			VolumeXYExtent: [2]Range{{-1, 1}, {-1, 1}}, SegmentExtent: Range{0, 1},
			SpiralShape: [2]int{5, 200}, SpiralVelocity: 2 * math.Pi,
		})
		require.NoError(t, err)
		blk := randBlock[S](rng, 200, 4, 1)
		vol := Volume[D]{Shape: [4]int{32, 32, 4, 1}, Data: make([]D, 32*32*4)}
		dv := DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: DTypeOf[D](), Shape: vol.Shape}
		db := DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: DTypeOf[S](), Records: 200, Samples: 4, Channels: 1}
		for _, a := range []Action{copyAct(90, 0, 0, 0, false), copyAct(110, 90, 0, 90, false)} {
			require.NoError(t, ExecuteSpiral(e, vol, blk, a))
			require.NoError(t, e.Launch(r.stream(), dv, db, a))
		}
		return bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), 4 * DTypeOf[D]().Size(), 32 * 32 / 50
	}}
}

func positionCase[D, S Element](name string, useTarget bool) deviceCase {
	return deviceCase{name: name, dtype: DTypeOf[D](), run: func(t *testing.T, r rig) ([]byte, []byte, int, int) {
		rng := rand.New(rand.NewPCG(9, 10))
		cfg := DefaultPositionFormatExecutorConfig()
		cfg.Set([2]float64{10, 10}, [2]float64{8.5, 8.5}, 0.1)
		cfg.UseTargetPosition = useTarget
		cfg.Channels = [2]int{2, 0}
		cfg.SampleTransform = LinearTransform(1.5, -2)
		e, err := NewPositionFormatExecutor(cfg)
		require.NoError(t, err)
		const n = 30
		blk := randBlock[S](rng, n, 5, 1)
		// Distinct pixels (a 6x5 lattice, some outside the volume), so no
		// two records race for one pixel on the GPU.
		mk := func(shift float64) Positions {
			p := Positions{Records: n, Channels: 3, Data: make([]float64, 3*n)}
			for j := range n {
				p.Data[3*j+2] = (float64(j%6)*2.3-4.1)*0.1 + shift
				p.Data[3*j+0] = (float64(j/6)*2.7-5.2)*0.1 - shift
			}
			return p
		}
		target, actual := mk(0), mk(0.013)
		// An unknown position is dropped on both backends.
		target.Data[3*7], actual.Data[3*7+2] = math.NaN(), math.NaN()
		vol := Volume[D]{Shape: [4]int{17, 15, 5, 1}, Data: make([]D, 17*15*5)}
		dv := DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: DTypeOf[D](), Shape: vol.Shape}
		db := DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: DTypeOf[S](), Records: n, Samples: 5, Channels: 1}
		dt := DevicePositions{Ptr: r.upload(t, bytesOf(target.Data)), Records: n, Channels: 3}
		da := DevicePositions{Ptr: r.upload(t, bytesOf(actual.Data)), Records: n, Channels: 3}
		for _, a := range []Action{copyAct(11, 0, 0, 0, false), copyAct(19, 11, 1, 0, true)} {
			require.NoError(t, ExecutePosition(e, vol, blk, target, actual, a))
			require.NoError(t, e.Launch(r.stream(), dv, db, dt, da, a))
		}
		return bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), 1, 0
	}}
}

func deviceCases() []deviceCase {
	sliced := StackFormatExecutorConfig{SampleSlice: SimpleSlice(1, 8, 2), SampleTransform: LinearTransform(2.5, -30)}
	rc := radialCfg()
	rcT := radialCfg()
	rcT.SampleSlice = SimpleSlice(1, 6, 2)
	rcT.SampleTransform = LinearTransform(-1.7, 40)
	return []deviceCase{
		stackCase[uint16, uint16]("stack u16>u16", StackFormatExecutorConfig{}, 1),
		stackCase[float32, float32]("stack f32>f32 two channels", StackFormatExecutorConfig{}, 2),
		stackCase[int8, float32]("stack f32>i8 slice transform", sliced, 1),
		stackCase[float32, int8]("stack i8>f32 slice transform two channels", sliced, 2),
		stackCase[uint16, float32]("stack f32>u16 saturating", StackFormatExecutorConfig{SampleTransform: LinearTransform(1000, -20000)}, 1),
		launchAllCase[int8, int8]("stack LaunchAll i8>i8", StackFormatExecutorConfig{}),
		launchAllCase[float32, uint16]("stack LaunchAll u16>f32 slice", StackFormatExecutorConfig{SampleSlice: SimpleSlice(0, 8, 1)}),
		radialCase[uint16, uint16]("radial u16>u16", rc),
		radialCase[int8, float32]("radial f32>i8 slice transform", rcT),
		radialCase[float32, int8]("radial i8>f32", rc),
		spiralCase[uint16, uint16]("spiral u16>u16"),
		spiralCase[float32, float32]("spiral f32>f32"),
		positionCase[float32, int8]("position i8>f32 target", true),
		positionCase[uint16, uint16]("position u16>u16 actual", false),
	}
}

// elementsDiffering counts the size-byte elements (pixels) that differ.
func elementsDiffering(a, b []byte, size int) int {
	n := 0
	for i := 0; i+size <= len(a); i += size {
		if string(a[i:i+size]) != string(b[i:i+size]) {
			n++
		}
	}
	return n
}

// TestLaunchMatchesExecutorsOnCPU runs each Launch on the CPU backend
// (the kernels' Go twins) and requires the CPU executor's bytes exactly.
func TestLaunchMatchesExecutorsOnCPU(t *testing.T) {
	for _, c := range deviceCases() {
		t.Run(c.name, func(t *testing.T) {
			host, dev, _, _ := c.run(t, newCPURig(t))
			require.NotEqual(t, make([]byte, len(host)), host, "the case writes something")
			require.Equal(t, host, dev)
		})
	}
}

func TestLaunchBadInput(t *testing.T) {
	r := newCPURig(t)
	e, err := NewStackFormatExecutor(StackFormatExecutorConfig{})
	require.NoError(t, err)
	vol := DeviceVolume{Ptr: r.upload(t, make([]byte, 2*4*8*2)), DType: backend.Uint16, Shape: [4]int{2, 4, 8, 1}}
	blk := DeviceBlock{Ptr: r.upload(t, make([]byte, 4*8*2)), DType: backend.Uint16, Records: 4, Samples: 8, Channels: 1}
	cases := []struct {
		name string
		vol  DeviceVolume
		blk  DeviceBlock
		a    Action
		msg  string
	}{
		{"type pair", vol, DeviceBlock{Ptr: blk.Ptr, DType: backend.Int32, Records: 4, Samples: 8, Channels: 1}, copyAct(1, 0, 0, 0, false), "block int32 to volume uint16"},
		{"not a copy", vol, blk, segAct(0, 0, 0, 0), "action FinishSegment, expected a Copy"},
		{"past the block", vol, blk, copyAct(3, 2, 0, 0, false), "block_offset=2 count=3"},
		{"past the segment", vol, blk, copyAct(2, 0, 0, 3, false), "buffer_record=3 count=2"},
		{"segment out of range", vol, blk, copyAct(1, 0, 2, 0, false), "buffer_segment=2"},
		{"null volume", DeviceVolume{Shape: vol.Shape, DType: backend.Uint16}, blk, copyAct(1, 0, 0, 0, false), "volume pointer is 0"},
		{"sample mismatch", DeviceVolume{Ptr: vol.Ptr, DType: backend.Uint16, Shape: [4]int{2, 4, 7, 1}}, blk, copyAct(1, 0, 0, 0, false), "volume samples x channels 7 x 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := e.Launch(r.stream(), c.vol, c.blk, c.a)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, c.msg)
			if c.a.Kind != Copy {
				return // LaunchAll skips the plan's other actions
			}
			// LaunchAll checks every action first: a good copy before the
			// bad one writes nothing either.
			err = e.LaunchAll(r.stream(), c.vol, c.blk, []Action{copyAct(1, 0, 0, 0, false), c.a})
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, c.msg)
			require.Equal(t, make([]byte, 2*4*8*2), r.download(t, vol.Ptr, 2*4*8*2), "nothing written")
		})
	}
}

// TestLaunchAllMatchesExecuteStackRandom: random plans (raster runs that
// merge, reversed copies, gaps, overlapping destinations, non-copy actions
// between) give, through LaunchAll, the volume ExecuteStack gives action
// by action: merging changes the launches, never the result.
func TestLaunchAllMatchesExecuteStackRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	e, err := NewStackFormatExecutor(StackFormatExecutorConfig{})
	require.NoError(t, err)
	const segs, recs, samples = 4, 8, 3
	merged := 0 // copies that joined the run before them, over all trials
	for trial := range 200 {
		r := newCPURig(t)
		records := 1 + rng.IntN(40)
		blk := randBlock[uint16](rng, records, samples, 1)
		vol := Volume[uint16]{Shape: [4]int{segs, recs, samples, 1}, Data: make([]uint16, segs*recs*samples)}
		dv := DeviceVolume{Ptr: r.upload(t, bytesOf(vol.Data)), DType: backend.Uint16, Shape: vol.Shape}
		db := DeviceBlock{Ptr: r.upload(t, bytesOf(blk.Data)), DType: backend.Uint16, Records: records, Samples: samples, Channels: 1}
		var acts []Action
		off := 0
		for off < records && len(acts) < 12 {
			if rng.IntN(4) == 0 {
				acts = append(acts, segAct(0, 0, 0, int64(rng.IntN(segs))))
				continue
			}
			seg, rec := rng.IntN(segs), rng.IntN(recs)
			if n := len(acts); n > 0 && acts[n-1].Kind == Copy && rng.IntN(2) == 0 {
				// continue the previous copy in the volume: a run to merge
				p := acts[n-1]
				seg, rec = p.BufferSegment, p.BufferRecord+p.Count
				if rec == recs {
					seg, rec = seg+1, 0
				}
				if seg == segs {
					seg = 0
				}
			}
			count := min(1+rng.IntN(recs-rec), records-off)
			acts = append(acts, copyAct(count, off, seg, rec, rng.IntN(5) == 0))
			off += count
			if rng.IntN(6) == 0 {
				off += rng.IntN(3) // a gap in the block
			}
		}
		for _, a := range acts {
			if a.Kind == Copy {
				require.NoError(t, ExecuteStack(e, vol, blk, a), "trial %d", trial)
			}
		}
		require.NoError(t, e.LaunchAll(r.stream(), dv, db, acts), "trial %d", trial)
		require.Equal(t, bytesOf(vol.Data), r.download(t, dv.Ptr, len(bytesOf(vol.Data))), "trial %d: %v", trial, acts)
		runs, err := e.stackRuns(vol.Shape, db, acts, nil)
		require.NoError(t, err)
		copies := 0
		for _, a := range acts {
			if a.Kind == Copy && a.Count > 0 {
				copies++
			}
		}
		merged += copies - len(runs)
	}
	require.Greater(t, merged, 50, "the plans exercise merging")
}

// TestPrepareNamesEachExecutorsKernel: Prepare resolves the kernel of each
// executor and type pair Launch accepts, and refuses what Launch refuses.
func TestPrepareNamesEachExecutorsKernel(t *testing.T) {
	for _, tc := range []struct {
		name     string
		exec     any
		src, dst backend.DType
		err      string
	}{
		{"default stack", nil, backend.Int8, backend.Int8, ""},
		{"stack", &StackFormatExecutor{}, backend.Float32, backend.Uint16, ""},
		{"radial", &RadialFormatExecutor{}, backend.Uint16, backend.Float32, ""},
		{"spiral", &SpiralFormatExecutor{}, backend.Float32, backend.Float32, ""},
		{"position", &PositionFormatExecutor{}, backend.Int8, backend.Float32, ""},
		{"type pair", &StackFormatExecutor{}, backend.Uint16, backend.Int8, "block uint16 to volume int8"},
		{"executor", "stack", backend.Int8, backend.Int8, "executor string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Prepare(cpu.Default(), tc.exec, tc.src, tc.dst)
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.err)
		})
	}
}
