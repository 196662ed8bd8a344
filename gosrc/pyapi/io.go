package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// The bindings of python/vortexgo/io.py: the IOs without hardware
// (package io).

// IO is an engine IO that Python drives no further than wiring it
// (io.NullIO).
type IO struct{ Object }

// NewNullIO builds an io.NullIO.
func NewNullIO() *IO { return &IO{Object{obj: gio.NewNullIO()}} }

// SimIO is the simulated galvo IO (io.SimIO).
type SimIO struct {
	Object
	s *gio.SimIO
}

// NewSimIO builds an io.SimIO from its io.SimConfig fields.
func NewSimIO(recordSamples int, feedback bool, feedbackDelay int) (*SimIO, error) {
	s, err := gio.NewSimIO(gio.SimConfig{RecordSamples: recordSamples, Feedback: feedback, FeedbackDelay: feedbackDelay})
	if err != nil {
		return nil, tag(err)
	}
	return &SimIO{Object{obj: s}, s}, nil
}

// simIOStateRecord is a SimIO's state (SIM_IO_STATE): samples output so far,
// whether the engine started and stopped it (0 or 1).
type simIOStateRecord struct{ Samples, Started, Stopped int64 }

// simIOWindowRecord is where a copy of a SimIO's recording starts
// (SIM_IO_WINDOW): the sample index of its first row, its rows and the
// values per row (the output channels; 1 for the strobe words).
type simIOWindowRecord struct{ First, Rows, Channels int64 }

// recordFlag is b as a record field (1 or 0).
func recordFlag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// State writes the SimIO's state (SIM_IO_STATE) into the caller's n bytes
// at rec (putRecord).
func (s *SimIO) State(rec, n int) (int, error) {
	return putRecord(rec, n, &simIOStateRecord{s.s.Samples(), recordFlag(s.s.Started()), recordFlag(s.s.Stopped())})
}

// Recorded copies the latest recorded samples, oldest first, into the
// caller's n float64s at dst (rows of the output channels; io.SimIO.Recorded)
// and writes where they start (SIM_IO_WINDOW) into the caller's recN bytes
// at rec (putRecord).
func (s *SimIO) Recorded(dst, n, rec, recN int) (int, error) {
	buf, err := hostmem.Span[float64](dst, n)
	if err != nil {
		return 0, tag(err)
	}
	first, rows := s.s.Recorded(buf)
	return putRecord(rec, recN, &simIOWindowRecord{first, int64(rows), int64(s.s.OutputChannels())})
}

// RecordedStrobes copies the latest recorded strobe words, oldest first,
// into the caller's n uint32s at dst (io.SimIO.RecordedStrobes) and writes
// where they start (SIM_IO_WINDOW, one value per row) into the caller's
// recN bytes at rec (putRecord).
func (s *SimIO) RecordedStrobes(dst, n, rec, recN int) (int, error) {
	buf, err := hostmem.Span[uint32](dst, n)
	if err != nil {
		return 0, tag(err)
	}
	first, rows := s.s.RecordedStrobes(buf)
	return putRecord(rec, recN, &simIOWindowRecord{first, int64(rows), 1})
}

// IOStreams names one block's six streams for an IO's standalone Next
// (DAQmxIO.Next, AlazarIO.Next: vortex's streams tuple) by address:
// Python sets each, then passes it to one Next.
type IOStreams struct {
	set [6]ioStreamRecord
}

type ioStreamRecord struct{ data, dims, rows, cols int }

// NewIOStreams makes an empty set of streams (each of 0 dimensions).
func NewIOStreams() *IOStreams { return &IOStreams{} }

// Set names stream index (Block.StreamIndex: 0 counter uint64, 1-4
// float64, 5 strobes uint32): dims axes and, for 2, rows x cols values
// at address data (row-major).
func (s *IOStreams) Set(index, data, dims, rows, cols int) error {
	if index < 0 || index >= len(s.set) {
		return tag(badArg("IOStreams.Set: index %d, expected 0..5", index))
	}
	if dims < 0 || (dims == 2 && (rows < 0 || cols < 0)) {
		return tag(badArg("IOStreams.Set: %d axes of %d x %d, expected a valid shape", dims, rows, cols))
	}
	s.set[index] = ioStreamRecord{data, dims, rows, cols}
	return nil
}

func ioStream[T float64 | uint32 | uint64](r ioStreamRecord) (gio.BlockStream[T], error) {
	st := gio.BlockStream[T]{Dims: r.dims}
	if r.dims != 2 {
		return st, nil
	}
	data, err := hostmem.Span[T](r.data, r.rows*r.cols)
	st.Data, st.Rows, st.Cols = data, r.rows, r.cols
	return st, err
}

// streams views the caller's memory for one call.
func (s *IOStreams) streams() (gio.BlockStreams, error) {
	var g gio.BlockStreams
	var errs [6]error
	g.Counter, errs[0] = ioStream[uint64](s.set[0])
	g.GalvoTarget, errs[1] = ioStream[float64](s.set[1])
	g.SampleTarget, errs[2] = ioStream[float64](s.set[2])
	g.GalvoActual, errs[3] = ioStream[float64](s.set[3])
	g.SampleActual, errs[4] = ioStream[float64](s.set[4])
	g.Strobes, errs[5] = ioStream[uint32](s.set[5])
	for _, err := range errs {
		if err != nil {
			return g, err
		}
	}
	return g, nil
}

// next is an IO's standalone next (NextStandalone of io.DAQmxIO,
// io.AlazarIO) over the caller's streams s names.
func (s *IOStreams) next(id, count int, next func(int64, int, *gio.BlockStreams) (int, error)) (int, error) {
	streams, err := s.streams()
	if err != nil {
		return 0, tag(err)
	}
	return tagged(next(int64(id), count, &streams))
}
