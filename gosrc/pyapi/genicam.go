package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/driver/aravis"
)

// The bindings of python/vortexgo/genicam.py: GenICam line-scan cameras
// through Aravis (gosrc/driver/aravis, loaded at the first call that needs
// it; without it every call here fails with the error naming
// VORTEXGO_ARAVIS_LIBRARY and the Debian package).

// NewGenICamAcquisition builds an acquire.GenICamAcquisition from its
// acquire.GenICamConfig as a JSON record (PixelFormat as its index,
// AcquireTimeout in nanoseconds): it opens and configures the camera.
func NewGenICamAcquisition(config string) (*Acquisition, error) {
	return newFromRecord("GenICamConfig", config, acquire.GenICamConfig{}, acquire.NewGenICamAcquisition)
}

// AravisLoad loads Aravis if it is not loaded yet and returns its version.
func AravisLoad() (string, error) {
	if err := aravis.Load(); err != nil {
		return "", tag(err)
	}
	return aravis.Version(), nil
}

// AravisLibrary is the name Aravis was loaded under ("" before).
func AravisLibrary() string { return aravis.Library() }

// AravisEnableInterface enables one of Aravis's interfaces ("Fake").
func AravisEnableInterface(name string) error { return tag(aravis.EnableInterface(name)) }

// AravisDeviceIDs lists the cameras' Aravis ids as a JSON list.
func AravisDeviceIDs() (string, error) {
	ids, err := aravis.DeviceIDs()
	if err != nil {
		return "", tag(err)
	}
	if ids == nil {
		ids = []string{}
	}
	return encodeJSON(ids), nil
}

// genicamInfo is a GenICamAcquisition's camera as a JSON record.
type genicamInfo struct {
	ID, Vendor, Model, LineRateFeature string
	GigEVision, Lost                   bool
	Received, Dropped, Incomplete      int64
}

// GenICamInfo is the camera of a GenICamAcquisition and its session's
// frame counts as a JSON record.
func (a *Acquisition) GenICamInfo() (string, error) {
	g, ok := a.a.(*acquire.GenICamAcquisition)
	if !ok {
		return "", tag(badArg("%T is no GenICamAcquisition", a.a))
	}
	c, n := g.Camera(), g.FrameCounts()
	return encodeJSON(genicamInfo{ID: c.ID, Vendor: c.Vendor, Model: c.Model, LineRateFeature: g.LineRateFeature(),
		GigEVision: c.GigEVision, Lost: c.Lost(), Received: n.Received, Dropped: n.Dropped, Incomplete: n.Incomplete}), nil
}
