package endpoint

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// blockRig is one block's buffers on the CPU backend, filled with known
// values: raw spectra i*10+s, processed A-scans i+s/10, int8 i*4+s,
// positions (i, -i).
type blockRig struct {
	dev                 backend.Device
	raw, proc, i8, tgt  backend.Buffer
	ready               backend.Event
	records, raws, outs int
}

func newBlockRig(t *testing.T, records, raws, outs int) *blockRig {
	t.Helper()
	r := &blockRig{dev: cpu.Default(), records: records, raws: raws, outs: outs}
	alloc := func(n int) backend.Buffer {
		b, err := r.dev.Alloc(n)
		require.NoError(t, err)
		t.Cleanup(func() { _ = b.Free() })
		return b
	}
	r.raw, r.proc, r.i8, r.tgt = alloc(records*raws*2), alloc(records*outs*4), alloc(records*outs), alloc(records*16)
	raw, proc, i8, tgt := cpu.HostBytes(r.raw.Ptr(), r.raw.Size()), cpu.HostBytes(r.proc.Ptr(), r.proc.Size()),
		cpu.HostBytes(r.i8.Ptr(), r.i8.Size()), cpu.HostBytes(r.tgt.Ptr(), r.tgt.Size())
	for i := range records {
		for s := range raws {
			binary.LittleEndian.PutUint16(raw[2*(i*raws+s):], uint16(i*10+s))
		}
		for s := range outs {
			binary.LittleEndian.PutUint32(proc[4*(i*outs+s):], math.Float32bits(float32(i)+float32(s)/10))
			i8[i*outs+s] = byte(i*4 + s)
		}
		binary.LittleEndian.PutUint64(tgt[16*i:], math.Float64bits(float64(i)))
		binary.LittleEndian.PutUint64(tgt[16*i+8:], math.Float64bits(-float64(i)))
	}
	var err error
	r.ready, err = r.dev.NewEvent(false)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.ready.Close() })
	s, err := r.dev.NewStream(0)
	require.NoError(t, err)
	require.NoError(t, s.Record(r.ready))
	require.NoError(t, s.Close())
	return r
}

func (r *blockRig) data(id, sample int64, markers []marker.Marker) *engine.BlockData {
	// the host streams: target (i, -i), actual (i/2, -i/2), strobes 3i+1
	h := engine.HostStreams{OutChannels: 2, InChannels: 2}
	for i := range r.records {
		h.GalvoTarget = append(h.GalvoTarget, float64(i), -float64(i))
		h.SampleTarget = append(h.SampleTarget, 2*float64(i), -2*float64(i))
		h.GalvoActual = append(h.GalvoActual, float64(i)/2, -float64(i)/2)
		h.Strobes = append(h.Strobes, uint32(3*i+1))
	}
	b := engine.NewStreamsBlock(id, h)
	b.Markers = markers
	return &engine.BlockData{Block: b, Records: r.records, Raw: r.raw.Ptr(),
		RawSamples: r.raws, Sample: sample, Processed: r.proc.Ptr(), Int8: r.i8.Ptr(), OutputSamples: r.outs,
		Target: format.DevicePositions{Ptr: r.tgt.Ptr(), Records: r.records, Channels: 2},
		Actual: format.DevicePositions{Ptr: r.tgt.Ptr(), Records: r.records, Channels: 2}, Ready: r.ready}
}

func (r *blockRig) info(fail func(error)) engine.EndpointInfo {
	return engine.EndpointInfo{Device: r.dev, RecordsPerBlock: r.records, RawSamples: r.raws, OutputSamples: r.outs, Fail: fail}
}

// TestBlockEndpointWrites: each endpoint kind writes what vortex's does
// for two blocks: the plan's copies (records 1-2 and 4 of each block) for
// the stream endpoints, whole blocks for the dump, markers for the log.
func TestBlockEndpointWrites(t *testing.T) {
	const records, raws, outs = 5, 3, 2
	r := newBlockRig(t, records, raws, outs)
	plan := &engine.FormatPlan{Actions: []format.Action{{Kind: format.Copy, BlockOffset: 1, Count: 2},
		{Kind: format.FinishSegment}, {Kind: format.Copy, BlockOffset: 4, Count: 1}}}
	copied := []int{1, 2, 4}
	markers := []marker.Marker{marker.NewSegmentBoundary(1, 0, 0, false, 2), marker.NewEvent(3, 7)}
	le := binary.LittleEndian
	rows := func(f func(i int) []byte, idx []int) []byte {
		var b []byte
		for range 2 { // two blocks
			for _, i := range idx {
				b = append(b, f(i)...)
			}
		}
		return b
	}
	all := []int{0, 1, 2, 3, 4}
	tests := []struct {
		kind  string
		store func(path string) any
		want  []byte
	}{
		{"AscanStreamEndpoint", func(p string) any { return openStream(t, "float32", p) }, rows(func(i int) []byte {
			var b []byte
			for s := range outs {
				b = le.AppendUint32(b, math.Float32bits(float32(i)+float32(s)/10))
			}
			return b
		}, copied)},
		{"AscanStreamEndpoint", func(p string) any { return openStream(t, "int8", p) }, rows(func(i int) []byte {
			return []byte{byte(i * 4), byte(i*4 + 1)}
		}, copied)},
		{"SpectraStreamEndpoint", func(p string) any { return openStream(t, "uint16", p) }, rows(func(i int) []byte {
			var b []byte
			for s := range raws {
				b = le.AppendUint16(b, uint16(i*10+s))
			}
			return b
		}, copied)},
		{"GalvoTargetStreamEndpoint", func(p string) any { return openStream(t, "float64", p) }, rows(func(i int) []byte {
			return le.AppendUint64(le.AppendUint64(nil, math.Float64bits(float64(i))), math.Float64bits(-float64(i)))
		}, copied)},
		{"SampleTargetStreamEndpoint", func(p string) any { return openStream(t, "float64", p) }, rows(func(i int) []byte {
			return le.AppendUint64(le.AppendUint64(nil, math.Float64bits(2*float64(i))), math.Float64bits(-2*float64(i)))
		}, copied)},
		{"GalvoActualStreamEndpoint", func(p string) any { return openStream(t, "float64", p) }, rows(func(i int) []byte {
			return le.AppendUint64(le.AppendUint64(nil, math.Float64bits(float64(i)/2)), math.Float64bits(-float64(i)/2))
		}, copied)},
		{"SampleActualStreamEndpoint", func(p string) any { return openStream(t, "float64", p) }, rows(func(i int) []byte {
			return le.AppendUint64(le.AppendUint64(nil, math.Float64bits(float64(i)/2)), math.Float64bits(-float64(i)/2))
		}, copied)},
		{"StrobesStreamEndpoint", func(p string) any { return openStream(t, "uint32", p) }, rows(func(i int) []byte {
			return le.AppendUint32(nil, uint32(3*i+1))
		}, copied)},
		{"StreamDumpStorage", func(p string) any {
			d := storage.NewStreamDump()
			require.NoError(t, d.Open(storage.StreamDumpConfig{Path: p, Stream: 5, Divisor: 2}))
			return d
		}, rows(func(i int) []byte { return le.AppendUint32(nil, uint32(3*i+1)) }, []int{0, 2, 4})},
		{"CounterStreamEndpoint", func(p string) any { return openStream(t, "uint64", p) },
			// blocks start at samples 100 and 105
			append(le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, 101), 102), 104),
				le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, 106), 107), 109)...)},
		{"StreamDumpStorage", func(p string) any {
			d := storage.NewStreamDump()
			require.NoError(t, d.Open(storage.StreamDumpConfig{Path: p, Stream: 0, Divisor: 2}))
			return d
		}, append(le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, 100), 102), 104),
			le.AppendUint64(le.AppendUint64(le.AppendUint64(nil, 105), 107), 109)...)},
		{"StreamDumpStorage", func(p string) any {
			d := storage.NewStreamDump()
			require.NoError(t, d.Open(storage.StreamDumpConfig{Path: p, Stream: 1, Divisor: 1}))
			return d
		}, rows(func(i int) []byte {
			return le.AppendUint64(le.AppendUint64(nil, math.Float64bits(float64(i))), math.Float64bits(-float64(i)))
		}, all)},
		{"MarkerLogStorage", func(p string) any {
			l := storage.NewMarkerLog()
			require.NoError(t, l.Open(storage.MarkerLogConfig{Path: p}))
			return l
		}, []byte("           1 S 0 0 F 2 18446744073709551615\n           3 E 7 0 - 0 0\n" +
			"           1 S 0 0 F 2 18446744073709551615\n           3 E 7 0 - 0 0\n")},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.bin")
			store := tc.store(path)
			e := newBlock(t, tc.kind, store)
			require.NoError(t, e.Prepare(r.info(nil)))
			require.NoError(t, e.Format(r.data(0, 100, markers), plan))
			require.NoError(t, e.Format(r.data(1, 105, markers), plan))
			require.NoError(t, e.Flush())
			require.True(t, e.Prepared())
			require.Equal(t, 2, e.Written())
			require.NoError(t, e.Close())
			require.NoError(t, store.(interface{ Close() error }).Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestStreamDumpAtLead: a StreamDumpStorage with lead_samples dumps the
// galvo target and strobes of that IO lead (vortex's
// block.streams(lead_samples)) and the other streams as at lead 0; a lead
// the engine does not generate is refused at Prepare, naming the argument
// and the leads there are.
func TestStreamDumpAtLead(t *testing.T) {
	const records = 3
	r := newBlockRig(t, records, 1, 1)
	le := binary.LittleEndian
	f64s := func(v ...float64) []byte {
		var b []byte
		for _, x := range v {
			b = le.AppendUint64(b, math.Float64bits(x))
		}
		return b
	}
	// lead 0: target (i, -i), sample target (2i, -2i), strobes 3i+1
	// (blockRig.data); lead 2: target (10+i, 20+i), strobes 100+i;
	// lead 7: target (30+i, 40+i), strobes 200+i.
	data := func() *engine.BlockData {
		d := r.data(0, 0, nil)
		h := d.HostStreams()
		at := func(a, b float64, s uint32) engine.HostStreams {
			var l engine.HostStreams
			for i := range records {
				l.GalvoTarget = append(l.GalvoTarget, a+float64(i), b+float64(i))
				l.Strobes = append(l.Strobes, s+uint32(i))
			}
			return l
		}
		d.Block = engine.NewStreamsBlock(0, h, at(10, 20, 100), at(30, 40, 200))
		return d
	}
	leads := []int{0, 2, 7}
	negZero := math.Copysign(0, -1) // blockRig's -float64(0)
	tests := []struct {
		name   string
		stream int
		lead   int
		leads  []int
		want   []byte
		err    string
	}{
		{"galvo target, lead 2", 1, 2, leads, f64s(10, 20, 11, 21, 12, 22), ""},
		{"galvo target, lead 7", 1, 7, leads, f64s(30, 40, 31, 41, 32, 42), ""},
		{"galvo target, lead 0", 1, 0, leads, f64s(0, negZero, 1, -1, 2, -2), ""},
		{"sample target, lead 7: as at lead 0", 2, 7, leads, f64s(0, negZero, 2, -2, 4, -4), ""},
		{"strobes, lead 2", 5, 2, leads, le.AppendUint32(le.AppendUint32(le.AppendUint32(nil, 100), 101), 102), ""},
		{"a lead no IO has", 1, 3, leads, nil, "StreamDumpStorage.Prepare: lead_samples=3, expected one of the engine's IO leads [0 2 7]"},
		{"no engine's leads: 0 only", 1, 2, nil, nil, "lead_samples=2, expected one of the engine's IO leads [0]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "out.bin")
			dump := storage.NewStreamDump()
			require.NoError(t, dump.Open(storage.StreamDumpConfig{Path: path, Stream: tc.stream, Divisor: 1}))
			e, err := NewBlockEndpoint(BlockDump, 0, dump, tc.lead)
			require.NoError(t, err)
			info := r.info(nil)
			info.Leads = tc.leads
			err = e.Prepare(info)
			if tc.err != "" {
				require.ErrorIs(t, err, backend.ErrInvalid)
				require.ErrorContains(t, err, tc.err)
				require.False(t, e.Prepared())
				require.NoError(t, e.Close())
				require.NoError(t, dump.Close())
				return
			}
			require.NoError(t, err)
			require.NoError(t, e.Format(data(), &engine.FormatPlan{}))
			require.NoError(t, e.Flush())
			require.NoError(t, e.Close())
			require.NoError(t, dump.Close())
			got, err := os.ReadFile(path)
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// TestBlockEndpointFailedWrite: a write the disk refuses stops the engine
// through Fail, once, and every later Format returns the error.
func TestBlockEndpointFailedWrite(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	r := newBlockRig(t, 4, 2, 2)
	s := openStream(t, "uint16", "/dev/full")
	e := newBlock(t, "SpectraStreamEndpoint", s)
	var mu sync.Mutex
	var fails []error
	require.NoError(t, e.Prepare(r.info(func(err error) {
		mu.Lock()
		fails = append(fails, err)
		mu.Unlock()
	})))
	plan := &engine.FormatPlan{Actions: []format.Action{{Kind: format.Copy, Count: 4}}}
	require.NoError(t, e.Format(r.data(0, 0, nil), plan))
	err := e.Flush()
	require.Error(t, err)
	require.ErrorContains(t, err, "/dev/full")
	require.Error(t, e.Format(r.data(1, 4, nil), plan))
	mu.Lock()
	require.Len(t, fails, 1)
	mu.Unlock()
	require.True(t, e.Prepared())
	require.Zero(t, e.Written())
	require.Error(t, e.Close(), "Close reports the write error too")
	require.NoError(t, s.Close())
}

// TestBlockEndpointSkipsClosedStorage: vortex writes nothing to a storage
// that is not open, and that is not an error.
func TestBlockEndpointSkipsClosedStorage(t *testing.T) {
	r := newBlockRig(t, 2, 2, 2)
	l := storage.NewMarkerLog()
	e := newBlock(t, "MarkerLogStorage", l)
	require.NoError(t, e.Prepare(r.info(nil)))
	require.NoError(t, e.Format(r.data(0, 0, []marker.Marker{marker.NewEvent(0, 1)}), &engine.FormatPlan{}))
	require.NoError(t, e.Flush())
	require.True(t, e.Prepared())
	require.Zero(t, e.Written())
	require.NoError(t, e.Close())
}

// TestBlockEndpointBadWiring: a storage of another kind or type, or a
// lead_samples other than 0 on another endpoint than StreamDumpStorage
// (or a negative one), is refused when the endpoint is built.
func TestBlockEndpointBadWiring(t *testing.T) {
	_, _, err := ParseBlockSource("Nope")
	require.ErrorIs(t, err, backend.ErrInvalid)
	u16, err := storage.NewSimpleStreamNamed("uint16")
	require.NoError(t, err)
	for _, store := range []any{u16, storage.NewMarkerLog(), nil} {
		_, err := NewBlockEndpoint(BlockAscans, 0, store, 0)
		require.ErrorIs(t, err, backend.ErrInvalid)
	}
	i8, err := storage.NewSimpleStreamNamed("int8")
	require.NoError(t, err)
	_, err = NewBlockEndpoint(BlockAscans, 0, i8, 1)
	require.ErrorIs(t, err, backend.ErrInvalid, "lead_samples")
	require.ErrorContains(t, err, "AscanStreamEndpoint: lead_samples=1, expected 0 (only StreamDumpStorage takes a lead")
	_, err = NewBlockEndpoint(BlockDump, 0, storage.NewStreamDump(), -1)
	require.ErrorContains(t, err, "StreamDumpStorage: lead_samples=-1, expected 0")
	_, err = NewBlockEndpoint(BlockDump, 0, storage.NewStreamDump(), 5)
	require.NoError(t, err, "a dump takes a lead; Prepare checks it against the engine's")
	_, err = NewBlockEndpoint(BlockStream, Stream(6), i8, 0)
	require.ErrorIs(t, err, backend.ErrInvalid, "no stream 6")
	dump := storage.NewStreamDump()
	require.NoError(t, dump.Open(storage.StreamDumpConfig{Path: filepath.Join(t.TempDir(), "d"), Stream: 5, Divisor: 1}))
	d := newBlock(t, "StreamDumpStorage", dump)
	require.NoError(t, d.Prepare(newBlockRig(t, 1, 1, 1).info(nil)), "the strobes are dumped (uint32)")
	require.True(t, d.ReadsStrobes(), "a strobes dump asks the engine for strobes")
	require.NoError(t, d.Close())
	require.NoError(t, dump.Close())
	_, err = NewBlockEndpoint(BlockStream, StreamStrobes, u16, 0)
	require.ErrorContains(t, err, "uint32", "strobes are uint32 words")
	require.ErrorContains(t, err, "StrobesStreamEndpoint: storage is a SimpleStream of uint16")
}

// blockSources are vortex's class names of the block endpoints and their
// sources.
var blockSources = map[string]string{
	"AscanStreamEndpoint": "ascans", "SpectraStreamEndpoint": "spectra", "CounterStreamEndpoint": "counter",
	"GalvoTargetStreamEndpoint": "galvo_target", "SampleTargetStreamEndpoint": "sample_target",
	"GalvoActualStreamEndpoint": "galvo_actual", "SampleActualStreamEndpoint": "sample_actual",
	"StrobesStreamEndpoint": "strobes", "StreamDumpStorage": "dump", "MarkerLogStorage": "markers",
}

// newBlock builds vortex's endpoint class over store, checking that the
// endpoint takes the class's name.
func newBlock(t *testing.T, class string, store any) *BlockEndpoint {
	t.Helper()
	what, s, err := ParseBlockSource(blockSources[class])
	require.NoError(t, err)
	e, err := NewBlockEndpoint(what, s, store, 0)
	require.NoError(t, err)
	require.Equal(t, class, e.name)
	return e
}

func openStream(t *testing.T, dtype, path string) *storage.SimpleStream {
	t.Helper()
	s, err := storage.NewSimpleStreamNamed(dtype)
	require.NoError(t, err)
	require.NoError(t, s.Open(storage.SimpleStreamConfig{Path: path}))
	return s
}

// panicEvent panics in the nth Synchronize (the writer's wait for a
// block's download), counted over every job sharing left.
type panicEvent struct {
	backend.Event
	left *atomic.Int32
}

func (p panicEvent) Synchronize() error {
	if p.left.Add(-1) == 0 {
		panic("boom in the writer")
	}
	return p.Event.Synchronize()
}

// unwrapStream records the event inside a panicEvent (the CPU stream
// records only its own events).
type unwrapStream struct{ backend.Stream }

func (s unwrapStream) Record(ev backend.Event) error {
	if p, ok := ev.(panicEvent); ok {
		ev = p.Event
	}
	return s.Stream.Record(ev)
}

// TestBlockEndpointWriterPanic: a panic in the storage writer goroutine is
// its sticky write error (Fail once, Flush and later Formats return it,
// with the panic and its stack), not the end of the process; the writer
// keeps running, so the next session writes again, and Close returns.
func TestBlockEndpointWriterPanic(t *testing.T) {
	before := runtime.NumGoroutine()
	r := newBlockRig(t, 4, 2, 2)
	path := filepath.Join(t.TempDir(), "spectra.bin")
	s := openStream(t, "uint16", path)
	e := newBlock(t, "SpectraStreamEndpoint", s)
	fails := make(chan error, 8)
	require.NoError(t, e.Prepare(r.info(func(err error) { fails <- err })))
	var left atomic.Int32
	left.Store(1) // the first job's wait panics
	e.ds = unwrapStream{e.ds}
	for _, j := range e.jobs {
		j.ready = panicEvent{j.ready, &left}
	}
	plan := &engine.FormatPlan{Actions: []format.Action{{Kind: format.Copy, Count: 4}}}
	require.NoError(t, e.Format(r.data(0, 0, nil), plan))
	err := e.Flush()
	require.ErrorContains(t, err, "SpectraStreamEndpoint: writer: internal error (Go panic: boom in the writer)")
	require.ErrorContains(t, err, "goroutine ", "the stack is in the error")
	require.Len(t, fails, 1)
	require.ErrorContains(t, <-fails, "boom in the writer")
	require.ErrorContains(t, e.Format(r.data(1, 4, nil), plan), "boom in the writer", "sticky")

	e.BeginSession(nil) // a new session writes again: the writer survived
	require.NoError(t, e.Format(r.data(2, 8, nil), plan))
	require.NoError(t, e.Flush())
	require.Empty(t, fails)
	require.NoError(t, e.Close())
	require.NoError(t, s.Close())
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Len(t, got, 4*2*2, "the block after the panic is stored")
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before, "the writer goroutine ended at Close")
}

// TestBlockEndpointFormatPanicGivesBackTheJob: a panic in Format after it
// took a staging job goes on to the engine's stage (which reports it), and
// the job goes back first: Flush, which waits for every job, returns.
func TestBlockEndpointFormatPanicGivesBackTheJob(t *testing.T) {
	r := newBlockRig(t, 4, 2, 2)
	s := openStream(t, "uint16", filepath.Join(t.TempDir(), "spectra.bin"))
	e := newBlock(t, "SpectraStreamEndpoint", s)
	require.NoError(t, e.Prepare(r.info(nil)))
	plan := &engine.FormatPlan{Actions: []format.Action{{Kind: format.Copy, Count: 4}}}
	bad := r.data(0, 0, nil)
	bad.Block = nil // Format faults on it with a job taken
	// More Formats than there are jobs (each takes one), then Flush: with
	// a job lost, one of them would wait forever.
	errs := make(chan error, blockJobs+2)
	go func() {
		for range blockJobs + 1 {
			errs <- guard.Call("format", func() error { return e.Format(bad, plan) })
		}
		errs <- e.Flush()
	}()
	for i := range blockJobs + 2 {
		select {
		case err := <-errs:
			if i <= blockJobs {
				require.ErrorContains(t, err, "Go panic: runtime error: invalid memory address or nil pointer dereference")
			} else {
				require.NoError(t, err, "Flush")
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("call %d hung on a job a panicking Format kept", i)
		}
	}
	require.NoError(t, e.Close())
	require.NoError(t, s.Close())
}
