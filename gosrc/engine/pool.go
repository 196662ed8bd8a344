package engine

import (
	"errors"
	"fmt"
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/guard"
	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
)

// The block pool has two sides. The host side is Config.BlocksToAllocate
// sets of pinned memory for the acquisitions' raw spectra (hostSet), vortex's
// blocks as a user sizes them: the memory a digitizer DMAs into and a source
// fills. The device side is the Blocks (their device buffers, events,
// waveforms and markers), which cycle through the pipeline: at least
// BlocksToAllocate of them, more on a GPU with small blocks (poolBlocks). A
// block holds a host set from the moment the acquire loop takes it until its
// upload is queued (Block.host); the set then goes back to the acquire loop,
// which waits for that upload before anything writes into it again
// (takeHost). So the acquisition's memory is back in use once its upload is
// done, not once the block's processing and formatting are, and the blocks
// on the device are as many as the pipeline needs to overlap its stages.

// DeviceBlocksEnv is the environment variable that sets how many blocks the
// engine cycles on the device: n >= blocks_to_allocate (fewer count as
// blocks_to_allocate, 0 included, which turns the deeper ring off); unset,
// the engine picks (defaultPoolBlocks). The acquisitions' pinned memory stays
// blocks_to_allocate blocks whatever it says. Read at each Prepare from the
// live environment.
const DeviceBlocksEnv = "VORTEXGO_DEVICE_BLOCKS"

// deepBlocks is how many blocks a GPU engine cycles on the device below
// sharedSlotBytes of raw spectra a block (defaultPoolBlocks). Why: with
// vortex's 4 blocks a 256-record block's round trip (acquire, upload,
// process, format, wait for the device, back to the pool) sets the rate,
// not the copy: a plain loop built as the engine is, a ring of 4 with the
// formatting on a second thread and a third waiting for each block, took
// 19-21 us a block at 256 x 1024 where the copy alone takes 12; with a ring
// of 32 every arrangement ran at 12.1-12.3 (gosrc/cuda's
// BenchmarkFormatBeside, H200, docs/bench.md "Session 49"). 32 blocks below
// 2 MiB of raw spectra are at most 64 MiB of raw spectra on the device plus
// their outputs (bounded by blockShape.check with the rest of the pool).
const deepBlocks = 32

// deviceBlocksAsked reads DeviceBlocksEnv: the count it asks for, -1 when
// unset. A value that is not a count is an error naming the variable.
func deviceBlocksAsked() (int, error) {
	return countAsked(DeviceBlocksEnv, "blocks", "blocks_to_allocate")
}

// poolBlocks is how many blocks the engine cycles for blocks blocks to
// allocate: asked (deviceBlocksAsked) when at least blocks, up to MaxBlocks;
// blocks for smaller counts; -1 defaultPoolBlocks.
func poolBlocks(asked int, kind backend.Kind, blocks, blockBytes int, remote bool) int {
	if asked < 0 {
		return defaultPoolBlocks(kind, blocks, blockBytes, remote)
	}
	return min(max(asked, blocks), MaxBlocks)
}

// defaultPoolBlocks is the blocks cycled without DeviceBlocksEnv: deepBlocks
// on a GPU below sharedSlotBytes of raw spectra a block, and up to it with
// processors on other devices (remote), else blocks. The CPU backend's
// blocks are host memory and its stages do not pay a round trip's wake-ups
// the way a GPU's driver calls do: there the pool stays as the user sized
// it. Processors on other devices get the ring too: their uploads are
// queued with the block's (dispatchProcess), so the host set goes back then,
// and their longer round trip (upload there, process, copy back) needs the
// depth more. Measured on two H200s (docs/bench.md "Session 51"): 2048 x
// 512 blocks (2 MiB) at vortex's 4 blocks ran 1.20x one GPU, 1.91x with 32
// on the device; one GPU is at its link there with 4 (0.99-1.00 in the
// sweeps).
func defaultPoolBlocks(kind backend.Kind, blocks, blockBytes int, remote bool) int {
	if kind == backend.CUDA && (blockBytes < sharedSlotBytes || remote && blockBytes <= sharedSlotBytes) {
		return max(blocks, deepBlocks)
	}
	return blocks
}

// hostSet is one block's pinned host memory for the acquisitions' raw
// spectra: a buffer per acquisition that fills (nil for one that lends its
// own memory, Lender).
type hostSet struct {
	bufs []backend.Buffer
	// after is the events of the uploads that last read the set (the
	// engine's, and those to processors on other devices; empty: none in
	// flight): the acquire loop waits for them before the set is written
	// again (takeHost). Set by whoever gives the set back, before the send
	// on Engine.hosts that hands it over.
	after []backend.Event
}

// newHostSet allocates one host set for sh's acquisitions; on error it
// frees what it allocated.
func newHostSet(dev backend.Device, sh blockShape) (h *hostSet, err error) {
	h = &hostSet{bufs: make([]backend.Buffer, len(sh.rawSamples))}
	for a, rs := range sh.rawSamples {
		// A lending source uploads from its own pinned memory: a host
		// buffer would only hold pinned memory (scarce, and blocks x
		// block bytes of it) that nothing ever writes.
		if sh.lends(a) {
			continue
		}
		n := sh.records * rs * 2
		if h.bufs[a], err = dev.AllocPinned(n); err != nil {
			return nil, errors.Join(fmt.Errorf("engine: block host buffer of %d bytes (acquisition #%d): %w", n, a, err), h.free())
		}
	}
	return h, nil
}

// free releases the set's buffers, joining the errors.
func (h *hostSet) free() error {
	var errs []error
	for _, b := range h.bufs {
		if b != nil {
			errs = append(errs, b.Free())
		}
	}
	h.bufs = nil
	return errors.Join(errs...)
}

// lends reports whether acquisition a of sh lends its own pinned memory
// (Lender): it needs no host buffer.
func (sh blockShape) lends(a int) bool { return a < len(sh.lent) && sh.lent[a] }

// needsHost reports whether some acquisition of sh fills host memory (does
// not lend): only then does the engine keep host sets.
func (sh blockShape) needsHost() bool {
	for a := range sh.rawSamples {
		if !sh.lends(a) {
			return true
		}
	}
	return false
}

// preparePool allocates the pool for shape sh: n blocks (with their buffers
// on the remote processors' devices), and the host sets of
// Config.BlocksToAllocate when an acquisition fills host memory. A block
// past the first least that cannot be allocated, on any device, ends the
// pool there without an error (Engine.poolSize then says how many it holds):
// the deeper ring the engine picks itself is a speed-up nobody asked for,
// and devices with room for the blocks the user allocated must not fail
// prepare() for it.
func (e *Engine) preparePool(sh blockShape, n, least int) error {
	cfg := &e.cfg
	if err := sh.check(n); err != nil {
		return err
	}
	if sh.needsHost() {
		e.hosts = make(chan *hostSet, cfg.BlocksToAllocate)
		for range cfg.BlocksToAllocate {
			h, err := newHostSet(e.dev, sh)
			if err != nil {
				return err
			}
			e.hostSets = append(e.hostSets, h)
			e.hosts <- h
		}
	}
	e.free = make(chan *Block, n)
	for i := range n {
		timed := e.dev.Kind() != backend.CUDA || (cfg.DeviceTimings && i%timingEvery == 0)
		b, err := newBlock(e.dev, sh, timed)
		if err != nil {
			if i >= least {
				break // newBlock freed what it had allocated
			}
			return err
		}
		if err := e.newRemoteBufs(b, cfg.RecordsPerBlock, sh.outSamples); err != nil {
			if ferr := errors.Join(b.free(), b.freeRemote()); i < least || ferr != nil {
				return errors.Join(err, ferr)
			}
			break
		}
		e.blocks = append(e.blocks, b)
		e.free <- b
	}
	e.poolSize = len(e.blocks)
	return nil
}

// takeHost gives block b a host set for its raw spectra, once the upload
// that last read the set is done; false when the engine stops first (b
// holds none then). A block already holding one keeps it.
//
// The wait is the acquisition's own: the set is about to be written, and
// the copy engine may still be reading it. With as many blocks as host sets
// the upload is long done (a block came back from the device first): one
// cuEventQuery. With a deeper device ring it is the bound that keeps the
// acquisition's memory safe, and a short one: an upload queued blocks ago.
func (e *Engine) takeHost(s *session, b *Block) bool {
	if e.hosts == nil || b.host != nil {
		return true
	}
	h, stopped := spin.RecvOr(s.hostWait, e.hosts, s.stopping)
	if stopped {
		return false
	}
	for _, ev := range h.after {
		if err := waitEvent(s.hostWait.Window(), ev); err != nil {
			h.after = h.after[:0]
			e.hosts <- h // cannot block: the channel has room for every set
			e.failPipeline(s, fmt.Errorf("engine: block %d: waiting for the upload of its host memory: %w", b.ID, err))
			return false
		}
	}
	h.after = h.after[:0]
	b.host = h
	for a := range b.raws {
		r := &b.raws[a]
		r.hostBuf = h.bufs[a]
		r.host = nil
		if r.hostBuf != nil {
			r.host = hostUint16(r.hostBuf.Ptr(), r.hostBuf.Size()/2)
		}
	}
	return true
}

// giveHost hands block b's host set back to the acquire loop, to be
// written once the uploads that read it are done: the engine's (local; nil:
// none) and, with remote, those of b's processors on other devices (an event
// never recorded counts as done; one recorded again since, for a later
// upload on the same stream, completes after it). Without either, nothing
// reads the set any more.
func (e *Engine) giveHost(b *Block, local backend.Event, remote bool) {
	h := b.host
	if h == nil {
		return
	}
	b.host = nil
	for a := range b.raws {
		b.raws[a].hostBuf, b.raws[a].host = nil, nil
	}
	h.after = h.after[:0]
	if local != nil {
		h.after = append(h.after, local)
	}
	if remote {
		for pi, on := range b.active {
			if on && e.procDev[pi] >= 0 {
				h.after = append(h.after, b.rem[pi].uploaded)
			}
		}
	}
	e.hosts <- h // cannot block: the channel has room for every set
}

// toPool returns block b to the pool, with its host set if it still holds
// one: nothing reads that set any more (b's device work is done, or its
// upload was never queued).
func (e *Engine) toPool(b *Block) {
	e.giveHost(b, nil, false)
	e.free <- b // cannot block: the pool has room for every block
}

// reclaimHosts gives back the host sets a panicking stage left on its
// blocks; called by reclaimBlocks once the blocks' device work is done.
func (e *Engine) reclaimHosts() {
	if e.hosts == nil {
		return
	}
	for len(e.hosts) > 0 {
		<-e.hosts
	}
	for _, b := range e.blocks {
		b.host = nil
	}
	for _, h := range e.hostSets {
		for _, ev := range h.after {
			_ = guard.Call("engine: reclaiming a host set", ev.Synchronize)
		}
		h.after = h.after[:0]
		e.hosts <- h
	}
}

// releaseHosts frees the host sets (Close).
func (e *Engine) releaseHosts() error {
	var errs []error
	for _, h := range e.hostSets {
		errs = append(errs, h.free())
	}
	e.hostSets, e.hosts = nil, nil
	return errors.Join(errs...)
}

// waitEvent waits for ev: polling its state for up to window (the copy of
// one block is microseconds), then in cuEventSynchronize.
func waitEvent(window time.Duration, ev backend.Event) error {
	var err error
	if spin.Until(window, func() bool {
		done, qerr := ev.Query()
		err = qerr
		return done || qerr != nil
	}) {
		return err
	}
	return ev.Synchronize()
}
