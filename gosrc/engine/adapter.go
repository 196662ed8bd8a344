package engine

import (
	"errors"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// This file holds every stage contract, as vortex keeps them in one header
// (engine/adapter.hpp): acquisition, IO, processor, formatter and endpoint.

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
	// run of up to maxRecords records it lends is contiguous. An error
	// wrapping ErrNoLend declines: the engine then fills this source's
	// blocks with Fill, as for a source that never lends.
	PinTo(dev backend.Device, maxRecords int) error
	// Lend returns the address of the next records raw spectra (or fewer,
	// n, at the end of the data) in pinned memory, with Fill's rate limit,
	// end-of-data (io.EOF) and stop semantics. The memory must stay valid
	// and unchanged until the upload from it completes; a replay ring that
	// is never rewritten satisfies that for its whole life.
	Lend(records int) (src uintptr, n int, err error)
}

// Poster is an optional extension of Acquisition for sources that DMA
// straight into the engine's blocks, as a digitizer does (vortex's Alazar
// acquisition posts each block's buffer to the board): the engine posts a
// block's pinned raw buffer when it takes the block from its pool, up to
// the preload depth (IOConfig's, Config.PreloadCount) ahead of the block
// it fills, so the hardware always has buffers queued while earlier
// blocks are processed; the source's Fill of a block then waits for the
// oldest posted buffer, which is that block's. No host copy is made.
type Poster interface {
	// Post queues dst, a block's whole pinned raw buffer (RecordsPerBlock
	// records; Fill may later ask for fewer, at the end of a run), to be
	// filled by the hardware. The engine calls it on its acquire goroutine,
	// in block order, after Start. A posted buffer belongs to the source
	// until its Fill returns or Stop returns: Stop must abandon every
	// buffer still posted (no write into it after Stop returns), because
	// the engine reuses the blocks of a stopped session.
	Post(dst []uint16) error
}

// DeviceUnpacker is an optional extension of Acquisition for sources
// whose raw values arrive packed narrower than 16 bits: a line-scan
// camera's Mono8, Mono10p or Mono12p frame (GenICamAcquisition). The
// engine then uploads the packed bytes as they landed (Mono12p: 3/4 of the
// uint16 bytes over the bus) and widens them on the device
// (ops.UnpackBits, on the upload stream), so the host never touches the
// pixels; without the extension, or when the engine cannot (a processor
// on another device reads the acquisition's raw spectra from the host),
// the source widens each block on the host in Fill, as before.
type DeviceUnpacker interface {
	// Packing is the layout of a filled block of RecordsPerBlock records
	// (SamplesPerRecord values each): bits per value (8 to 16) and the
	// byte offset in the block's raw host buffer where the packed values
	// start; ok is false when the blocks hold uint16 values already.
	Packing() (bits, offset int, ok bool)
	// SetUnpackOnDevice says, at Prepare, whether the engine widens the
	// blocks on the device (Fill then leaves them packed) or not (Fill
	// widens them on the host).
	SetUnpackOnDevice(on bool)
}

// FrameCounter is an optional extension of Acquisition for sources that
// receive frames (a camera: GenICamAcquisition): the engine's Status sums
// their counts, so dropped and incomplete frames show beside its blocks.
type FrameCounter interface {
	// FrameCounts are the current (or last) session's frames.
	FrameCounts() FrameCounts
}

// FrameCounts are a frame source's counters for one session.
type FrameCounts struct {
	// Received counts the frames the source received, incomplete ones too.
	Received int64
	// Dropped counts the frames the source never received (no buffer was
	// queued, or the link lost them).
	Dropped int64
	// Incomplete counts the frames received with missing data.
	Incomplete int64
}

// ErrNoLend is wrapped by a Lender's PinTo that does not lend on this
// device or with this configuration (a FileAcquisition on the CPU backend,
// whose upload is a copy anyway, or of a big-endian file, whose values must
// be swapped): the engine fills the source's blocks with Fill instead.
var ErrNoLend = errors.New("the source does not lend its memory here")

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

// OrderedProcessor is a Processor whose blocks must reach the device in
// the order the engine acquired them, whichever goroutine submits them:
// it carries state from block to block (CUDAProcessor's rolling average).
// With several slot streams the engine submits each slot's blocks from a
// goroutine of its own (at small blocks one goroutine's driver calls, not
// the device, were the limit): it takes each block's Ticket in block
// order, then hands the ticket to ProcessTicket, which waits for the
// earlier tickets' ordered part before its own. Every ticket taken must
// reach ProcessTicket or SkipTicket exactly once, or the later ones wait
// forever.
type OrderedProcessor interface {
	Processor
	// Ticket reserves the next place in the processor's block order.
	Ticket() uint64
	// ProcessTicket is Process in the place of ticket.
	ProcessTicket(ticket uint64, slot int, s backend.Stream, in uintptr, records int, out uintptr, outInt8 uintptr) error
	// SkipTicket gives the place of ticket up (its block is not processed).
	SkipTicket(ticket uint64)
	// SetTurnWindow sets how long a ProcessTicket polls for its turn
	// before it parks (0: at once); the engine sets it at each Start.
	SetTurnWindow(window time.Duration)
}

// DoneFormatter is an Endpoint that can record the engine's done event of
// a block itself, as the last step of its formatting on its stream: a
// tensor endpoint replaying a graph of the block's formatting records it
// there, one driver call where the engine's record would be a second
// (issue 29).
type DoneFormatter interface {
	// FormatDone is Format with done, the event the engine records on the
	// endpoint's stream after the block's last part (nil for the other
	// parts); recorded reports whether the endpoint did record it. It is
	// false on an error: the engine then records done after whatever was
	// queued.
	FormatDone(b *BlockData, plan *FormatPlan, done backend.Event) (recorded bool, err error)
}

// Formatter is vortex's format planner: fed each block's markers in order,
// it plans where the block's records go and which segments, volumes and
// scans finish. *format.FormatPlanner is the formatter; its plan is what
// the formatter's endpoints execute with their executors.
type Formatter interface {
	// Next replaces plan's actions with the plan for the block of
	// blockLength records starting at blockSample, whose markers (sorted
	// by sample, all inside the block) are given.
	Next(plan *FormatPlan, blockSample int64, blockLength int, markers []marker.Marker) error
	// Finish replaces plan's actions with the notifications still pending
	// at the end of the stream (the engine calls it after the last block).
	Finish(plan *FormatPlan) error
	// SegmentsPerVolume and RecordsPerSegment are the planner's shape,
	// from which stack endpoints size their volume by default.
	SegmentsPerVolume() int
	RecordsPerSegment() int
}

// FormatPlan is the reusable list of actions for one block (vortex's
// format plan, produced by the Formatter).
type FormatPlan = format.FormatPlan

// Action is one step of a FormatPlan: a Copy, or a notification
// (FinishSegment, FinishVolume, FinishScan) or an Event marker passed on.
type Action = format.Action

// IOInfo is what Engine.Prepare tells an IO.
type IOInfo struct {
	// RecordsPerBlock is the largest block.
	RecordsPerBlock int
	// OutputChannels is Config.GalvoOutputChannels: the columns of
	// IOBlock.GalvoTarget.
	OutputChannels int
	// InputChannels is Config.GalvoInputChannels: the columns of
	// IOBlock.GalvoActual.
	InputChannels int
	// LeadSamples is the IO's lead (IOConfig.LeadSamples).
	LeadSamples int
}

// IOBlock is one block's waveforms as an IO sees them. The slices belong to
// the engine's preallocated block: valid during Next only.
type IOBlock struct {
	// ID counts blocks since the engine started.
	ID int64
	// Sample is the acquisition sample of the block's first record.
	Sample int64
	// Records is the number of samples in the block.
	Records int
	// GalvoTarget is (Records, OutputChannels) row-major: the scan queue's
	// waveform shifted LeadSamples earlier, so that an IO whose hardware
	// lags by its lead puts the galvos where the acquisition expects them
	// (vortex's galvo_target for this lead).
	GalvoTarget []float64
	// GalvoActual is (Records, InputChannels) row-major: an IO that
	// measures the galvos writes the measured positions here (vortex's
	// galvo_actual); the engine reads it after the acquisition's Fill of
	// the same block returns, then uploads it with the block.
	GalvoActual []float64
	// Strobes is (Records) digital words, bit Line of each driven by the
	// Config's strobes (vortex's strobes stream), shifted by the same
	// lead as GalvoTarget.
	Strobes []uint32
}

// IO outputs the generated waveforms and reads back positions: vortex's
// io adapter (a DAQ card driving galvos). A driver is one package that
// implements it; package io has NullIO and a simulated galvo IO.
type IO interface {
	// Prepare is called once by Engine.Prepare; allocate here, nothing
	// after.
	Prepare(info IOInfo) error
	// Start begins output; the engine calls it once the preload blocks
	// have been handed over (IOConfig), non-masters before masters.
	Start() error
	// Stop ends output; called once when the run ends.
	Stop() error
	// Next hands over the next block's waveforms in order. It may block for
	// backpressure (a full output buffer) but must return once Stop is
	// called.
	Next(b *IOBlock) error
}

// IOConfig is how an IO is wired (vortex's add_io arguments).
type IOConfig struct {
	// LeadSamples is how many samples earlier than the acquisition this IO
	// receives the waveform.
	LeadSamples int
	// Preload: the IO accepts blocks before it is started (the first
	// PreloadCount blocks); otherwise they are handed to it right after
	// Start.
	Preload bool
	// Master IOs are started after all others (a master clocks the rest).
	Master bool
}

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
	// Sample is the acquisition sample of the block's first record.
	Sample int64
	// Target and Actual are the block's commanded and measured galvo
	// positions on the device, one row per record (vortex's sample_target
	// and sample_actual), for PositionFormatExecutor.
	Target, Actual format.DevicePositions
	// Processed holds float32 A-scans, OutputSamples each.
	Processed uintptr
	// Int8 holds the int8 rendering of the A-scans.
	Int8 uintptr
	// OutputSamples is the length of one processed A-scan.
	OutputSamples int
	// Ready completes when the upload and processing of the block are done.
	Ready backend.Event
	// Stream is the stream the block was processed on, where Ready is
	// recorded; nil for a block no processor ran on (dropped, or one that
	// only finishes the planner). An endpoint may enqueue its formatting
	// there, in stream order after the processing, instead of on its own
	// stream (see endpoint.StackTensorEndpoint.Format for why, and why not
	// on the CPU backend); it then orders its own stream after that work,
	// for the work users chain on it. Endpoints must only read the block's
	// own buffers from it.
	Stream backend.Stream
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
	// SegmentsPerVolume and RecordsPerSegment are the formatter's shape.
	SegmentsPerVolume, RecordsPerSegment int
	// BlocksPerSlot is how many of the engine's blocks each processor
	// slot cycles (BlocksToAllocate / Slots; slots sharing a stream from
	// 2 MiB blocks, that stream cycles a multiple): with few, a block's round
	// trip through the stages sets the pace, and an endpoint may trade
	// device time for driver calls (StackTensorEndpoint's formatting
	// graphs). 0: not known (an endpoint driven without an engine), the
	// choices for many blocks.
	BlocksPerSlot int
	// Slots is how many processor slots the engine runs (0: not known):
	// with one, a block's formatting on the slot stream would hold the
	// next block's processing behind it.
	Slots int
	// Leads are the distinct IO leads the engine generates waveforms for
	// (EngineConfig.add_io's lead_samples), sorted, 0 first (vortex's
	// io_lead_samples). An endpoint that stores the streams of a lead
	// finds its index here for BlockData.HostStreamsLead; nil (an
	// endpoint driven without an engine) means lead 0 only.
	Leads []int
	// Stopping is closed when the engine is asked to stop: an endpoint
	// waiting on a user's lock gives up then instead of hanging Stop. The
	// engine passes nil (never closed) and gives each session's channel
	// to endpoints that implement SessionEndpoint; a caller driving an
	// endpoint without an engine may pass its own.
	Stopping <-chan struct{}
	// Fail reports an error found off the format goroutine (a storage
	// writer's failed write): the engine stops at once, posts the error
	// event and returns the error from Wait. Safe from any goroutine.
	Fail func(error)
}

// SessionEndpoint is implemented by endpoints that wait on their users
// (a tensor lock): the engine calls BeginSession at every Start, before
// the session's stages run, with the channel closed when that session is
// asked to stop.
type SessionEndpoint interface {
	BeginSession(stopping <-chan struct{})
}

// SessionChecker is implemented by endpoints whose store the user may
// reopen between sessions (a storage opened with another shape): the
// engine calls CheckSession at every Start, before anything of the session
// runs, and refuses the Start with its error, so nothing is written in a
// layout the store no longer has.
type SessionChecker interface {
	CheckSession() error
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
