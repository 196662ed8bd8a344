package endpoint

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// fakeStack records the operations a stream stack endpoint runs, with
// their data as uint64 values (the counter stream).
type fakeStack struct {
	mu    sync.Mutex
	shape [4]int
	dtype string
	open  bool
	ops   []string
	fail  error // returned by every write once set
}

func (f *fakeStack) VolumeShape() [4]int { return f.shape }
func (f *fakeStack) DTypeName() string   { return f.dtype }
func (f *fakeStack) IsOpen() bool        { return f.open }

func (f *fakeStack) record(op string, data []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	if f.dtype == "uint16" {
		f.ops = append(f.ops, fmt.Sprint(op, unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(data))), len(data)/2)))
		return nil
	}
	v := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(data))), len(data)/8)
	f.ops = append(f.ops, fmt.Sprint(op, v))
	return nil
}

// DType, VolumeBytes and WriteVolume make it a VolumeWriter (a uint16
// spectra stack for the device path).
func (f *fakeStack) DType() backend.DType { return backend.Uint16 }
func (f *fakeStack) VolumeBytes() int {
	if !f.open {
		return 0
	}
	return f.shape[0] * f.shape[1] * f.shape[2] * f.shape[3] * 2
}
func (f *fakeStack) WriteVolume([]byte) error {
	return errors.New("the endpoints write B-scans, not volumes")
}

func (f *fakeStack) WriteMultiBscan(index int, data []byte) error {
	return f.record(fmt.Sprintf("multi(%d)", index), data)
}

func (f *fakeStack) WritePartialBscan(bscan, ascan int, data []byte) error {
	return f.record(fmt.Sprintf("partial(%d,%d)", bscan, ascan), data)
}

func (f *fakeStack) AdvanceVolume(allocate bool) error {
	return f.record(fmt.Sprintf("advance(%v)", allocate), nil)
}

func (f *fakeStack) Ops() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.ops...)
}

func copyAction(off, count, seg, rec int, reverse bool) format.Action {
	return format.Action{Kind: format.Copy, BlockOffset: off, Count: count, BufferSegment: seg, BufferRecord: rec, Reverse: reverse}
}

func finishSegment(seg int) format.Action {
	return format.Action{Kind: format.FinishSegment, SegmentIndexBuffer: int64(seg)}
}

var finishVolume = format.Action{Kind: format.FinishVolume}

// counterBlock is block id of n records from sample (its counter stream:
// sample, sample+1, ...).
func counterBlock(id, sample int64, n int) *engine.BlockData {
	b := engine.NewStreamsBlock(id, engine.HostStreams{Strobes: make([]uint32, n)})
	return &engine.BlockData{Block: b, Records: n, Sample: sample}
}

// streamPlans are three blocks over a volume of 3 segments x 4 records:
// segment 2 is reversed, and the third block is a stop's: one copy into
// segment 0 of the next volume, then the planner's finish.
var streamPlans = []struct {
	sample  int64
	records int
	actions []format.Action
}{
	{0, 6, []format.Action{copyAction(0, 4, 0, 0, false), finishSegment(0), copyAction(4, 2, 1, 0, false)}},
	{6, 6, []format.Action{copyAction(0, 2, 1, 2, false), finishSegment(1), copyAction(2, 4, 2, 0, true), finishSegment(2), finishVolume}},
	{12, 2, []format.Action{copyAction(0, 2, 0, 0, false), finishSegment(0), finishVolume}},
}

// TestStreamStackStrategies: each buffer strategy runs vortex's storage
// operations (endpoint/storage.hpp stack_storage), including the stale
// records its buffers keep (Segment: the last segment formatted; Volume:
// the same segment of the previous volume).
func TestStreamStackStrategies(t *testing.T) {
	tests := []struct {
		strategy BufferStrategy
		want     []string
	}{
		{BufferBlock, []string{
			"partial(0,0)[0 1 2 3]", "partial(1,0)[4 5]",
			"partial(1,2)[6 7]", "partial(2,0)[11 10 9 8]", "advance(false)[]",
			"partial(0,0)[12 13]", "advance(false)[]"}},
		{BufferSegment, []string{
			"multi(0)[0 1 2 3]",
			"multi(1)[4 5 6 7]", "multi(2)[11 10 9 8]", "advance(false)[]",
			"multi(0)[12 13 9 8]", "advance(false)[]"}},
		{BufferVolume, []string{
			"multi(0)[0 1 2 3]",
			"multi(1)[4 5 6 7 11 10 9 8]", "advance(false)[]",
			"multi(0)[12 13 2 3]", "advance(false)[]"}},
	}
	for _, tc := range tests {
		t.Run(tc.strategy.String(), func(t *testing.T) {
			f := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint64", open: true}
			e, err := NewStreamStackEndpoint(StreamCounter, f, tc.strategy)
			require.NoError(t, err)
			require.NoError(t, e.Prepare(engine.EndpointInfo{Device: cpu.Default(), RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4}))
			require.NotNil(t, e.Stream())
			for i, p := range streamPlans {
				require.NoError(t, e.Format(counterBlock(int64(i), p.sample, p.records), &engine.FormatPlan{Actions: p.actions}))
			}
			require.NoError(t, e.Flush())
			require.Equal(t, tc.want, f.Ops())
			require.Equal(t, 2, e.Written(), "volumes advanced")
			require.NoError(t, e.Close())
		})
	}
}

// strategyOps are the operations of streamPlans by strategy.
var strategyOps = map[BufferStrategy][]string{
	BufferBlock: {
		"partial(0,0)[0 1 2 3]", "partial(1,0)[4 5]",
		"partial(1,2)[6 7]", "partial(2,0)[11 10 9 8]", "advance(false)[]",
		"partial(0,0)[12 13]", "advance(false)[]"},
	BufferSegment: {
		"multi(0)[0 1 2 3]",
		"multi(1)[4 5 6 7]", "multi(2)[11 10 9 8]", "advance(false)[]",
		"multi(0)[12 13 9 8]", "advance(false)[]"},
	BufferVolume: {
		"multi(0)[0 1 2 3]",
		"multi(1)[4 5 6 7 11 10 9 8]", "advance(false)[]",
		"multi(0)[12 13 2 3]", "advance(false)[]"},
}

// TestSpectraStackStrategies: the device path (raw spectra of one sample
// per record, the record's acquisition sample) runs the same operations
// as the host path for each strategy.
func TestSpectraStackStrategies(t *testing.T) {
	dev := cpu.Default()
	for _, strategy := range []BufferStrategy{BufferBlock, BufferSegment, BufferVolume} {
		t.Run(strategy.String(), func(t *testing.T) {
			f := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint16", open: true}
			e, err := NewSpectraStackEndpoint(f)
			require.NoError(t, err)
			require.NoError(t, e.SetBufferStrategy(strategy))
			require.NoError(t, e.Prepare(engine.EndpointInfo{Device: dev, RecordsPerBlock: 6, RawSamples: 1, OutputSamples: 1,
				SegmentsPerVolume: 3, RecordsPerSegment: 4}))
			raw := hostBuf(t, 12)
			ready, err := dev.NewEvent(false)
			require.NoError(t, err)
			defer func() { require.NoError(t, ready.Close()) }()
			for i, p := range streamPlans {
				for r := range p.records {
					hostView[uint16](raw.Ptr(), 6)[r] = uint16(p.sample) + uint16(r)
				}
				b := &engine.BlockData{Block: &engine.Block{ID: int64(i)}, Records: p.records, Sample: p.sample, Raw: raw.Ptr(),
					RawSamples: 1, OutputSamples: 1, Ready: ready}
				require.NoError(t, e.Format(b, &engine.FormatPlan{Actions: p.actions}))
				require.NoError(t, e.Flush(), "the raw buffer is reused: each block is stored before the next")
			}
			require.Equal(t, strategyOps[strategy], f.Ops())
			require.Equal(t, 2, e.Written())
			require.NoError(t, e.Close())
			require.Equal(t, 2, e.Written(), "still reported after Close")
		})
	}
}

// TestStreamStackSliceAndTransform: the executor's sample slice picks the
// stream's columns and its transform maps them (float64 galvo stream).
func TestStreamStackSliceAndTransform(t *testing.T) {
	src := streamSource{s: StreamGalvoTarget, slice: format.SimpleSlice(1, 3, 1),
		tf: format.SampleTransform{Linear: true, Scale: 2, Offset: 1}}
	h := engine.HostStreams{OutChannels: 3, Strobes: make([]uint32, 2), GalvoTarget: []float64{0, 1, 2, 10, 11, 12}}
	b := &engine.BlockData{Block: engine.NewStreamsBlock(0, h), Records: 2, Target: format.DevicePositions{Channels: 3}}
	require.NoError(t, src.load("x", b, 2))
	vol := newElems(2 * 2 * 8)
	a := copyAction(0, 2, 0, 0, true)
	require.NoError(t, src.place(vol, [3]int{1, 2, 2}, &a, 0, 0))
	require.Equal(t, []float64{23, 25, 3, 5}, viewAs[float64](vol), "reversed rows, columns 1..2, 2x+1")
	require.ErrorContains(t, src.load("x", b, 3), "expected 3", "the volume's samples must be the kept columns")
	src.slice = format.SimpleSlice(1, 5, 1)
	require.ErrorContains(t, src.load("x", b, 4), "sample_slice")
	require.Equal(t, uint32(0), castUnsigned[uint32](-3))
	require.Equal(t, ^uint32(0), castUnsigned[uint32](1e20))
	require.Equal(t, uint64(7), castUnsigned[uint64](7.9))
}

func TestStreamStackBadInput(t *testing.T) {
	open := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint64", open: true}
	_, err := NewStreamStackEndpoint(StreamStrobes, open, BufferVolume)
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.ErrorContains(t, err, "uint32")
	_, err = NewStreamStackEndpoint(StreamCounter, "a file", BufferVolume)
	require.ErrorContains(t, err, "expected a SimpleStack or HDF5Stack")
	_, err = NewStreamStackEndpoint(StreamCounter, open, BufferStrategy(7))
	require.ErrorContains(t, err, "buffer_strategy")
	_, err = ParseBufferStrategy("whole")
	require.ErrorContains(t, err, "Block, Segment or Volume")
	info := engine.EndpointInfo{Device: cpu.Default(), RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4}
	for _, tc := range []struct {
		name  string
		stack *fakeStack
		want  string
	}{
		{"closed", &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint64"}, "not open"},
		{"shape", &fakeStack{shape: [4]int{2, 4, 1, 1}, dtype: "uint64", open: true}, "expected (3, 4, columns, 1)"},
		{"channels", &fakeStack{shape: [4]int{3, 4, 1, 2}, dtype: "uint64", open: true}, "one channel"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewStreamStackEndpoint(StreamCounter, tc.stack, BufferVolume)
			require.NoError(t, err)
			err = e.Prepare(info)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
			require.Nil(t, e.Stream(), "nothing is left prepared")
			require.NoError(t, e.Close())
		})
	}
	// a counter stack sized for 2 columns: the first block names the mismatch
	wide := &fakeStack{shape: [4]int{3, 4, 2, 1}, dtype: "uint64", open: true}
	e, err := NewStreamStackEndpoint(StreamCounter, wide, BufferVolume)
	require.NoError(t, err)
	require.NoError(t, e.Prepare(info))
	err = e.Format(counterBlock(0, 0, 6), &engine.FormatPlan{Actions: streamPlans[0].actions})
	require.ErrorContains(t, err, "counter stream has 1 columns")
	require.NoError(t, e.Close())
}

// TestStreamStackFailedWrite: the first failed write reaches Fail once and
// every later Format returns it.
func TestStreamStackFailedWrite(t *testing.T) {
	f := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint64", open: true, fail: errors.New("disk full")}
	e, err := NewStreamStackEndpoint(StreamCounter, f, BufferBlock)
	require.NoError(t, err)
	var mu sync.Mutex
	var fails []error
	info := engine.EndpointInfo{Device: cpu.Default(), RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4,
		Fail: func(err error) { mu.Lock(); fails = append(fails, err); mu.Unlock() }}
	require.NoError(t, e.Prepare(info))
	require.NoError(t, e.Format(counterBlock(0, 0, 6), &engine.FormatPlan{Actions: streamPlans[0].actions}))
	require.ErrorContains(t, e.Flush(), "disk full")
	require.ErrorContains(t, e.Format(counterBlock(1, 6, 6), &engine.FormatPlan{Actions: streamPlans[1].actions}), "disk full")
	mu.Lock()
	require.Len(t, fails, 1)
	mu.Unlock()
	require.Error(t, e.Close())
}

// TestStreamStackSkipsClosedStorage: vortex writes nothing to a storage
// that is not ready (closed after Prepare here).
func TestStreamStackSkipsClosedStorage(t *testing.T) {
	f := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint64", open: true}
	e, err := NewStreamStackEndpoint(StreamCounter, f, BufferVolume)
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: cpu.Default(), RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4}))
	f.open = false
	for i, p := range streamPlans {
		require.NoError(t, e.Format(counterBlock(int64(i), p.sample, p.records), &engine.FormatPlan{Actions: p.actions}))
	}
	require.NoError(t, e.Flush())
	require.Empty(t, f.Ops())
	require.NoError(t, e.Close())
}

// TestStreamHostTensor: the counter tensor endpoint places the plan's
// copies (uint64 values in the float64 tensor's bits).
func TestStreamHostTensor(t *testing.T) {
	ex, err := format.NewStackFormatExecutor(format.StackFormatExecutorConfig{SampleSlice: format.NullSlice()})
	require.NoError(t, err)
	e, err := NewStreamHostTensorEndpoint(StreamCounter, ex, []int{3, 4, 1})
	require.NoError(t, err)
	require.NoError(t, e.Prepare(engine.EndpointInfo{Device: cpu.Default(), Owner: 1, RecordsPerBlock: 6, SegmentsPerVolume: 3, RecordsPerSegment: 4}))
	for i, p := range streamPlans[:2] {
		require.NoError(t, e.Format(counterBlock(int64(i), p.sample, p.records), &engine.FormatPlan{Actions: p.actions}))
	}
	got := hostView[uint64](e.Tensor().Ptr(), 12)
	require.Equal(t, []uint64{0, 1, 2, 3, 4, 5, 6, 7, 11, 10, 9, 8}, got)
	require.NoError(t, e.Close())
	for _, bad := range [][]int{nil, {3, 4}, {3, 0, 1}} {
		_, err := NewStreamHostTensorEndpoint(StreamCounter, nil, bad)
		require.ErrorIs(t, err, backend.ErrInvalid)
	}
	_, err = NewStreamHostTensorEndpoint(StreamStrobes, nil, []int{1, 1, 1})
	require.ErrorContains(t, err, "counter or galvo_actual")
}

// TestEndpointsSayWhatTheyRead: the engine asks every endpoint which of the
// block's device data it reads (engine.RawReader, ProcessedReader,
// PositionReader) to skip uploads and outputs nobody reads; a stream stack
// (host streams, no device volume) answers without touching a storage it
// does not have.
func TestEndpointsSayWhatTheyRead(t *testing.T) {
	f := &fakeStack{shape: [4]int{3, 4, 1, 1}, dtype: "uint64", open: true}
	streams, err := NewStreamStackEndpoint(StreamCounter, f, BufferVolume)
	require.NoError(t, err)
	i8, err := NewStackDeviceTensorEndpoint(backend.Int8)
	require.NoError(t, err)
	f32, err := NewStackDeviceTensorEndpoint(backend.Float32)
	require.NoError(t, err)
	spectra, err := NewSpectraStackDeviceTensorEndpoint()
	require.NoError(t, err)
	tests := []struct {
		name string
		ep   interface {
			ReadsRaw() bool
			ReadsProcessed() bool
		}
		raw, processed bool
	}{
		{"stream stack", streams, false, false},
		{"int8 volume", i8, false, false},
		{"float32 volume", f32, false, true},
		{"spectra volume", spectra, true, false},
		{"null", NewNullEndpoint(), false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.raw, tc.ep.ReadsRaw())
			require.Equal(t, tc.processed, tc.ep.ReadsProcessed())
		})
	}
}
