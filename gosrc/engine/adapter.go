package engine

import "github.com/vortexgo/vortexgo/gosrc/backend"

// This file holds every stage contract, as vortex keeps them in one header
// (engine/adapter.hpp): acquisition, processor, formatter and endpoint.

// Acquisition produces raw spectra, one block at a time.
type Acquisition interface {
	// Prepare readies the source (open the file, generate the phantom).
	Prepare() error
	// Start begins acquiring; called once, after Engine.Start.
	Start() error
	// Stop ends acquiring and must unblock a Fill in progress.
	Stop() error
	// SamplesPerRecord is the length of one raw A-scan (spectrum).
	SamplesPerRecord() int
	// Fill writes up to records raw spectra into dst (pinned host memory,
	// len(dst) >= records*SamplesPerRecord) and returns how many it wrote.
	// It returns io.EOF, possibly with n > 0, when the source has ended.
	Fill(dst []uint16, records int) (int, error)
}

// Lender is an optional extension of Acquisition for sources whose spectra
// already sit in pinned host memory: a replay ring, a digitizer's DMA
// buffers. The engine then uploads straight from the lent memory instead of
// copying each block into its own pinned buffer first. Why: that host copy
// runs at host memcpy speed (one core, ~5-10 GB/s) and was the engine's
// bottleneck against a 55 GB/s PCIe/C2C upload (measured on an H200).
type Lender interface {
	// PinTo is called once by Engine.Prepare, after Prepare: the source
	// moves or allocates its spectra in pinned memory of dev, so that any
	// run of up to maxRecords records it lends is contiguous.
	PinTo(dev backend.Device, maxRecords int) error
	// Lend returns the address of the next records raw spectra (or fewer,
	// n, at the end of the data) in pinned memory, with Fill's rate limit,
	// end-of-data (io.EOF) and stop semantics. The memory must stay valid
	// and unchanged until the upload from it completes; a replay ring that
	// is never rewritten satisfies that for its whole life.
	Lend(records int) (src uintptr, n int, err error)
}

// Processor turns raw spectra on the device into A-scans.
type Processor interface {
	// Prepare allocates what the processor needs; nothing after.
	Prepare() error
	// Process enqueues the processing of records raw spectra at in
	// (device, uint16) on s, writing float32 A-scans to out and their int8
	// rendering to outInt8, each OutputSamples long per record. slot is
	// the index of s among the engine's slot streams, so a processor can
	// keep per-slot scratch buffers. Work must be enqueued, not waited on.
	Process(slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error
	// OutputSamples is the length of one processed A-scan.
	OutputSamples() int
	// Close releases the processor's resources.
	Close() error
}

// Formatter decides where each record of a block goes: vortex's format
// planner. It fills a FormatPlan that the formatter's endpoints execute.
type Formatter interface {
	// Prepare is called once by Engine.Prepare; the formatter reserves the
	// plan capacity it will need for blocks of recordsPerBlock records, so
	// that planning never allocates.
	Prepare(recordsPerBlock int) error
	// Plan appends to plan the actions for the records
	// [start, start+records) of the acquisition (start counts records
	// since the engine started).
	Plan(start int64, records int, plan *FormatPlan) error
	// ScanRecords is the number of records in the whole scan, or 0 when
	// the scan repeats forever.
	ScanRecords() int64
	// VolumeShape is the (bscans, ascans) of one volume.
	VolumeShape() (bscans, ascans int)
	// SampleRange resolves the formatter's depth crop against A-scans of
	// samples samples, returning the half-open range [start, stop).
	SampleRange(samples int) (start, stop int)
}

// ActionKind says what a FormatPlan action does.
type ActionKind uint8

const (
	// ActionCopy places records of the block into a B-scan.
	ActionCopy ActionKind = iota
	// ActionSegment reports that a B-scan (segment) is complete.
	ActionSegment
	// ActionVolume reports that a volume is complete.
	ActionVolume
	// ActionScan reports that the whole scan is complete.
	ActionScan
)

// String returns the action's name.
func (k ActionKind) String() string {
	switch k {
	case ActionCopy:
		return "copy"
	case ActionSegment:
		return "segment"
	case ActionVolume:
		return "volume"
	case ActionScan:
		return "scan"
	}
	return "ActionKind(?)"
}

// Action is one step of a FormatPlan.
type Action struct {
	// Kind selects which fields matter.
	Kind ActionKind
	// SrcRecord is the first record of the block to copy (ActionCopy).
	SrcRecord int
	// Records is how many records to copy (ActionCopy).
	Records int
	// DstAscan is the lowest destination A-scan index the copy writes
	// (ActionCopy).
	DstAscan int
	// Reverse places the records in decreasing A-scan order, for the
	// return lines of a bidirectional scan (ActionCopy).
	Reverse bool
	// Bscan is the B-scan index within its volume.
	Bscan int
	// Volume is the volume index since the engine started.
	Volume int
	// Segment counts B-scans since the engine started (vortex's scan_idx).
	Segment int64
	// Sample is the record index (since start) one past the event.
	Sample int64
}

// FormatPlan is the reusable list of actions for one block.
type FormatPlan struct {
	// Actions in the order they must run and be reported.
	Actions []Action
}

// Reset empties the plan, keeping its capacity.
func (p *FormatPlan) Reset() { p.Actions = p.Actions[:0] }

// BlockData is what an endpoint reads from a block: the buffers of one
// processor's output and the raw spectra it came from. All pointers are
// device memory; they become valid when Ready completes.
type BlockData struct {
	// Block identifies the block (ID, Start).
	Block *Block
	// Records is the number of valid records.
	Records int
	// Raw is the device copy of the raw spectra (uint16).
	Raw uintptr
	// RawSamples is the length of one raw spectrum.
	RawSamples int
	// Processed holds float32 A-scans, OutputSamples each.
	Processed uintptr
	// Int8 holds the int8 rendering of the A-scans.
	Int8 uintptr
	// OutputSamples is the length of one processed A-scan.
	OutputSamples int
	// Ready completes when the upload and processing of the block are done.
	Ready backend.Event
}

// EndpointInfo is what Engine.Prepare tells an endpoint.
type EndpointInfo struct {
	// Device is the engine's device: create streams and buffers on it.
	Device backend.Device
	// Owner is the engine's lock token for tensors (never a user's).
	Owner int64
	// RecordsPerBlock is the largest block.
	RecordsPerBlock int
	// RawSamples is the length of one raw spectrum.
	RawSamples int
	// OutputSamples is the length of one processed A-scan.
	OutputSamples int
	// Bscans and Ascans are the volume shape from the formatter.
	Bscans, Ascans int
	// SampleStart and SampleStop are the formatter's depth crop of the
	// processed A-scans.
	SampleStart, SampleStop int
	// Stopping is closed when the engine is asked to stop: an endpoint
	// waiting on a user's lock gives up then instead of hanging Stop.
	Stopping <-chan struct{}
	// Fail reports an error found off the format goroutine (a storage
	// writer's failed write): the engine stops at once, posts the error
	// event and returns the error from Wait. Safe from any goroutine.
	Fail func(error)
}

// Endpoint receives formatted data on its own stream.
type Endpoint interface {
	// Prepare creates the endpoint's stream and buffers; nothing after.
	Prepare(info EndpointInfo) error
	// Stream is the stream formatting runs on. Users chain work on it.
	Stream() backend.Stream
	// Format enqueues the plan's actions for block b on Stream, after
	// making Stream wait on b.Ready (a device-side wait, never a host
	// wait). It may block the host only for backpressure: a tensor lock
	// held by a user, or a full storage queue. It returns ErrStopped when
	// it gave up because the engine is stopping.
	Format(b *BlockData, plan *FormatPlan) error
	// Flush waits until everything handed off the hot path (storage
	// writes) is finished; the engine calls it once the last block is
	// formatted, so that Wait returns with every completed volume stored.
	Flush() error
	// Close releases the stream and buffers.
	Close() error
}
