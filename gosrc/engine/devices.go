package engine

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// DeviceProcessor is implemented by processors bound to a device (a
// CUDAProcessor on its GPU). A processor on another device than the
// engine's is a remote processor: the engine uploads the raw spectra of
// the blocks it processes to its device (that device's own copy engine
// and link), runs it on slot streams of that device, and copies its
// outputs back into the block's buffers on the engine's device (a peer
// copy on the same stream), where the endpoints format them. With
// vortex's cycle([a, b]) over two GPUs, blocks alternate between the
// GPUs and each GPU's host link carries half of the raw data.
type DeviceProcessor interface {
	Device() backend.Device
}

// PeerAccessor is implemented by devices that can reach another device's
// memory directly (cuda.Device). The engine enables it both ways between
// its device and each remote processor's, so that the outputs' copies back
// go over the devices' own link (NVLink, or PCIe peer to peer) instead of
// staging through host memory, which would take host-link bandwidth from
// the uploads on both devices. Devices that cannot reach each other
// answer false, and the copies stay correct, staged.
type PeerAccessor interface {
	EnablePeerAccess(peer backend.Device) (bool, error)
}

// enablePeers enables direct access between a and b, each way a device
// supports it.
func enablePeers(a, b backend.Device) error {
	for _, p := range [][2]backend.Device{{a, b}, {b, a}} {
		if pa, ok := p[0].(PeerAccessor); ok {
			if _, err := pa.EnablePeerAccess(p[1]); err != nil {
				return err
			}
		}
	}
	return nil
}

// RawReader is implemented by endpoints that know whether they read the
// block's raw spectra on the engine's device (the spectra endpoints). The
// raw spectra of a block processed only by remote processors are uploaded
// to the engine's device too unless every endpoint says it does not read
// them; an endpoint without the method is assumed to.
type RawReader interface {
	ReadsRaw() bool
}

// Float32Optional is implemented by processors whose Process accepts
// out=0 (no float32 output) when they write the int8 one: the engine
// passes 0 when no endpoint fed by the processor reads the float32
// A-scans (ProcessedReader), saving the post kernel 4 bytes of device
// memory traffic per output sample and, for a remote processor, their
// copy back.
type Float32Optional interface {
	Float32Optional() bool
}

// ProcessedReader is implemented by endpoints that know whether they read
// the float32 A-scans (BlockData.Processed); an endpoint without the
// method is assumed to.
type ProcessedReader interface {
	ReadsProcessed() bool
}

// float32Wanted reports, per processor, whether its float32 output must
// be written: it cannot be skipped, or an endpoint of its formatters may
// read it.
func (e *Engine) float32Wanted() []bool {
	want := make([]bool, len(e.procs))
	for pi, p := range e.procs {
		if o, ok := p.(Float32Optional); !ok || !o.Float32Optional() {
			want[pi] = true
			continue
		}
		for _, r := range e.routes[pi] {
			for _, ep := range r.eps {
				want[pi] = want[pi] || mayRead([]Endpoint{ep.ep}, ProcessedReader.ReadsProcessed)
			}
		}
	}
	return want
}

// remoteDevice is a device of remote processors: its upload stream and
// slot streams, and the stream on the engine's device of its lane.
type remoteDevice struct {
	dev    backend.Device
	upload backend.Stream
	slots  []backend.Stream
	next   int // the slot of its next block
	// lanes are the engine-device streams of the blocks this device's
	// lanes take (a session uses the first, or one per slot:
	// RemoteLanesEnv): each waits for its blocks' outputs to come back, and
	// their formatting follows it. Streams of their own, so that the
	// engine's slots' blocks never wait behind another device's.
	lanes []backend.Stream
}

// remoteBuf is a remote processor's part of a block, on its device.
type remoteBuf struct {
	raw, out, out8  backend.Buffer
	uploaded, ready backend.Event
	// start is recorded on the device's upload stream before the raw
	// copy, on timed blocks only: with uploaded, the block's Upload time
	// when only remote processors process it (Engine.jobTiming).
	start             backend.Event
	rawBytes, outSize int // bytes of raw spectra, samples of output per record
}

// remoteProcessors reports whether a processor runs on another device than
// the engine's (as prepareDevices finds them; callable before it).
func (e *Engine) remoteProcessors() bool {
	for _, p := range e.procs {
		if dp, ok := p.(DeviceProcessor); ok && dp.Device() != nil && dp.Device() != e.dev {
			return true
		}
	}
	return false
}

// prepareDevices finds the processors on other devices than the engine's
// (DeviceProcessor), and makes each such device's streams: an upload
// stream and, for the blocks' slots (how many: slots), their streams
// (how many: streams; newSlotStreams).
func (e *Engine) prepareDevices(slots, streams int) error {
	e.procDev = make([]int, len(e.procs))
	for pi, p := range e.procs {
		e.procDev[pi] = -1
		dp, ok := p.(DeviceProcessor)
		if !ok || dp.Device() == nil || dp.Device() == e.dev {
			continue
		}
		d := dp.Device()
		idx := -1
		for k := range e.remote {
			if e.remote[k].dev == d {
				idx = k
			}
		}
		if idx < 0 {
			if err := enablePeers(e.dev, d); err != nil {
				return fmt.Errorf("engine.Prepare: processor #%d's device: peer access: %w", pi, err)
			}
			rd := remoteDevice{dev: d}
			var err error
			if rd.upload, err = d.NewStream(0); err != nil {
				return fmt.Errorf("engine.Prepare: processor #%d's device: upload stream: %w", pi, err)
			}
			e.remote = append(e.remote, rd) // released with the engine from here on
			if e.remote[len(e.remote)-1].slots, err = newSlotStreams(d, slots, streams); err != nil {
				return fmt.Errorf("engine.Prepare: processor #%d's device: slot stream: %w", pi, err)
			}
			for range slots {
				ln, err := e.dev.NewStream(0)
				if err != nil {
					return fmt.Errorf("engine.Prepare: processor #%d's device: its lane's stream: %w", pi, err)
				}
				e.remote[len(e.remote)-1].lanes = append(e.remote[len(e.remote)-1].lanes, ln)
			}
			idx = len(e.remote) - 1
		}
		e.procDev[pi] = idx
	}
	e.rawOnEngine = e.needsRaw()
	e.wantFloat = e.float32Wanted()
	return nil
}

// needsRaw reports whether some endpoint may read the raw spectra on the
// engine's device.
func (e *Engine) needsRaw() bool { return mayRead(e.endpoints, RawReader.ReadsRaw) }

// newRemoteBufs allocates block b's buffers of the remote processors.
func (e *Engine) newRemoteBufs(b *Block, records int, outSamples []int) error {
	b.rem = make([]remoteBuf, len(e.procs))
	for pi, di := range e.procDev {
		if di < 0 {
			continue
		}
		d := e.remote[di].dev
		r := &b.rem[pi]
		r.rawBytes, r.outSize = records*e.acqs[e.procAcq[pi]].raw*2, outSamples[pi]
		var err error
		if r.raw, err = d.Alloc(r.rawBytes); err != nil {
			return fmt.Errorf("engine: block raw buffer of %d bytes on processor #%d's device: %w", r.rawBytes, pi, err)
		}
		if r.out, err = d.Alloc(records * r.outSize * 4); err != nil {
			return fmt.Errorf("engine: block float32 output on processor #%d's device: %w", pi, err)
		}
		if r.out8, err = d.Alloc(records * r.outSize); err != nil {
			return fmt.Errorf("engine: block int8 output on processor #%d's device: %w", pi, err)
		}
		if r.uploaded, err = d.NewEvent(b.timed); err != nil {
			return fmt.Errorf("engine: block event on processor #%d's device: %w", pi, err)
		}
		if b.timed {
			if r.start, err = d.NewEvent(true); err != nil {
				return fmt.Errorf("engine: block event on processor #%d's device: %w", pi, err)
			}
		}
		if r.ready, err = d.NewEvent(false); err != nil {
			return fmt.Errorf("engine: block event on processor #%d's device: %w", pi, err)
		}
	}
	return nil
}

// freeRemote releases the remote buffers of b.
func (b *Block) freeRemote() error {
	var errs []error
	for _, r := range b.rem {
		for _, buf := range []backend.Buffer{r.raw, r.out, r.out8} {
			if buf != nil {
				errs = append(errs, buf.Free())
			}
		}
		for _, ev := range []backend.Event{r.uploaded, r.ready, r.start} {
			if ev != nil {
				errs = append(errs, ev.Close())
			}
		}
	}
	b.rem = nil
	return errors.Join(errs...)
}

// processRemote enqueues processor pi of block b on its device: the raw
// upload on that device's upload stream, the processing on one of its
// slot streams, the outputs copied back to the block's buffers on the
// engine's device on the same stream, and its ready event, on which
// local (a stream of the engine's device: a slot's, or the remote device's
// lane) then waits on the device. Nothing here waits on the host. Each of
// the device's processor slots has one caller at a time: with b.remSlot < 0
// one goroutine calls it for the whole device (the process loop, the
// acquire loop inline, or the device's one lane, which route hands every
// block of that device's processors), and the slot rotation (next) is that
// goroutine's; with a lane per slot (RemoteLanesEnv) each lane calls its
// own slot, b.remSlot, and the processors' tickets keep their order.
func (e *Engine) processRemote(pi int, b *Block, local backend.Stream) error {
	rd := &e.remote[e.procDev[pi]]
	r := &b.rem[pi]
	raw := &b.raws[e.procAcq[pi]]
	n := b.Records * raw.values * 2
	if b.timed {
		if err := rd.upload.Record(r.start); err != nil {
			return fmt.Errorf("engine: block %d: processor #%d: recording start event: %w", b.ID, pi, err)
		}
	}
	if err := rd.upload.Copy(r.raw.Ptr(), raw.src, n); err != nil {
		return fmt.Errorf("engine: block %d: upload to processor #%d's device: %w", b.ID, pi, err)
	}
	if err := rd.upload.Record(r.uploaded); err != nil {
		return fmt.Errorf("engine: block %d: processor #%d: %w", b.ID, pi, err)
	}
	slot := b.remSlot
	if slot < 0 { // the device's rotation: one goroutine calls this device's processors
		slot = rd.next
		rd.next = (rd.next + 1) % len(rd.slots)
	}
	st := rd.slots[slot]
	if err := st.WaitEvent(r.uploaded); err != nil {
		return fmt.Errorf("engine: block %d: processor #%d: %w", b.ID, pi, err)
	}
	out := r.out.Ptr()
	if !e.wantFloat[pi] {
		out = 0
	}
	var err error
	if b.ticketed[pi] { // its place in the processor's order, taken in block order (route)
		b.ticketed[pi] = false
		err = e.procs[pi].(OrderedProcessor).ProcessTicket(b.tickets[pi], slot, st, r.raw.Ptr(), b.Records, out, r.out8.Ptr())
	} else {
		err = e.procs[pi].Process(slot, st, r.raw.Ptr(), b.Records, out, r.out8.Ptr())
	}
	if err != nil {
		return fmt.Errorf("engine: block %d: processor #%d: %w", b.ID, pi, err)
	}
	m := b.Records * r.outSize
	var errFloat error
	if out != 0 {
		errFloat = st.Copy(b.processed[pi].Ptr(), out, m*4)
	}
	if err := errors.Join(errFloat, st.Copy(b.int8s[pi].Ptr(), r.out8.Ptr(), m)); err != nil {
		return fmt.Errorf("engine: block %d: processor #%d: copying its output to the engine's device: %w", b.ID, pi, err)
	}
	if err := st.Record(r.ready); err != nil {
		return fmt.Errorf("engine: block %d: processor #%d: %w", b.ID, pi, err)
	}
	if err := local.WaitEvent(r.ready); err != nil { // a device-side wait across devices
		return fmt.Errorf("engine: block %d: processor #%d: %w", b.ID, pi, err)
	}
	return nil
}

// releaseRemote closes the remote devices' streams.
func (e *Engine) releaseRemote() error {
	var errs []error
	for _, rd := range e.remote {
		for _, st := range append([]backend.Stream{rd.upload}, rd.lanes...) {
			if st != nil {
				errs = append(errs, st.Close())
			}
		}
		errs = append(errs, closeSlotStreams(rd.slots))
	}
	e.remote = nil
	return errors.Join(errs...)
}
