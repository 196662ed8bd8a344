package io

import (
	"errors"
	"fmt"
	"math"

	"github.com/vortexgo/vortexgo/gosrc/driver/daqmx"
)

// vortex's standalone IO calls on a DAQmxIO (bind/io.hpp's setup_io:
// prepare, start, stop, next and next_async outside an engine), and the
// block processing they share with the engine's Next (vortex's
// daqmx_io_t::_dispatch_block and _process_block).

// daqmxChan is a channel with where its samples are in a block.
type daqmxChan struct {
	DAQmxChannel
	ref streamRef
}

func newDAQmxChan(ch DAQmxChannel) daqmxChan {
	return daqmxChan{ch, streamRef{stream: ch.Stream, channel: ch.Channel, name: ch.Kind.String() + " " + ch.Name}}
}

// check checks that the stream ch names is of its kind (float64 for an
// analog channel, the strobes for a digital one) and holds samples rows
// and ch's column.
func (ch *daqmxChan) check(s *BlockStreams, samples int) (err error) {
	if ch.Kind.analog() {
		_, err = s.analog(&ch.ref, samples)
	} else {
		_, err = s.digital(&ch.ref, samples)
	}
	return err
}

// checkCount is vortex's check of a block's length.
func (d *DAQmxIO) checkCount(count int) error {
	return checkCount(count, d.cfg.SamplesPerBlock, d.cfg.ClockDivisor, "clock divisor")
}

// checkStreams checks every channel's stream before any sample moves
// (vortex checks each as it copies, an input's after the read).
func (d *DAQmxIO) checkStreams(count int, s *BlockStreams) error {
	for i := range d.chans {
		if err := d.chans[i].check(s, count); err != nil {
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
func (d *DAQmxIO) process(t *daqmx.Task, count int, s *BlockStreams) error {
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
			src, _ := s.analog(&ch.ref, count)
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
			src, _ := s.digital(&ch.ref, count)
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
			dst, _ := s.analog(&ch.ref, count)
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
			dst, _ := s.digital(&ch.ref, count)
			for k := 0; k < daq; k++ {
				for r := k * div; r < (k+1)*div; r++ {
					dst.Data[r*dst.Cols+ch.Channel] = diBuf[k*w+j]
				}
			}
		}
	}
	return nil
}

// PrepareStandalone is vortex's prepare outside an engine: a
// non-persistent task is created (and configured) now; a persistent one
// exists since NewDAQmxIO.
func (d *DAQmxIO) PrepareStandalone() error {
	if err := standalone(&d.claim, "DAQmxIO", "prepare"); err != nil {
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
func (d *DAQmxIO) NextStandalone(id int64, count int, s *BlockStreams) (int, error) {
	if err := standalone(&d.claim, "DAQmxIO", "next"); err != nil {
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
