package pyapi

import (
	"github.com/vortexgo/vortexgo/gosrc/acquire"
	"github.com/vortexgo/vortexgo/gosrc/driver/teledyne"
)

// The bindings of python/vortexgo/teledyne.py (vortex's
// vortex.acquire.teledyne and its TeledyneAcquisition): the Teledyne SP
// Devices ADQ digitizer's board and TeledyneAcquisition. ADQAPI (libadq)
// is loaded at the first call that needs it (gosrc/driver/teledyne);
// without it every call here fails with the error naming
// VORTEXGO_ADQ_LIBRARY.

// teledyneRecord is acquire.TeledyneConfig as Python sends it
// (AcquireTimeout in nanoseconds): the spectral filter as its real and
// imaginary parts (JSON has no complex).
type teledyneRecord struct {
	acquire.TeledyneConfig
	SpectralFilterReal, SpectralFilterImag []float32
}

// NewTeledyneAcquisition builds an acquire.TeledyneAcquisition from its
// configuration as a JSON record (teledyneRecord): it opens the board,
// checks the configuration against it (vortex's messages) and configures it.
func NewTeledyneAcquisition(config string) (*Acquisition, error) {
	var r teledyneRecord
	if err := decodeRecord("TeledyneConfig", config, &r); err != nil {
		return nil, tag(err)
	}
	if len(r.SpectralFilterReal) != len(r.SpectralFilterImag) {
		return nil, tag(badArg("TeledyneConfig.spectral_filter: %d real and %d imaginary parts, expected as many",
			len(r.SpectralFilterReal), len(r.SpectralFilterImag)))
	}
	c := r.TeledyneConfig
	c.SpectralFilter = nil
	if len(r.SpectralFilterReal) > 0 {
		c.SpectralFilter = make([]complex64, len(r.SpectralFilterReal))
		for i := range c.SpectralFilter {
			c.SpectralFilter[i] = complex(r.SpectralFilterReal[i], r.SpectralFilterImag[i])
		}
	}
	return newAcquisition(acquire.NewTeledyneAcquisition(c))
}

// TeledyneLoad loads ADQAPI if it is not loaded yet (checking its API
// revision) and returns the name it was loaded under.
func TeledyneLoad() (string, error) {
	if err := teledyne.Load(); err != nil {
		return "", tag(err)
	}
	return teledyne.Library(), nil
}

// TeledyneAPIVersion is the ADQAPI revision the driver checked the library
// against (its layout table's header's; [0, 0] before TeledyneLoad), as a
// JSON record [major, minor].
func TeledyneAPIVersion() string {
	major, minor := teledyne.APIVersion()
	return encodeJSON([2]int{major, minor})
}

// TeledyneBoard is an open ADQ digitizer (vortex's teledyne.Teledyne).
type TeledyneBoard struct {
	b        *teledyne.Board
	borrowed bool // an acquisition's board: the acquisition closes it
}

// OpenTeledyneBoard opens the board at boardIndex (from 0).
func OpenTeledyneBoard(boardIndex int) (*TeledyneBoard, error) {
	b, err := teledyne.Open(boardIndex)
	if err != nil {
		return nil, tag(err)
	}
	return &TeledyneBoard{b: b}, nil
}

// TeledyneEnumerate lists the ADQ devices as a JSON record
// [{"ProductID": 49, "DevFile": "..."}, ...] (vortex's enumerate).
func TeledyneEnumerate() (string, error) {
	devs, err := teledyne.Enumerate()
	if err != nil {
		return "", tag(err)
	}
	if devs == nil {
		devs = []teledyne.DeviceInfo{}
	}
	return encodeJSON(devs), nil
}

// Info is the board's teledyne.Info as a JSON record (Go field names).
func (b *TeledyneBoard) Info() string { return encodeJSON(b.b.Info()) }

// Handle is ADQAPI's control unit handle of the board (0 once closed).
func (b *TeledyneBoard) Handle() int { return int(b.b.Handle()) }

// Valid reports whether the board is open.
func (b *TeledyneBoard) Valid() bool { return b.b.Valid() }

// Running reports whether the board is capturing.
func (b *TeledyneBoard) Running() bool { return b.b.Running() }

// StartCapture starts the board's acquisition (vortex's start_capture).
func (b *TeledyneBoard) StartCapture() error {
	if b.borrowed {
		return tag(badArg("Teledyne.start_capture: the board is a TeledyneAcquisition's, expected its start()"))
	}
	return tag(b.b.StartCapture())
}

// StopCapture stops the board's acquisition (vortex's stop_capture).
func (b *TeledyneBoard) StopCapture() error {
	if b.borrowed {
		return tag(badArg("Teledyne.stop_capture: the board is a TeledyneAcquisition's, expected its stop()"))
	}
	return tag(b.b.StopCapture())
}

// Close stops a capture and closes the board (nothing for an
// acquisition's board: the acquisition closes it).
func (b *TeledyneBoard) Close() error {
	if b.borrowed {
		return nil
	}
	return tag(b.b.Close())
}

// TeledyneBoard is a TeledyneAcquisition's board (vortex's
// TeledyneAcquisition.board_handle, running).
func (a *Acquisition) TeledyneBoard() (*TeledyneBoard, error) {
	s, ok := a.a.(*acquire.TeledyneAcquisition)
	if !ok {
		return nil, tag(badArg("%T has no board, expected a TeledyneAcquisition", a.a))
	}
	return &TeledyneBoard{b: s.Board(), borrowed: true}, nil
}
