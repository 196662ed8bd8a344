package pyapi

import (
	"math"

	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/driver/imaq"
)

// The bindings of python/vortexgo/imaq.py (vortex's vortex.acquire.imaq and
// vortex.driver.imaq): the NI frame grabber's ImaqAcquisition. NI-IMAQ is
// loaded at the first call that needs it (gosrc/driver/imaq); without it
// every call here fails with the error naming VORTEXGO_NIIMAQ_LIBRARY.

// NewImaqAcquisition builds an acquire.ImaqAcquisition from its
// acquire.ImaqConfig as a JSON record (AcquireTimeout in nanoseconds): it
// opens the interface and configures region, triggers and ring.
func NewImaqAcquisition(config string) (*Acquisition, error) {
	return newFromRecord("ImaqAcquisitionConfig", config, acquire.ImaqConfig{}, acquire.NewImaqAcquisition)
}

// ImaqLoad loads NI-IMAQ if it is not loaded yet and returns the name it
// was loaded under.
func ImaqLoad() (string, error) {
	if err := imaq.Load(); err != nil {
		return "", tag(err)
	}
	return imaq.Library(), nil
}

// ImaqEnumerate lists the interface names as a JSON record (vortex's
// imaq.enumerate).
func ImaqEnumerate() (string, error) {
	names, err := imaq.Enumerate()
	if err != nil {
		return "", tag(err)
	}
	if names == nil {
		names = []string{}
	}
	return encodeJSON(names), nil
}

// ImaqInfo is an ImaqAcquisition's session's imaq.Info as a JSON record
// (Go field names; Calibration as RFC 3339, or the zero time).
func (a *Acquisition) ImaqInfo() (string, error) {
	s, ok := a.a.(*acquire.ImaqAcquisition)
	if !ok {
		return "", tag(badArg("%T has no IMAQ session, expected an ImaqAcquisition", a.a))
	}
	return encodeJSON(s.Session().Info()), nil
}

// ImaqRegion is an ImaqAcquisition's configured region as a JSON record
// (imaq.ROI).
func (a *Acquisition) ImaqRegion() (string, error) {
	s, ok := a.a.(*acquire.ImaqAcquisition)
	if !ok {
		return "", tag(badArg("%T has no IMAQ session, expected an ImaqAcquisition", a.a))
	}
	r, err := s.Session().QueryRegion()
	if err != nil {
		return "", tag(err)
	}
	return encodeJSON(r), nil
}

// ImaqRunning reports whether an ImaqAcquisition's camera captures.
func (a *Acquisition) ImaqRunning() bool {
	s, ok := a.a.(*acquire.ImaqAcquisition)
	return ok && s.Running()
}

// ImaqSession is an interface opened on its own (vortex's imaq.Imaq):
// not an acquisition's, so every call here is the caller's to order.
type ImaqSession struct {
	s *imaq.Session
}

// OpenImaq opens interface name and a session on it (vortex's
// Imaq(interface_name)).
func OpenImaq(name string) (*ImaqSession, error) {
	s, err := imaq.Open(name)
	if err != nil {
		return nil, tag(err)
	}
	return &ImaqSession{s: s}, nil
}

// Info is the session's imaq.Info as a JSON record (as ImaqInfo).
func (s *ImaqSession) Info() string { return encodeJSON(s.s.Info()) }

// Name is the interface's name.
func (s *ImaqSession) Name() string { return s.s.Name() }

// Valid reports whether the session is open.
func (s *ImaqSession) Valid() bool { return s.s.Valid() }

// Running reports whether a capture was started and not stopped.
func (s *ImaqSession) Running() bool { return s.s.Running() }

// RequiredBufferSize is the bytes of one ring buffer for the configured region.
func (s *ImaqSession) RequiredBufferSize() (int, error) {
	n, err := s.s.RequiredBufferSize()
	return int(n), tag(err)
}

// ConfigureRegion sets the region of interest (pixelsPerRow 0: width).
func (s *ImaqSession) ConfigureRegion(top, left, height, width, pixelsPerRow int) error {
	v, err := u32s("Imaq.configure_region", []string{"top", "left", "height", "width", "pixels_per_row"},
		top, left, height, width, pixelsPerRow)
	if err != nil {
		return err
	}
	return tag(s.s.ConfigureRegion(imaq.ROI{Top: v[0], Left: v[1], Height: v[2], Width: v[3], PixelsPerRow: v[4]}))
}

// QueryRegion is the configured region as a JSON record (imaq.ROI).
func (s *ImaqSession) QueryRegion() (string, error) {
	r, err := s.s.QueryRegion()
	if err != nil {
		return "", tag(err)
	}
	return encodeJSON(r), nil
}

// ConfigureLineTrigger sets the line trigger input.
func (s *ImaqSession) ConfigureLineTrigger(line, skip, polarity, signal int) error {
	v, err := u32s("Imaq.configure_line_trigger", []string{"line", "skip", "polarity", "signal"}, line, skip, polarity, signal)
	if err != nil {
		return err
	}
	return tag(s.s.ConfigureLineTrigger(v[0], v[1], imaq.Polarity(v[2]), imaq.Signal(v[3])))
}

// ConfigureTriggerOutput drives trigger line from source.
func (s *ImaqSession) ConfigureTriggerOutput(line, source, polarity, signal int) error {
	v, err := u32s("Imaq.configure_trigger_output", []string{"line", "source", "polarity", "signal"}, line, source, polarity, signal)
	if err != nil {
		return err
	}
	return tag(s.s.ConfigureTriggerOutput(v[0], imaq.Source(v[1]), imaq.Polarity(v[2]), imaq.Signal(v[3])))
}

// u32s checks that each of vs (named names) fits NI-IMAQ's uInt32.
func u32s(op string, names []string, vs ...int) ([]uint32, error) {
	out := make([]uint32, len(vs))
	for i, v := range vs {
		if v < 0 || v > math.MaxUint32 {
			return nil, tag(badArg("%s: %s=%d, expected 0 to %d", op, names[i], v, uint32(math.MaxUint32)))
		}
		out[i] = uint32(v)
	}
	return out, nil
}

// StopCapture stops a started capture (nothing when none runs).
func (s *ImaqSession) StopCapture() error { return tag(s.s.StopCapture()) }

// Close stops a capture and closes the interface.
func (s *ImaqSession) Close() error { return tag(s.s.Close()) }
