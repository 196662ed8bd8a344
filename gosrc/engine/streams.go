package engine

// The block's streams as vortex's endpoints read them (block_t::streams():
// counter, galvo_target, sample_target, galvo_actual, sample_actual,
// strobes, at lead 0, the acquisition's timing, or at another IO lead for
// a StreamDumpStorage), on the host, for the storage and tensor endpoints
// of those streams.

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
// each: vortex's block.streams(lead_samples), lead 0 unless the endpoint
// asked for another (HostStreamsLead). They stay valid and unchanged
// until the endpoint's Format returns (the block is recycled after every
// endpoint has formatted it); an endpoint that writes them later copies
// them first.
type HostStreams struct {
	// GalvoTarget is the commanded waveform of the lead (vortex's
	// galvo_target), Records x OutChannels: at lead L, row r holds what
	// lead 0 holds L rows later (the IOs of that lead output it L samples
	// ahead of the acquisition).
	GalvoTarget []float64
	// SampleTarget is the lead-0 GalvoTarget in sample coordinates (the
	// scanner warp applied; the lead-0 GalvoTarget itself without one):
	// the same at every lead, as in vortex.
	SampleTarget []float64
	// GalvoActual is the IOs' measured positions, Records x InChannels.
	GalvoActual []float64
	// SampleActual is GalvoActual in sample coordinates.
	SampleActual []float64
	// OutChannels and InChannels are the columns of the target and actual
	// streams.
	OutChannels, InChannels int
	// Strobes are the digital words of the lead (one uint32 per record),
	// computed only when an IO or a StrobeReader endpoint needs them.
	Strobes []uint32
}

// HostStreams returns the block's streams on the host at lead 0 (the
// acquisition's timing).
func (d *BlockData) HostStreams() HostStreams { return d.HostStreamsLead(0) }

// HostStreamsLead returns the block's streams on the host with the galvo
// target and strobes of the lead at index i of EndpointInfo.Leads (vortex's
// block.streams(lead_samples)); the other streams are the same at every
// lead. These are views of buffers the engine fills anyway (it generates
// every lead), so asking costs no copy. An index the block lacks gives
// empty target and strobe streams.
func (d *BlockData) HostStreamsLead(i int) HostStreams {
	b, n := d.Block, d.Records
	out, in := d.Target.Channels, d.Actual.Channels
	h := HostStreams{OutChannels: out, InChannels: in}
	if b == nil || n <= 0 || len(b.galvo) == 0 || len(b.strobes) == 0 {
		return h // a block Prepare did not allocate (tests), or no records
	}
	if i >= 0 && i < len(b.galvo) && i < len(b.strobes) {
		h.GalvoTarget = b.galvo[i][:n*out]
		h.Strobes = b.strobes[i][:n]
	}
	h.SampleTarget = b.sampleTarget[:n*out]
	h.GalvoActual = b.actual[:n*in]
	h.SampleActual = b.sampleActual[:n*in]
	return h
}

// NewStreamsBlock returns a block holding only the given host streams
// (Records = len(h.Strobes) rows; the target and actual streams of
// h.OutChannels and h.InChannels columns, SampleTarget and SampleActual
// defaulting to GalvoTarget and GalvoActual), h at lead index 0 and each
// of leads at the next indices (their GalvoTarget and Strobes): for tests
// of endpoints outside this package, which cannot build an engine's block.
func NewStreamsBlock(id int64, h HostStreams, leads ...HostStreams) *Block {
	if h.SampleTarget == nil {
		h.SampleTarget = h.GalvoTarget
	}
	if h.SampleActual == nil {
		h.SampleActual = h.GalvoActual
	}
	galvo, strobes := [][]float64{h.GalvoTarget}, [][]uint32{h.Strobes}
	for _, l := range leads {
		galvo, strobes = append(galvo, l.GalvoTarget), append(strobes, l.Strobes)
	}
	return &Block{ID: id, Records: len(h.Strobes), galvo: galvo, sampleTarget: h.SampleTarget,
		actual: h.GalvoActual, sampleActual: h.SampleActual, strobes: strobes}
}
