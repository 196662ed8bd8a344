package engine

// The block's streams as vortex's endpoints read them (block_t::streams():
// counter, galvo_target, sample_target, galvo_actual, sample_actual,
// strobes, at lead 0, the acquisition's timing), on the host, for the
// storage and tensor endpoints of those streams.

// StrobeReader is implemented by endpoints that read the block's strobes
// (HostStreams.Strobes). The Generate stage computes the strobes only
// when an IO takes them or such an endpoint says it reads them.
type StrobeReader interface {
	ReadsStrobes() bool
}

// needsStrobes reports whether some endpoint reads the strobes.
func (e *Engine) needsStrobes() bool {
	for _, ep := range e.endpoints {
		if r, ok := ep.(StrobeReader); ok && r.ReadsStrobes() {
			return true
		}
	}
	return false
}

// HostStreams are views of a block's streams in host memory, Records rows
// each: vortex's block.streams() at lead 0. They stay valid and unchanged
// until the endpoint's Format returns (the block is recycled after every
// endpoint has formatted it); an endpoint that writes them later copies
// them first.
type HostStreams struct {
	// GalvoTarget is the commanded waveform of lead 0 (vortex's
	// galvo_target), Records x OutChannels.
	GalvoTarget []float64
	// SampleTarget is GalvoTarget in sample coordinates (the scanner warp
	// applied; GalvoTarget itself without one).
	SampleTarget []float64
	// GalvoActual is the IOs' measured positions, Records x InChannels.
	GalvoActual []float64
	// SampleActual is GalvoActual in sample coordinates.
	SampleActual []float64
	// OutChannels and InChannels are the columns of the target and actual
	// streams.
	OutChannels, InChannels int
	// Strobes are the digital words of lead 0 (one uint32 per record),
	// computed only when an IO or a StrobeReader endpoint needs them.
	Strobes []uint32
}

// HostStreams returns the block's streams on the host.
func (d *BlockData) HostStreams() HostStreams {
	b, n := d.Block, d.Records
	out, in := d.Target.Channels, d.Actual.Channels
	h := HostStreams{OutChannels: out, InChannels: in}
	if b == nil || n <= 0 || len(b.galvo) == 0 || len(b.strobes) == 0 {
		return h // a block Prepare did not allocate (tests), or no records
	}
	h.GalvoTarget = b.galvo[0][:n*out]
	h.SampleTarget = b.sampleTarget[:n*out]
	h.GalvoActual = b.actual[:n*in]
	h.SampleActual = b.sampleActual[:n*in]
	h.Strobes = b.strobes[0][:n]
	return h
}

// NewStreamsBlock returns a block holding only the given host streams
// (Records = len(h.Strobes) rows; the target and actual streams of
// h.OutChannels and h.InChannels columns, SampleTarget and SampleActual
// defaulting to GalvoTarget and GalvoActual): for tests of endpoints
// outside this package, which cannot build an engine's block.
func NewStreamsBlock(id int64, h HostStreams) *Block {
	if h.SampleTarget == nil {
		h.SampleTarget = h.GalvoTarget
	}
	if h.SampleActual == nil {
		h.SampleActual = h.GalvoActual
	}
	return &Block{ID: id, Records: len(h.Strobes), galvo: [][]float64{h.GalvoTarget}, sampleTarget: h.SampleTarget,
		actual: h.GalvoActual, sampleActual: h.SampleActual, strobes: [][]uint32{h.Strobes}}
}
