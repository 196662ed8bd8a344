// Package acquire provides the sources of raw OCT spectra that feed an
// engine: a physically plausible simulator (SimulatedAcquisition), a file
// replayer (FileAcquisition) and vortex's NullAcquisition (no acquisition;
// zeros in an engine).
//
// # Contract
//
// Every source implements the engine's Acquisition interface:
//
//	Prepare() error
//	Start() error
//	Stop() error
//	SamplesPerRecord() int
//	Fill(dst []uint16, records int) (int, error)
//
// Prepare does the expensive work once (the simulator synthesises its whole
// replay ring, a file source parses and checks its header). Start arms the
// source and its rate limiter; Stop disarms it and wakes a Fill that is
// waiting for its rate limiter. Fill writes `records` raw spectra, record
// major, records*SamplesPerRecord() values, into dst.
//
// # Work per block
//
// Sources whose spectra already sit in memory lend it (engine.Lender): the
// simulator its pinned replay ring, NullAcquisition one block of zeros
// zeroed once. FileAcquisition reads straight into the engine's pinned
// block with positioned reads spread over several goroutines. None copies
// through an intermediate host buffer.
//
// # Standalone use
//
// FileAcquisition and NullAcquisition also take vortex's standalone calls
// (StartStandalone, StopStandalone, Next), refused with backend.ErrInUse
// while an engine has prepared the source.
//
// # End of data
//
// When a source runs out in the middle of a request, Fill returns the short
// count with a nil error; the next call returns (0, io.EOF). A source that
// has been stopped also returns (0, io.EOF), so an engine that stops its
// acquisition drains cleanly. Fill before the first Start returns
// ErrNotStarted.
//
// # Rate
//
// A non-zero Rate (A-scans per second) throttles Fill with a token bucket:
// one timer wait per Fill call at most, never a sleep per record, so the
// long-run average is exact and a consumer that falls behind may catch up
// by a short burst (like an acquisition card draining its on-board buffer).
package acquire
