// Package scan is vortex's Generate stage: scan patterns turned into the
// galvo waveforms and markers that drive an acquisition.
//
// # Pieces
//
// A pattern is built in three steps, as vortex builds it:
//
//   - Waypoints (RasterWaypoints, RadialWaypoints, SpiralWaypoints) give the
//     positions of every active sample, one list per segment (a B-scan of a
//     raster scan), after an optional Warp.
//   - A pattern (SequentialPattern, RepeatedPattern) orders the segments,
//     reverses some (bidirectional scans) and attaches the volume and
//     segment boundary markers: the result is a list of Segment.
//   - SegmentedScan joins the segments with inactive paths planned by the
//     config's InactivePolicy, loops the whole scan, and streams it with
//     Next into the caller's buffers.
//
// The scan types (RasterScan, RepeatedRasterScan, RadialScan,
// RepeatedRadialScan, SpiralScan, FreeformScan) pair a config of vortex's
// fields and defaults with a SegmentedScan.
//
// ScanQueue plays scans one after another (vortex's engine.scan_queue):
// each starts from the last position and velocity of the one before, an
// interrupt switches at the next block, and an empty queue holds its
// last position.
//
// # Fidelity
//
// testdata/scan_golden.json holds vortex 0.5.1's own outputs for a table of
// configs (scripts/golden/scan_golden.py); with the FixedLinear policy ours
// match to 1e-15. The planner policies (MinimumDynamicLimited, the default,
// and FixedDynamicLimited) call motion.Plan. Deliberate differences from
// vortex, each a fix: the velocity and acceleration limits are checked on
// absolute values (vortex compares the signed value, so a fast move
// downwards passed); change() inside the last inactive path of a pass keeps
// that path (vortex drops it, jumps, then hangs) and works exactly at a
// pass's end (vortex fails); the old segments' velocities at a change use
// the old samples_per_second.
//
// # Layout
//
// Every waveform is row-major float64: sample i's channel c is
// data[i*channels+c], the layout of a (samples, channels) NumPy array.
//
// # Concurrency
//
// A scan's methods may be called from several goroutines: Change comes from
// the user while the engine's Generate stage calls Next. One mutex per scan
// serialises them, as vortex's does; it is uncontended on the hot path.
package scan
