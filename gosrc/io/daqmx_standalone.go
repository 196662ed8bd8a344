package io

import (
	"errors"
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
)

// vortex's standalone IO calls on a DAQmxIO (bind/io.hpp's setup_io:
// prepare, start, stop, next and next_async outside an engine), and the
// block processing they share with the engine's Next (vortex's
// daqmx_io_t::_dispatch_block and _process_block).

// DAQmxStream is one stream of a block (vortex's cpu_view_t): Dims axes;
// when Dims is 2, Rows x Cols values of the stream's element type,
// row-major, in Data.
type DAQmxStream[T float64 | uint32 | uint64] struct {
	Data       []T
	Dims       int
	Rows, Cols int
}

// DAQmxStreams are one block's six streams in vortex's order
// (Block.StreamIndex: StreamCounter ... StreamStrobes) and element types
// (vortex-python's engine: counter size_t, analog double, digital
// uint32): a channel's Stream picks one, its Channel a column. Output
// channels read their stream, input channels fill theirs.
type DAQmxStreams struct {
	Counter                                              DAQmxStream[uint64]
	GalvoTarget, SampleTarget, GalvoActual, SampleActual DAQmxStream[float64]
	Strobes                                              DAQmxStream[uint32]
}

const streamCount = 6

// analog is the float64 stream an analog channel names (vortex's
// select<analog_element_t>, with its messages).
func (s *DAQmxStreams) analog(ch DAQmxChannel) (*DAQmxStream[float64], error) {
	switch ch.Stream {
	case StreamGalvoTarget:
		return &s.GalvoTarget, nil
	case StreamSampleTarget:
		return &s.SampleTarget, nil
	case StreamGalvoActual:
		return &s.GalvoActual, nil
	case StreamSampleActual:
		return &s.SampleActual, nil
	}
	return nil, streamMismatch(ch, "a float64 stream: GalvoTarget (1), SampleTarget (2), GalvoActual (3) or SampleActual (4)")
}

// digital is the uint32 stream a digital channel names.
func (s *DAQmxStreams) digital(ch DAQmxChannel) (*DAQmxStream[uint32], error) {
	if ch.Stream == StreamStrobes {
		return &s.Strobes, nil
	}
	return nil, streamMismatch(ch, "the uint32 stream Strobes (5)")
}

func streamMismatch(ch DAQmxChannel, want string) error {
	if ch.Stream < 0 || ch.Stream >= streamCount {
		return backend.Invalidf("tuple index out of bounds: %s %s reads stream %d, expected %s", ch.Kind, ch.Name,
			ch.Stream, want)
	}
	return backend.Invalidf("tuple condition failed to match at target index: %s %s reads stream %s (%d), expected %s",
		ch.Kind, ch.Name, streamName(ch.Stream), ch.Stream, want)
}

// checkStream is vortex's _check_buffer: a 2-D stream with at least
// samples rows and a column ch.Channel.
func checkStream[T float64 | uint32 | uint64](s *DAQmxStream[T], samples int, ch DAQmxChannel) error {
	if s.Dims != 2 {
		return backend.Invalidf("stream of dimension 2 is required: %d (%s %s, stream %s)", s.Dims, ch.Kind, ch.Name,
			streamName(ch.Stream))
	}
	if samples > s.Rows || ch.Channel < 0 || ch.Channel >= s.Cols || len(s.Data) < s.Rows*s.Cols {
		return backend.Invalidf("stream is incorrectly sized: [%d x %d] vs [:%d,%d] (%s %s, stream %s)", s.Rows, s.Cols,
			samples, ch.Channel, ch.Kind, ch.Name, streamName(ch.Stream))
	}
	return nil
}

// checkCount is vortex's check of a block's length.
func (d *DAQmxIO) checkCount(count int) error {
	c := &d.cfg
	if count < 0 {
		return backend.Invalidf("count=%d, expected samples >= 0", count)
	}
	if count > c.SamplesPerBlock {
		return backend.Invalidf("block is larger than maximum configured size: %d > %d", count, c.SamplesPerBlock)
	}
	if div := c.ClockDivisor; count%div != 0 {
		return backend.Invalidf("block size (%d) is not evenly divisible by clock divisor (%d): %d != 0", count, div,
			count%div)
	}
	return nil
}

// checkStreams checks every channel's stream before any sample moves
// (vortex checks each as it copies, an input's after the read).
func (d *DAQmxIO) checkStreams(count int, s *DAQmxStreams) error {
	for _, ch := range d.cfg.Channels {
		var err error
		if ch.Kind.analog() {
			var a *DAQmxStream[float64]
			if a, err = s.analog(ch); err == nil {
				err = checkStream(a, count, ch)
			}
		} else {
			var g *DAQmxStream[uint32]
			if g, err = s.digital(ch); err == nil {
				err = checkStream(g, count, ch)
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// process moves one block of count samples through task t (the caller
// holds blockMu and checked count): every ClockDivisor-th sample of the
// output streams to the card (analog values scaled to volts and clipped
// to the channel's limits), then the inputs read back into their streams,
// each card sample repeated ClockDivisor times (analog values scaled from
// volts).
func (d *DAQmxIO) process(t *daqmx.Task, count int, s *DAQmxStreams) error {
	if err := d.checkStreams(count, s); err != nil {
		return err
	}
	c := &d.cfg
	div := c.ClockDivisor
	daq := count / div
	d.mu.Lock()
	aoBuf, aiBuf, doBuf, diBuf := d.aoBuf, d.aiBuf, d.doBuf, d.diBuf
	d.mu.Unlock()
	if w := len(d.ao); w > 0 {
		for j, ch := range d.ao {
			src, _ := s.analog(ch)
			for k := 0; k < daq; k++ {
				v := src.Data[k*div*src.Cols+ch.Channel] / ch.LogicalUnitsPerPhysicalUnit
				aoBuf[k*w+j] = math.Min(math.Max(v, ch.Min), ch.Max)
			}
		}
		if err := t.WriteAnalog(daq, w, aoBuf[:daq*w], c.ReadWriteTimeout); err != nil {
			return err
		}
	}
	if w := len(d.do); w > 0 {
		for j, ch := range d.do {
			src, _ := s.digital(ch)
			for k := 0; k < daq; k++ {
				doBuf[k*w+j] = src.Data[k*div*src.Cols+ch.Channel]
			}
		}
		if err := t.WriteDigital(daq, w, doBuf[:daq*w], c.ReadWriteTimeout); err != nil {
			return err
		}
	}
	if w := len(d.ai); w > 0 {
		if err := t.ReadAnalog(daq, w, aiBuf[:daq*w], c.ReadWriteTimeout); err != nil {
			return err
		}
		for j, ch := range d.ai {
			dst, _ := s.analog(ch)
			for k := 0; k < daq; k++ {
				v := aiBuf[k*w+j] * ch.LogicalUnitsPerPhysicalUnit
				for r := k * div; r < (k+1)*div; r++ {
					dst.Data[r*dst.Cols+ch.Channel] = v
				}
			}
		}
	}
	if w := len(d.di); w > 0 {
		if err := t.ReadDigital(daq, w, diBuf[:daq*w], c.ReadWriteTimeout); err != nil {
			return err
		}
		for j, ch := range d.di {
			dst, _ := s.digital(ch)
			for k := 0; k < daq; k++ {
				for r := k * div; r < (k+1)*div; r++ {
					dst.Data[r*dst.Cols+ch.Channel] = diBuf[k*w+j]
				}
			}
		}
	}
	return nil
}

// standalone refuses a standalone call on a closed IO, or while an engine
// that prepared it has not finished its run.
func (d *DAQmxIO) standalone(op string) error {
	if err := d.claim.Err("io: DAQmxIO." + op); err != nil {
		return err
	}
	if d.claim.InUse() {
		return fmt.Errorf("io: DAQmxIO.%s: an engine that prepared the IO has not finished its run; "+
			"stop the engine first: %w", op, backend.ErrInUse)
	}
	return nil
}

// PrepareStandalone is vortex's prepare outside an engine: a
// non-persistent task is created (and configured) now; a persistent one
// exists since NewDAQmxIO.
func (d *DAQmxIO) PrepareStandalone() error {
	if err := d.standalone("prepare"); err != nil {
		return err
	}
	return d.ensureTask()
}

// NextStandalone is vortex's next(id, count, streams) outside an engine:
// count samples of the output channels' streams written to the card, then
// as many read into the input channels' streams; it returns count. The
// streams' memory is only used during the call. An NI-DAQmx error
// (underflow, a write or read timeout, the task stopped or cleared
// meanwhile) stops the task when StopOnError is set, as vortex's; a bad
// count or stream (vortex's messages) does not. Calls are serialized.
func (d *DAQmxIO) NextStandalone(id int64, count int, s *DAQmxStreams) (int, error) {
	if err := d.standalone("next"); err != nil {
		return 0, err
	}
	d.blockMu.Lock()
	defer d.blockMu.Unlock()
	if err := d.checkCount(count); err != nil {
		return 0, err
	}
	d.mu.Lock()
	t := d.task
	d.mu.Unlock()
	if t == nil {
		if err := d.claim.Err("io: DAQmxIO.next"); err != nil {
			return 0, err // closed meanwhile
		}
		return 0, fmt.Errorf("io: DAQmxIO %q: next: no task, expected prepare() first (persistent_task is false: "+
			"the task is made by prepare() and cleared by stop())", d.cfg.Name)
	}
	err := d.process(t, count, s)
	if err == nil {
		return count, nil
	}
	var de *daqmx.Error
	if errors.As(err, &de) || errors.Is(err, daqmx.ErrCleared) || errors.Is(err, daqmx.ErrIncomplete) {
		if d.log != nil {
			d.log.Error(fmt.Sprintf("error during I/O for block %d: %v", id, err))
		}
		if d.cfg.StopOnError {
			_ = d.Stop()
		}
		if cerr := d.claim.Err("io: DAQmxIO.next"); cerr != nil {
			return 0, fmt.Errorf("%w (%v)", cerr, err) // Close cleared the task under the block
		}
	}
	return 0, err
}
