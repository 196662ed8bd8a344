package io

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// A block's streams as vortex's IOs take them (bind/io.hpp's setup_io:
// next(count, streams) outside an engine; the engine's blocks carry the
// same streams), and the checks of vortex's _dispatch_block and
// _check_buffer that every IO with channels naming a stream and a column
// makes (DAQmxIO, AlazarIO).

// BlockStream is one stream of a block (vortex's cpu_view_t): Dims axes;
// when Dims is 2, Rows x Cols values of the stream's element type,
// row-major, in Data.
type BlockStream[T float64 | uint32 | uint64] struct {
	Data       []T
	Dims       int
	Rows, Cols int
}

// BlockStreams are one block's six streams in vortex's order
// (Block.StreamIndex: StreamCounter ... StreamStrobes) and element types
// (vortex-python's engine: counter size_t, analog double, digital
// uint32): a channel's stream picks one, its channel a column. Output
// channels read their stream, input channels fill theirs.
type BlockStreams struct {
	Counter                                              BlockStream[uint64]
	GalvoTarget, SampleTarget, GalvoActual, SampleActual BlockStream[float64]
	Strobes                                              BlockStream[uint32]
}

const streamCount = 6

// engineStreams are the streams of an engine's block that an IO sees:
// GalvoTarget of out columns and the strobe words (the IOs' Prepare
// checked that their channels name only these).
func engineStreams(b *engine.IOBlock, out int) BlockStreams {
	var s BlockStreams
	if out > 0 {
		s.GalvoTarget = BlockStream[float64]{Data: b.GalvoTarget, Dims: 2, Rows: len(b.GalvoTarget) / out, Cols: out}
	}
	s.Strobes = BlockStream[uint32]{Data: b.Strobes, Dims: 2, Rows: len(b.Strobes), Cols: 1}
	return s
}

// streamRef is where a channel's samples are in a block: its stream and
// column, and the channel's name in messages ("AnalogVoltageOutput
// Dev1/ao0").
type streamRef struct {
	stream, channel int
	name            string
}

// analog is the float64 stream r names (vortex's
// select<analog_element_t>, with its messages), checked to hold samples
// rows and r's column.
func (s *BlockStreams) analog(r *streamRef, samples int) (*BlockStream[float64], error) {
	var st *BlockStream[float64]
	switch r.stream {
	case StreamGalvoTarget:
		st = &s.GalvoTarget
	case StreamSampleTarget:
		st = &s.SampleTarget
	case StreamGalvoActual:
		st = &s.GalvoActual
	case StreamSampleActual:
		st = &s.SampleActual
	default:
		return nil, r.mismatch("a float64 stream: GalvoTarget (1), SampleTarget (2), GalvoActual (3) or SampleActual (4)")
	}
	return st, checkStream(st, samples, r)
}

// digital is the uint32 stream r names, checked as analog's.
func (s *BlockStreams) digital(r *streamRef, samples int) (*BlockStream[uint32], error) {
	if r.stream != StreamStrobes {
		return nil, r.mismatch("the uint32 stream Strobes (5)")
	}
	return &s.Strobes, checkStream(&s.Strobes, samples, r)
}

func (r *streamRef) mismatch(want string) error {
	if r.stream < 0 || r.stream >= streamCount {
		return backend.Invalidf("tuple index out of bounds: %s reads stream %d, expected %s", r.name, r.stream, want)
	}
	return backend.Invalidf("tuple condition failed to match at target index: %s reads stream %s (%d), expected %s",
		r.name, streamName(r.stream), r.stream, want)
}

// checkStream is vortex's _check_buffer: a 2-D stream with at least
// samples rows and the column r names.
func checkStream[T float64 | uint32 | uint64](s *BlockStream[T], samples int, r *streamRef) error {
	if s.Dims != 2 {
		return backend.Invalidf("stream of dimension 2 is required: %d (%s, stream %s)", s.Dims, r.name,
			streamName(r.stream))
	}
	if samples > s.Rows || r.channel < 0 || r.channel >= s.Cols || len(s.Data) < s.Rows*s.Cols {
		return backend.Invalidf("stream is incorrectly sized: [%d x %d] vs [:%d,%d] (%s, stream %s)", s.Rows, s.Cols,
			samples, r.channel, r.name, streamName(r.stream))
	}
	return nil
}

// checkCount is vortex's check of a block's length: at most
// samplesPerBlock, a multiple of the divisor (divisor names it in the
// message: "clock divisor", "divisor").
func checkCount(count, samplesPerBlock, div int, divisor string) error {
	if count < 0 {
		return backend.Invalidf("count=%d, expected samples >= 0", count)
	}
	if count > samplesPerBlock {
		return backend.Invalidf("block is larger than maximum configured size: %d > %d", count, samplesPerBlock)
	}
	if count%div != 0 {
		return backend.Invalidf("block size (%d) is not evenly divisible by %s (%d): %d != 0", count, divisor, div,
			count%div)
	}
	return nil
}

// standalone refuses vortex's standalone call op on the stage named
// stage (its claim c) when it is closed, or while an engine that prepared
// it has not finished its run (the engine's blocks would interleave with
// the caller's).
func standalone(c *engine.Claim, stage, op string) error {
	if err := c.Err("io: " + stage + "." + op); err != nil {
		return err
	}
	if c.InUse() {
		return fmt.Errorf("io: %s.%s: an engine that prepared the IO has not finished its run; "+
			"stop the engine first: %w", stage, op, backend.ErrInUse)
	}
	return nil
}
