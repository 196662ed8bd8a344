package engine

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// prepareAcquisitions prepares every acquisition, learns its record
// length and pins a lender's memory, and resolves the processor rotations
// (Config.Rotations) to indices of Engine.procs.
func (e *Engine) prepareAcquisitions() error {
	cfg := &e.cfg
	for a, an := range cfg.acqs {
		if err := an.acq.Prepare(); err != nil {
			return fmt.Errorf("engine.Prepare: acquisition #%d: %w", a, err)
		}
		run := acqRun{acq: an.acq, raw: an.acq.SamplesPerRecord()}
		if run.raw <= 0 {
			return fmt.Errorf("engine.Prepare: acquisition #%d SamplesPerRecord()=%d, expected > 0", a, run.raw)
		}
		if l, ok := an.acq.(Lender); ok {
			switch err := l.PinTo(e.dev, cfg.RecordsPerBlock); {
			case errors.Is(err, ErrNoLend): // it fills instead
			case err != nil:
				return fmt.Errorf("engine.Prepare: acquisition #%d: pinning its data: %w", a, err)
			default:
				run.lender = l
			}
		}
		if p, ok := an.acq.(Poster); ok && run.lender == nil {
			run.poster = p
		}
		rot, err := cfg.checkRotation(a)
		if err != nil {
			return err
		}
		first := len(e.procs)
		for _, set := range rot {
			g := make([]int, len(set))
			for k, i := range set {
				g[k] = first + i
			}
			run.rotation = append(run.rotation, g)
		}
		for range an.procs {
			e.procAcq = append(e.procAcq, a)
		}
		e.procs = append(e.procs, an.procs...)
		e.acqs = append(e.acqs, run)
	}
	return nil
}

// preparePacking decides, for each DeviceUnpacker, whether the engine
// widens its packed blocks on the device: yes unless a processor on
// another device reads them (remote processors upload from the host
// block, which then has to hold uint16 values). It tells each source which,
// and loads the kernel ahead of the first block (ops.Prepare).
func (e *Engine) preparePacking() error {
	records := e.cfg.RecordsPerBlock
	used := false
	for a := range e.acqs {
		run := &e.acqs[a]
		du, ok := run.acq.(DeviceUnpacker)
		if !ok {
			continue
		}
		bits, offset, packed := du.Packing()
		remote := false
		for pi, pa := range e.procAcq {
			remote = remote || (pa == a && e.procDev[pi] >= 0)
		}
		if !packed || remote {
			du.SetUnpackOnDevice(false)
			continue
		}
		values := records * run.raw
		bytes := ops.PackedBytes(values, bits)
		if bits < 8 || bits > 16 || offset < 0 || offset+bytes > 2*values {
			return fmt.Errorf("engine.Prepare: acquisition #%d Packing()=(%d bits, offset %d): %d packed bytes do not fit "+
				"its %d-byte blocks, expected 8 to 16 bits inside the block", a, bits, offset, bytes, 2*values)
		}
		run.packed = packing{bits: bits, offset: offset, bytes: bytes, values: values}
		du.SetUnpackOnDevice(true)
		used = true
	}
	if used {
		if err := ops.Prepare(e.dev, "unpack_bits_u16"); err != nil {
			return fmt.Errorf("engine.Prepare: %w", err)
		}
	}
	return nil
}

// prepareProcessors prepares every processor and checks it reads what its
// acquisition writes; it returns each processor's output length.
func (e *Engine) prepareProcessors() ([]int, error) {
	out := make([]int, len(e.procs))
	for i, p := range e.procs {
		if err := p.Prepare(); err != nil {
			return nil, fmt.Errorf("engine.Prepare: processor #%d: %w", i, err)
		}
		if out[i] = p.OutputSamples(); out[i] <= 0 {
			return nil, fmt.Errorf("engine.Prepare: processor #%d OutputSamples()=%d, expected > 0", i, out[i])
		}
		// A processor reads InputValues raw values per record from the
		// block (samples x channels): more than the acquisition writes
		// would read past the block's buffer, so it is refused here.
		raw := e.acqs[e.procAcq[i]].raw
		if iv, ok := p.(interface{ InputValues() int }); ok && iv.InputValues() != raw {
			return nil, fmt.Errorf("engine.Prepare: processor #%d reads %d raw values per record (samples_per_record x channels_per_sample), its acquisition gives %d: %w",
				i, iv.InputValues(), raw, backend.ErrInvalid)
		}
	}
	return out, nil
}

// prepareRoutes wires processor -> formatters -> endpoints (endpoint ids in
// AddFormatter order) and prepares each endpoint once, with the output
// length of the processors feeding its formatter (which must agree: a
// cycle's processors take turns filling the same volume), telling them how
// many slots the engine cycles its blocks through (slots).
func (e *Engine) prepareRoutes(outSamples []int, markers, slots int) error {
	cfg := &e.cfg
	procIndex := map[Processor]int{}
	for i, p := range e.procs {
		procIndex[p] = i
	}
	fmtOut := map[Formatter]int{}
	fmtFeeder := map[Formatter]int{}
	for _, pn := range cfg.procs {
		pi := procIndex[pn.proc]
		for _, f := range pn.fmts {
			if n, seen := fmtOut[f]; seen && n != outSamples[pi] {
				return fmt.Errorf("engine.Prepare: processor #%d gives %d samples per A-scan, processor #%d %d, and both feed formatter %T: expected equal lengths: %w",
					fmtFeeder[f], n, pi, outSamples[pi], f, backend.ErrInvalid)
			}
			fmtOut[f], fmtFeeder[f] = outSamples[pi], pi
		}
	}
	// prepareIOs sorted the leads out before; the endpoints share one
	// slice of their values, read only.
	leads := make([]int, len(e.leads))
	for i, l := range e.leads {
		leads[i] = l.lead
	}
	fmtEps := map[Formatter][]*epRoute{}
	fmtTask := map[Formatter]int{}
	for task, fn := range cfg.fmts {
		fmtTask[fn.fmt] = task
		for _, ep := range fn.eps {
			id := len(e.endpoints)
			e.endpoints = append(e.endpoints, ep)
			info := EndpointInfo{
				Device: e.dev, Owner: e.owner, RecordsPerBlock: cfg.RecordsPerBlock,
				RawSamples: e.acqs[e.procAcq[fmtFeeder[fn.fmt]]].raw, OutputSamples: fmtOut[fn.fmt],
				SegmentsPerVolume: fn.fmt.SegmentsPerVolume(), RecordsPerSegment: fn.fmt.RecordsPerSegment(),
				BlocksPerSlot: e.poolSize / slots,
				Slots:         slots,
				Leads:         leads,
				Stopping:      nil, // each session's, through SessionEndpoint.BeginSession
				Fail: func(err error) {
					e.failAsync(fmt.Errorf("engine: endpoint #%d: %w", id, err))
				},
			}
			if err := ep.Prepare(info); err != nil {
				return fmt.Errorf("engine.Prepare: endpoint #%d: %w", id, err)
			}
			r := &epRoute{ep: ep, id: id, stream: ep.Stream()}
			r.done, _ = ep.(DoneFormatter)
			e.eps = append(e.eps, r)
			fmtEps[fn.fmt] = append(fmtEps[fn.fmt], r)
		}
	}
	e.routes = make([][]fmtRoute, len(e.procs))
	for _, pn := range cfg.procs {
		pi := procIndex[pn.proc]
		for _, f := range pn.fmts {
			if e.volumeFmt == nil {
				e.volumeFmt = f
			}
			r := fmtRoute{fmt: f, plan: &FormatPlan{}, fin: &FormatPlan{}, eps: fmtEps[f], task: fmtTask[f]}
			// The planner's actions: one per marker (an Event passed on),
			// and up to 4 per segment the block touches (a copy and the
			// segment, volume and scan notifications).
			if err := errors.Join(r.plan.Reserve(markers+4*cfg.RecordsPerBlock/max(1, f.RecordsPerSegment())+16),
				r.fin.Reserve(4)); err != nil {
				return fmt.Errorf("engine.Prepare: %w", err)
			}
			e.routes[pi] = append(e.routes[pi], r)
		}
	}
	return nil
}

// activeSet marks in b.active the processors that process block b: for
// each acquisition, the set of its rotation the block's ID picks.
func (e *Engine) activeSet(b *Block) {
	clear(b.active)
	for _, a := range e.acqs {
		for _, pi := range a.rotation[int(b.ID%int64(len(a.rotation)))] {
			b.active[pi] = true
		}
	}
}

// localReader reports whether a processor on the engine's device
// processes acquisition a's spectra of block b (active set known).
func (e *Engine) localReader(b *Block, a int) bool {
	for pi, on := range b.active {
		if on && e.procAcq[pi] == a && e.procDev[pi] < 0 {
			return true
		}
	}
	return false
}

// singleDeviceBlocks reports whether every block is processed on one
// device: the engine's, or one remote device (a cycle over devices, vortex's
// way to spread blocks over GPUs). A block's processors are the union of
// each acquisition's rotation set for its ID (activeSet), so the sets repeat
// every lcm of the rotations' lengths blocks; past maxRotationPeriod blocks
// (many acquisitions with long, coprime rotations) it reports false.
func (e *Engine) singleDeviceBlocks() bool {
	period := 1
	for _, a := range e.acqs {
		if len(a.rotation) == 0 {
			continue
		}
		period = lcm(period, len(a.rotation))
		if period > maxRotationPeriod {
			return false
		}
	}
	for id := range period {
		dev, first := 0, true
		for _, a := range e.acqs {
			if len(a.rotation) == 0 {
				continue
			}
			for _, pi := range a.rotation[id%len(a.rotation)] {
				if !first && e.procDev[pi] != dev {
					return false
				}
				dev, first = e.procDev[pi], false
			}
		}
	}
	return true
}

// maxRotationPeriod bounds singleDeviceBlocks' look at the blocks' rotation
// sets.
const maxRotationPeriod = 4096

// lcm is the least common multiple of a and b (both >= 1).
func lcm(a, b int) int {
	x, y := a, b
	for y != 0 {
		x, y = y, x%y
	}
	return a / x * b
}

// remoteActive reports whether a processor on another device processes
// block b (b.active set).
func (e *Engine) remoteActive(b *Block) bool {
	for pi, on := range b.active {
		if on && e.procDev[pi] >= 0 {
			return true
		}
	}
	return false
}
