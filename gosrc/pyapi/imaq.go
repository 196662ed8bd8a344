package pyapi

import (
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
