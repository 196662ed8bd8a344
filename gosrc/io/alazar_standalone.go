package io

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
)

// vortex's standalone IO calls on an AlazarIO (bind/io.hpp's setup_io:
// prepare, start, stop, next and next_async outside an engine), and the
// block processing they share with the engine's Next (vortex's
// alazar_io_t::_dispatch_block and _process_block).

// process writes one block of count samples into the ring (the caller
// holds mu): every Divisor-th sample of each output's column of its
// stream, scaled to DAC codes, x in a word's low 16 bits and y in its
// high, at the ring's write position, wrapping at its end.
func (d *AlazarIO) process(count int, s *BlockStreams) error {
	c := &d.cfg
	if err := checkCount(count, c.SamplesPerBlock, c.Divisor, "divisor"); err != nil {
		return err
	}
	xs, err := s.analog(&d.refs[0], count)
	if err != nil {
		return err
	}
	ys, err := s.analog(&d.refs[1], count)
	if err != nil {
		return err
	}
	div, daq := c.Divisor, count/c.Divisor
	x, y := &c.AnalogOutputChannels[0], &c.AnalogOutputChannels[1]
	for k := range daq {
		vx, vy := xs.Data[k*div*xs.Cols+x.Channel], ys.Data[k*div*ys.Cols+y.Channel]
		d.buf[k] = uint32(x.code(vx, &d.dac)) | uint32(y.code(vy, &d.dac))<<16
	}
	// Wrap at the ring's end. (vortex's loop refills its staging buffer
	// from the block's start on the second pass; here the block goes on.)
	for written := 0; written < daq; {
		n := min(daq-written, d.ring-d.off)
		if err := d.b.WriteDACSlot(d.slot, d.buf[written:written+n], int32(d.off)); err != nil {
			return err
		}
		d.off = (d.off + n) % d.ring
		written += n
	}
	return nil
}

// failed reports a failed block id (the board's errors are logged, as
// vortex's) and stops the DAC when StopOnError is set, whatever the error
// (vortex's _dispatch_block: a bad count or stream too). It returns err.
func (d *AlazarIO) failed(id int64, err error) error {
	if err == nil {
		return nil
	}
	if d.log != nil && alazar.IsDriverError(err) {
		d.log.Error(fmt.Sprintf("error during I/O for block %d: %v", id, err))
	}
	if d.cfg.StopOnError {
		d.stop()
	}
	return err
}

// closedErr is the refusal of standalone call op once Close ran (the
// claim says so too, a moment after Close releases mu).
func (d *AlazarIO) closedErr(op string) error {
	return fmt.Errorf("io: AlazarIO.%s: AlazarIO is closed: %w", op, backend.ErrClosed)
}

// PrepareStandalone is vortex's prepare outside an engine: the next block
// is written at the ring's start (where the DAC starts playing).
func (d *AlazarIO) PrepareStandalone() error {
	if err := standalone(&d.claim, "AlazarIO", "prepare"); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return d.closedErr("prepare")
	}
	d.off, d.prepared = 0, true
	return nil
}

// NextStandalone is vortex's next(id, count, streams) outside an engine:
// count samples of the outputs' streams written into the ring (process);
// it returns count. The streams' memory is only used during the call. It
// is refused before the first prepare (vortex's write position is unset
// until then). Any failure of the block stops the DAC when StopOnError is
// set, as vortex's; the refusals (closed, in use, not prepared) do not.
// Calls are serialized with each other, Start and Stop.
func (d *AlazarIO) NextStandalone(id int64, count int, s *BlockStreams) (int, error) {
	if err := standalone(&d.claim, "AlazarIO", "next"); err != nil {
		return 0, err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0, d.closedErr("next")
	}
	if !d.prepared {
		return 0, fmt.Errorf("io: AlazarIO.next: not prepared, expected prepare() first (it rewinds the DAC's " +
			"ring, where the DAC starts playing)")
	}
	if err := d.failed(id, d.process(count, s)); err != nil {
		return 0, err
	}
	return count, nil
}
