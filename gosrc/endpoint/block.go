package endpoint

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	"github.com/vortexgo/vortexgo/gosrc/marker"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// BlockSource is what a BlockEndpoint writes of each block.
type BlockSource int

// The sources of vortex's stream storage endpoints.
const (
	// BlockAscans: the processed A-scans (AscanStreamEndpoint).
	BlockAscans BlockSource = iota
	// BlockSpectra: the raw spectra (SpectraStreamEndpoint).
	BlockSpectra
	// BlockStream: one of the block's streams (CounterStreamEndpoint,
	// GalvoTargetStreamEndpoint, ..., StrobesStreamEndpoint).
	BlockStream
	// BlockDump: the stream a StreamDump is configured with, whole blocks
	// (StreamDumpStorage).
	BlockDump
	// BlockMarkers: the block's markers (MarkerLogStorage).
	BlockMarkers
)

// ParseBlockSource reads a source by name: "ascans", "spectra", "dump",
// "markers" or a stream's name ("counter", "galvo_target", ...: a
// BlockStream of that stream).
func ParseBlockSource(name string) (BlockSource, Stream, error) {
	switch name {
	case "ascans":
		return BlockAscans, 0, nil
	case "spectra":
		return BlockSpectra, 0, nil
	case "dump":
		return BlockDump, 0, nil
	case "markers":
		return BlockMarkers, 0, nil
	}
	if s, ok := streamNamed(name); ok {
		return BlockStream, s, nil
	}
	return 0, 0, engine.Invalid("block endpoint source %q, expected ascans, spectra, dump, markers or a stream "+
		"(counter, galvo_target, sample_target, galvo_actual, sample_actual, strobes)", name)
}

// blockJobs is how many blocks can wait for the writer: two lets the
// device download one while the writer stores the other.
const blockJobs = 2

type blockJob struct {
	buf      backend.Buffer // pinned: the block's rows
	ready    backend.Event  // the download into buf is done
	rows     int            // rows in buf
	rowBytes int            // bytes per row in buf
	counter  []byte         // the counter stream's rows (host-computed)
	ranges   [][2]int       // [first, end) rows to write (plan copies); nil: all (a dump)
	markers  []marker.Marker
	sample   int64 // the block's first sample (counter)
	block    int64
}

// BlockEndpoint writes each block's data to a stream storage off the
// engine's hot path: vortex's AscanStreamEndpoint, SpectraStreamEndpoint,
// the Counter/Galvo*/Sample*StreamEndpoints (each a SimpleStream),
// StreamDumpStorage (a StreamDump) and MarkerLogStorage (a MarkerLog).
//
// Format enqueues the block's download into a pinned staging buffer on the
// endpoint's stream and hands it to a writer goroutine; waiting for a free
// buffer is backpressure from a slow disk. The stream endpoints write the
// records of the plan's copies, in order (vortex's stream_storage); the
// dump writes every block whole, every divisor-th row; the marker log
// writes the block's markers. A storage that is not open is skipped, as in
// vortex. The first failed write stops the engine (EndpointInfo.Fail).
type BlockEndpoint struct {
	name   string
	what   BlockSource
	stream Stream // BlockStream's; a dump's is resolved at Prepare
	lead   int    // vortex's lead_samples (a dump's; 0 for the others)
	leadAt int    // lead's index in the engine's leads (EndpointInfo.Leads), found at Prepare

	simple *storage.SimpleStream
	dump   *storage.StreamDump
	log    *storage.MarkerLog

	rowBytes int
	source   BlockSource // resolved at Prepare: a dump writes a BlockStream
	ds       backend.Stream
	free     chan *blockJob
	queue    chan *blockJob
	jobs     []*blockJob
	writer   sync.WaitGroup
	fail     func(error)

	mu       sync.Mutex
	err      error
	written  int64       // blocks written
	prepared atomic.Bool // for Prepared, which a user may call while an engine prepares
	owner    int64       // the engine that prepared it (EndpointInfo.Owner)

	claim engine.Claim
}

var _ engine.Endpoint = (*BlockEndpoint)(nil)

// NewBlockEndpoint returns vortex's endpoint writing what (of stream s,
// for BlockStream) into store, with vortex's lead_samples (a dump's: the
// galvo target and strobes of the IOs that lead the acquisition by that
// many samples; the other endpoints take 0, as vortex's take none):
// AscanStreamEndpoint (BlockAscans: an int8 or float32 SimpleStream),
// SpectraStreamEndpoint (BlockSpectra: uint16), the <Stream>StreamEndpoints
// (BlockStream: a SimpleStream of the stream's type), StreamDumpStorage
// (BlockDump: a StreamDump) and MarkerLogStorage (BlockMarkers: a
// MarkerLog). store may be closed until the engine writes: a storage that
// is not open is skipped, as in vortex.
func NewBlockEndpoint(what BlockSource, s Stream, store any, leadSamples int) (*BlockEndpoint, error) {
	e := &BlockEndpoint{what: what, stream: s}
	switch what {
	case BlockAscans:
		e.name = "AscanStreamEndpoint"
	case BlockSpectra:
		e.name = "SpectraStreamEndpoint"
	case BlockStream:
		if s < 0 || int(s) >= len(streamInfo) {
			return nil, engine.Invalid("NewBlockEndpoint: stream %d, expected 0 (counter) to %d (strobes)", int(s), len(streamInfo)-1)
		}
		e.name = streamInfo[s].class + "StreamEndpoint"
	case BlockDump:
		e.name = "StreamDumpStorage"
	case BlockMarkers:
		e.name = "MarkerLogStorage"
	default:
		return nil, engine.Invalid("NewBlockEndpoint: source %d, expected BlockAscans ... BlockMarkers", int(what))
	}
	if leadSamples < 0 || (leadSamples != 0 && what != BlockDump) {
		return nil, engine.Invalid("%s: lead_samples=%d, expected 0 (only StreamDumpStorage takes a lead, >= 0, as in vortex)", e.name, leadSamples)
	}
	switch what {
	case BlockDump:
		d, ok := store.(*storage.StreamDump)
		if !ok {
			return nil, engine.Invalid("%s: storage %T, expected a StreamDump", e.name, store)
		}
		e.dump = d
	case BlockMarkers:
		l, ok := store.(*storage.MarkerLog)
		if !ok {
			return nil, engine.Invalid("%s: storage %T, expected a MarkerLog", e.name, store)
		}
		e.log = l
	default:
		st, ok := store.(*storage.SimpleStream)
		if !ok {
			return nil, engine.Invalid("%s: storage %T, expected a SimpleStream", e.name, store)
		}
		want, of := []string{"int8", "float32"}, "A-scans"
		switch what {
		case BlockSpectra:
			want, of = []string{"uint16"}, "spectra"
		case BlockStream:
			want, of = []string{s.DTypeName()}, s.String()
		}
		if !slices.Contains(want, st.DTypeName()) {
			return nil, engine.Invalid("%s: storage is a SimpleStream of %s, expected one of %v (the %s' type)", e.name, st.DTypeName(), want, of)
		}
		e.simple = st
	}
	e.lead = leadSamples
	return e, nil
}

// Claims reports the endpoint's claim and its storage's: while an engine
// uses the endpoint, neither can be closed.
func (e *BlockEndpoint) Claims() []*engine.Claim {
	e.claim.Name(e.name)
	cs := []*engine.Claim{&e.claim}
	switch {
	case e.simple != nil:
		cs = append(cs, e.simple.Claims()...)
	case e.dump != nil:
		cs = append(cs, e.dump.Claims()...)
	case e.log != nil:
		cs = append(cs, e.log.Claims()...)
	}
	return cs
}

// Prepare sizes the staging buffers for the source and starts the writer.
func (e *BlockEndpoint) Prepare(info engine.EndpointInfo) (err error) {
	if e.ds != nil {
		if info.Owner == e.owner {
			return fmt.Errorf("%s.Prepare: already prepared, expected one Prepare per endpoint", e.name)
		}
		// Another engine, once the one that prepared it was closed (the
		// engine package refuses it before): start over.
		if err := e.release(); err != nil {
			return fmt.Errorf("%s.Prepare: releasing the previous engine's staging: %w", e.name, err)
		}
	}
	// vortex's block.streams(lead) fails on a lead no IO of the engine
	// has, at the first block; here the engine's Prepare refuses it.
	leads := info.Leads
	if leads == nil {
		leads = []int{0}
	}
	if e.leadAt = slices.Index(leads, e.lead); e.leadAt < 0 {
		return engine.Invalid("%s.Prepare: lead_samples=%d, expected one of the engine's IO leads %v "+
			"(EngineConfig.add_io(io, lead_samples=...); 0 is always there)", e.name, e.lead, leads)
	}
	e.owner = info.Owner
	e.source = e.what
	if e.dump != nil {
		e.source, e.stream = BlockStream, Stream(e.dump.Config().Stream)
	}
	switch {
	case e.source == BlockAscans:
		e.rowBytes = info.OutputSamples * e.simple.ElemSize()
	case e.source == BlockSpectra:
		e.rowBytes = info.RawSamples * 2
	case e.source == BlockMarkers:
	case e.stream == StreamCounter:
		e.rowBytes = 8
	case e.stream == StreamStrobes:
		e.rowBytes = 4 // vortex's digital words: uint32
	default:
		// Waveform rows: one float64 per channel, the width known per
		// block; size the staging for the widest the engine uses.
		e.rowBytes = 8 * 16
	}
	e.fail = info.Fail
	defer func() {
		if err != nil {
			err = errors.Join(err, e.release())
		}
	}()
	if e.ds, err = info.Device.NewStream(0); err != nil {
		return fmt.Errorf("%s.Prepare: stream: %w", e.name, err)
	}
	n, ok := engine.MulSize(info.RecordsPerBlock, max(e.rowBytes, 1))
	if !ok {
		return engine.TooLarge("%s.Prepare: staging of %d records x %d bytes, expected a smaller block", e.name, info.RecordsPerBlock, e.rowBytes)
	}
	e.free = make(chan *blockJob, blockJobs)
	e.queue = make(chan *blockJob, blockJobs)
	for range blockJobs {
		j := &blockJob{}
		e.jobs = append(e.jobs, j)
		if j.buf, err = info.Device.AllocPinned(n); err != nil {
			return fmt.Errorf("%s.Prepare: pinned staging of %d bytes: %w", e.name, n, err)
		}
		if j.ready, err = info.Device.NewEvent(false); err != nil {
			return fmt.Errorf("%s.Prepare: staging event: %w", e.name, err)
		}
		e.free <- j
	}
	e.writer.Add(1)
	go e.write()
	e.prepared.Store(true)
	return nil
}

// BeginSession starts a new engine session (engine.SessionEndpoint), as
// the stack endpoints do: a write error of the previous session was
// returned by its Flush and reported; the new session writes again, and
// fails loudly again if the storage still does.
func (e *BlockEndpoint) BeginSession(<-chan struct{}) {
	e.mu.Lock()
	e.err = nil
	e.mu.Unlock()
}

// Stream is the endpoint's stream (the block downloads run on it).
func (e *BlockEndpoint) Stream() backend.Stream { return e.ds }

func (e *BlockEndpoint) ready() bool {
	switch {
	case e.simple != nil:
		return e.simple.IsOpen()
	case e.dump != nil:
		return e.dump.IsOpen()
	}
	return e.log.IsOpen()
}

// Format hands the block to the writer: markers and the block's host
// streams are copied now, device data is downloaded on the endpoint's
// stream after b.Ready.
func (e *BlockEndpoint) Format(b *engine.BlockData, plan *engine.FormatPlan) error {
	e.mu.Lock()
	werr := e.err
	e.mu.Unlock()
	if werr != nil {
		return werr // also reported through Fail
	}
	if !e.ready() {
		return nil // vortex skips a storage that is not open
	}
	var ranges [][2]int
	if e.source != BlockMarkers && e.dump == nil {
		for _, a := range plan.Actions {
			if a.Kind == format.Copy && a.Count > 0 {
				ranges = append(ranges, [2]int{a.BlockOffset, a.BlockOffset + a.Count})
			}
		}
		if len(ranges) == 0 {
			return nil
		}
	}
	j := <-e.free
	defer guard.Undo(func() { e.free <- j }) // Flush waits for every job
	j.rows, j.ranges, j.sample, j.block, j.markers, j.rowBytes = b.Records, ranges, b.Sample, b.Block.ID, j.markers[:0], 0
	var src uintptr
	var rowBytes int
	switch {
	case e.source == BlockMarkers:
		j.markers = append(j.markers, b.Block.Markers...)
	case e.source == BlockAscans:
		src, rowBytes = b.Processed, e.rowBytes
		if e.simple.DTypeName() == "int8" {
			src = b.Int8
		}
	case e.source == BlockSpectra:
		src, rowBytes = b.Raw, e.rowBytes
	case e.stream != StreamCounter: // the counter is computed by the writer
		// The block's streams are host memory (vortex's
		// block.streams(lead_samples)): copied into the staging buffer
		// now, while the block cannot be recycled, so the writer never
		// reads a reused block.
		h := b.HostStreamsLead(e.leadAt)
		if e.stream == StreamStrobes {
			if len(h.Strobes) != b.Records {
				e.free <- j
				return fmt.Errorf("%s.Format: block %d has %d strobe words, expected %d", e.name, b.Block.ID, len(h.Strobes), b.Records)
			}
			copy(hostBytes[uint32](j.buf.Ptr(), b.Records), h.Strobes)
			j.rowBytes = 4
			break
		}
		v, ch := h.GalvoTarget, h.OutChannels
		switch e.stream {
		case StreamSampleTarget:
			v = h.SampleTarget
		case StreamGalvoActual:
			v, ch = h.GalvoActual, h.InChannels
		case StreamSampleActual:
			v, ch = h.SampleActual, h.InChannels
		}
		if ch == 0 {
			e.free <- j
			return fmt.Errorf("%s.Format: the block has no %s waveform, expected an engine with a scan queue (and IO channels for the actual positions)",
				e.name, e.stream)
		}
		if 8*ch > e.rowBytes {
			e.free <- j
			return engine.Invalid("%s.Format: %d waveform channels, expected at most %d", e.name, ch, e.rowBytes/8)
		}
		copy(hostBytes[float64](j.buf.Ptr(), b.Records*ch), v)
		j.rowBytes = 8 * ch
	}
	if rowBytes != 0 {
		j.rowBytes = rowBytes
	}
	if src != 0 {
		if err := e.ds.WaitEvent(b.Ready); err != nil {
			e.free <- j
			return fmt.Errorf("%s.Format: %w", e.name, err)
		}
		if err := e.ds.Copy(j.buf.Ptr(), src, b.Records*rowBytes); err != nil {
			e.free <- j
			return fmt.Errorf("%s.Format: download of block %d: %w", e.name, b.Block.ID, err)
		}
	}
	if err := e.ds.Record(j.ready); err != nil {
		e.free <- j
		return fmt.Errorf("%s.Format: %w", e.name, err)
	}
	e.queue <- j
	return nil
}

// write stores queued blocks (waiting on each download is its purpose).
func (e *BlockEndpoint) write() {
	defer e.writer.Done()
	for j := range e.queue {
		e.mu.Lock()
		failed := e.err != nil
		e.mu.Unlock()
		var err error
		if !failed {
			// A panic becomes this job's write error (sticky: the engine
			// stops), and the job still goes back below: Flush waits for
			// every job, and a lost one would hang it.
			err = guard.Call(e.name+": writer", func() error {
				if err := j.ready.Synchronize(); err != nil {
					return err
				}
				return e.store(j)
			})
		}
		e.mu.Lock()
		if err != nil && e.err == nil {
			e.err = fmt.Errorf("%s: storing block %d: %w", e.name, j.block, err)
		} else if !failed {
			e.written++
		}
		report := e.err
		e.mu.Unlock()
		// Fail before the buffer goes back: the engine's Flush waits for
		// every buffer, so the error is posted before the run ends.
		if err != nil && e.fail != nil {
			e.fail(report)
		}
		e.free <- j
	}
}

func (e *BlockEndpoint) store(j *blockJob) error {
	switch {
	case e.source == BlockMarkers:
		return e.log.Write(j.markers)
	case e.source == BlockStream && e.stream == StreamCounter:
		// vortex's counter stream: the running index of each record.
		if cap(j.counter) < j.rows*8 {
			j.counter = make([]byte, j.rows*8)
		}
		j.counter = j.counter[:j.rows*8]
		for i := range j.rows {
			v := uint64(j.sample) + uint64(i)
			for k := range 8 {
				j.counter[8*i+k] = byte(v >> (8 * k))
			}
		}
		return e.writeRows(j, j.counter, 8)
	}
	data, err := hostmem.Span[byte](int(j.buf.Ptr()), j.rows*j.rowBytes) // pinned memory this endpoint owns
	if err != nil {
		return err
	}
	return e.writeRows(j, data, j.rowBytes)
}

func (e *BlockEndpoint) writeRows(j *blockJob, data []byte, rowBytes int) error {
	if e.dump != nil {
		return e.dump.Dump(data, rowBytes)
	}
	for _, r := range j.ranges {
		if err := e.simple.Write(data[r[0]*rowBytes : r[1]*rowBytes]); err != nil {
			return err
		}
	}
	return nil
}

// Flush waits until the writer has stored every queued block and returns
// the first write error.
func (e *BlockEndpoint) Flush() error {
	if e.free == nil {
		return nil
	}
	held := make([]*blockJob, 0, blockJobs)
	for range blockJobs {
		held = append(held, <-e.free)
	}
	for _, j := range held {
		e.free <- j
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// ReadsPositions (engine.PositionReader): never on the device (the
// galvo and sample streams are read on the host, HostStreams).
func (e *BlockEndpoint) ReadsPositions() bool { return false }

// ReadsRaw (engine.RawReader): the spectra streams.
func (e *BlockEndpoint) ReadsRaw() bool { return e.what == BlockSpectra }

// ReadsProcessed (engine.ProcessedReader): the A-scan streams of another
// type than int8.
func (e *BlockEndpoint) ReadsProcessed() bool {
	return e.what == BlockAscans && e.simple.DTypeName() != "int8"
}

// ReadsStrobes (engine.StrobeReader): the strobes stream does, and a dump
// of it (the source is resolved at Prepare, before the engine asks).
func (e *BlockEndpoint) ReadsStrobes() bool {
	return e.source == BlockStream && e.stream == StreamStrobes
}

// Close flushes, stops the writer and frees the buffers; the storage stays
// open (it belongs to the caller). Refused while an engine uses it.
func (e *BlockEndpoint) Close() error {
	return e.claim.Close(func() error {
		if e.ds == nil {
			return nil
		}
		return errors.Join(e.Flush(), e.release())
	})
}

func (e *BlockEndpoint) release() error {
	e.prepared.Store(false)
	var errs []error
	if e.queue != nil {
		close(e.queue)
		e.writer.Wait()
		e.queue = nil
	}
	if e.ds != nil {
		// Teardown wait: queued downloads write the buffers freed below.
		errs = append(errs, e.ds.Synchronize(), e.ds.Close())
		e.ds = nil
	}
	for _, j := range slices.Backward(e.jobs) {
		if j.buf != nil {
			errs = append(errs, j.buf.Free())
		}
		if j.ready != nil {
			errs = append(errs, j.ready.Close())
		}
	}
	e.jobs, e.free = nil, nil
	return errors.Join(errs...)
}

// Prepared reports whether an engine has prepared the endpoint (safe
// while one prepares it).
func (e *BlockEndpoint) Prepared() bool { return e.prepared.Load() }

// Written returns how many blocks the writer has stored.
func (e *BlockEndpoint) Written() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return int(e.written)
}

// hostBytes views n elements of T at p, pinned memory this endpoint owns.
func hostBytes[T any](p uintptr, n int) []T {
	v, err := hostmem.Span[T](int(p), n)
	if err != nil {
		return nil // n == 0
	}
	return v
}
