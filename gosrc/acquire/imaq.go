package acquire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/driver/imaq"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// ImaqLineTrigger is vortex's imaq.LineTrigger: the line trigger input.
type ImaqLineTrigger struct {
	Line, Skip uint32
	Polarity   imaq.Polarity
	Signal     imaq.Signal
}

// ImaqFrameTrigger is vortex's imaq.FrameTrigger: the frame trigger input.
type ImaqFrameTrigger struct {
	Line     uint32
	Polarity imaq.Polarity
	Signal   imaq.Signal
}

// ImaqTriggerOutput is vortex's imaq.TriggerOutput: a trigger line driven
// by the frame grabber.
type ImaqTriggerOutput struct {
	Line     uint32
	Source   imaq.Source
	Polarity imaq.Polarity
	Signal   imaq.Signal
}

// ImaqConfig configures an ImaqAcquisition (vortex's
// ImaqAcquisitionConfig): a record is one camera line of SamplesPerRecord
// pixels, a block a frame of RecordsPerBlock lines.
type ImaqConfig struct {
	// DeviceName is the interface ("img0").
	DeviceName                        string
	SamplesPerRecord, RecordsPerBlock int
	// SampleOffset and RecordOffset place the region of interest in the
	// acquisition window (vortex's offset: left, top).
	SampleOffset, RecordOffset int
	LineTrigger                *ImaqLineTrigger
	FrameTrigger               *ImaqFrameTrigger
	TriggerOutput              []ImaqTriggerOutput
	// RingSize is the ring's buffers (frames the host may fall behind).
	RingSize int
	// AcquireTimeout bounds the wait for one frame.
	AcquireTimeout time.Duration
	// StopOnError stops the capture at the first error.
	StopOnError bool
	// BypassRegionCheck accepts a region larger than the camera's: the
	// rows and columns past it stay zero.
	BypassRegionCheck bool
}

// DefaultImaqConfig is vortex's default: img0, 1024 samples per record,
// 1000 records per block, no offset, no input triggers, one trigger output
// (line 0, hsync, high, external), a ring of 10, a 1 s timeout, stop on
// error, the region check on.
func DefaultImaqConfig() ImaqConfig {
	return ImaqConfig{DeviceName: "img0", SamplesPerRecord: 1024, RecordsPerBlock: 1000,
		TriggerOutput: []ImaqTriggerOutput{{Source: imaq.SourceHsync, Polarity: imaq.PolarityHigh, Signal: imaq.SignalExternal}},
		RingSize:      10, AcquireTimeout: time.Second, StopOnError: true}
}

func (c *ImaqConfig) check() error {
	switch {
	case c.SamplesPerRecord < 1 || c.SamplesPerRecord > math.MaxUint32:
		return engine.Invalid("acquire: ImaqConfig.SamplesPerRecord=%d, expected >= 1", c.SamplesPerRecord)
	case c.RecordsPerBlock < 1 || c.RecordsPerBlock > math.MaxUint32:
		return engine.Invalid("acquire: ImaqConfig.RecordsPerBlock=%d, expected >= 1", c.RecordsPerBlock)
	case c.SampleOffset < 0 || c.SampleOffset > math.MaxUint32 || c.RecordOffset < 0 || c.RecordOffset > math.MaxUint32:
		return engine.Invalid("acquire: ImaqConfig offset (%d, %d), expected offsets >= 0", c.SampleOffset, c.RecordOffset)
	case c.AcquireTimeout < 0:
		return engine.Invalid("acquire: ImaqConfig.AcquireTimeout=%v, expected >= 0", c.AcquireTimeout)
	case c.RingSize == 0:
		return fmt.Errorf("ring size (%d) must be non-zero", c.RingSize) // vortex's validate
	case c.RingSize < 0 || c.RingSize > 1<<16:
		return engine.Invalid("acquire: ImaqConfig.RingSize=%d, expected 1..65536", c.RingSize)
	}
	if _, ok := engine.MulSize(c.SamplesPerRecord, c.RecordsPerBlock, 2); !ok {
		return engine.TooLarge("acquire: ImaqConfig: a block of %d x %d overflows", c.RecordsPerBlock, c.SamplesPerRecord)
	}
	return nil
}

// ImaqAcquisition acquires from an NI frame grabber's line-scan camera
// (vortex's ImaqAcquisition): each block is one frame of RecordsPerBlock
// lines. NI-IMAQ fills a ring of RingSize buffers (memory outside the Go
// heap, handed to imgRingSetup); Fill locks frame k of the capture, copies
// the region of interest into the engine's block and releases it, as
// vortex does. The capture starts at the first Fill (so that an IO's
// preloaded waveform is out before the first line) and a frame the ring
// overwrote before Fill reached it (the host fell behind), a timeout or a
// frame grabber error ends the session with vortex's error; Stop stops
// the capture and leaves the session ready for the next.
type ImaqAcquisition struct {
	cfg     ImaqConfig
	session *imaq.Session
	fit     imaq.ROI // the region NI-IMAQ acquires
	copyROI imaq.ROI // where the target region lies in it
	stride  int      // pixels per buffer row
	ring    [][]byte

	mu       sync.Mutex
	running  bool // between Start and Stop
	capture  bool // the camera was started this session
	frame    uint32
	stopping chan struct{}

	claim engine.Claim
}

var (
	_ acquisition    = (*ImaqAcquisition)(nil)
	_ engine.Claimer = (*ImaqAcquisition)(nil)
)

// NewImaqAcquisition opens cfg's interface, fits and configures the region,
// the triggers, the frame timeout and the ring (vortex's initialize).
// Without NI-IMAQ the error wraps imaq.ErrNoLibrary.
func NewImaqAcquisition(cfg ImaqConfig) (*ImaqAcquisition, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.TriggerOutput = slices.Clone(cfg.TriggerOutput)
	s, err := imaq.Open(cfg.DeviceName)
	if err != nil {
		return nil, err
	}
	a := &ImaqAcquisition{cfg: cfg, session: s}
	a.claim.Name("ImaqAcquisition")
	if err := a.configure(); err != nil {
		_ = a.release()
		return nil, err
	}
	return a, nil
}

func (a *ImaqAcquisition) configure() error {
	c, s := &a.cfg, a.session
	info := s.Info()
	// vortex chooses the smallest of its datatypes (uint16 only) holding the
	// camera's pixels: NI-IMAQ expands 10- and 12-bit pixels to 16 bits.
	if info.BitsPerPixel > 16 {
		return fmt.Errorf("IMAQ device %s bytes per pixel of %d does not match any acquisition datatype: ", c.DeviceName, info.BytesPerPixel)
	}
	target := imaq.ROI{Left: uint32(c.SampleOffset), Width: uint32(c.SamplesPerRecord), Top: uint32(c.RecordOffset), Height: uint32(c.RecordsPerBlock)}
	fit, err := s.FitRegion(target)
	if err != nil {
		return err
	}
	if fit.Width < target.Width || fit.Height < target.Height {
		msg := fmt.Sprintf("requested region with offset (%d, %d) is larger than maximum: (%d x %d) > (%d x %d) (records x samples)",
			c.RecordOffset, c.SampleOffset, c.RecordsPerBlock, c.SamplesPerRecord, fit.Height, fit.Width)
		if !c.BypassRegionCheck {
			return errors.New(msg)
		}
	}
	if err := s.ConfigureRegion(fit); err != nil {
		return err
	}
	a.fit = fit
	a.copyROI = imaq.ROI{Top: target.Top - fit.Top, Left: target.Left - fit.Left}
	a.copyROI.Width = min(target.Width, fit.Width-min(a.copyROI.Left, fit.Width))
	a.copyROI.Height = min(target.Height, fit.Height-min(a.copyROI.Top, fit.Height))
	a.stride = int(fit.Width)
	for _, o := range c.TriggerOutput {
		if err := s.ConfigureTriggerOutput(o.Line, o.Source, o.Polarity, o.Signal); err != nil {
			return err
		}
	}
	if t := c.LineTrigger; t != nil {
		if err := s.ConfigureLineTrigger(t.Line, t.Skip, t.Polarity, t.Signal); err != nil {
			return err
		}
	}
	if t := c.FrameTrigger; t != nil {
		if err := s.ConfigureFrameTrigger(t.Line, imaq.InfiniteTimeout, t.Polarity, t.Signal); err != nil {
			return err
		}
	}
	if err := s.ConfigureFrameTimeout(c.AcquireTimeout); err != nil {
		return err
	}
	need, err := s.RequiredBufferSize()
	if err != nil {
		return err
	}
	if have := int(fit.Height) * int(fit.Width) * 2; have != int(need) {
		return fmt.Errorf("mismatch between allocated and required buffer size: %d != %d (suggests internal error)", have, need)
	}
	ptrs := make([]uintptr, c.RingSize)
	for i := range ptrs {
		// Outside the Go heap: NI-IMAQ keeps the addresses.
		b, err := unix.Mmap(-1, 0, int(need), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
		if err != nil {
			return fmt.Errorf("acquire: ImaqAcquisition: ring buffer of %d bytes: %w", need, err)
		}
		a.ring = append(a.ring, b)
		ptrs[i] = uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	}
	return s.ConfigureRing(ptrs, 0)
}

// Config returns the configuration the source was made with.
func (a *ImaqAcquisition) Config() ImaqConfig { return a.cfg }

// Session is the source's NI-IMAQ session (vortex's ImaqAcquisition.imaq).
func (a *ImaqAcquisition) Session() *imaq.Session { return a.session }

// Claims reports the claim an engine holds while it uses the source.
func (a *ImaqAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// SamplesPerRecord is the pixels of one line.
func (a *ImaqAcquisition) SamplesPerRecord() int { return a.cfg.SamplesPerRecord }

// Prepare checks the source is open (it was configured when made).
func (a *ImaqAcquisition) Prepare() error { return a.claim.Err("acquire: ImaqAcquisition.Prepare") }

// Start begins a session at frame 0; the camera starts at the first Fill.
func (a *ImaqAcquisition) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.claim.Err("acquire: ImaqAcquisition.Start"); err != nil {
		return err
	}
	if a.running {
		return nil
	}
	a.running, a.capture, a.frame = true, false, 0
	a.stopping = make(chan struct{})
	return nil
}

// Running reports whether the camera captures.
func (a *ImaqAcquisition) Running() bool { return a.session.Running() }

func (a *ImaqAcquisition) stopLocked() error {
	if !a.running {
		return nil
	}
	a.running = false
	close(a.stopping)
	return a.session.StopCapture()
}

// Stop stops the capture; a Fill waiting returns io.EOF.
func (a *ImaqAcquisition) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

func (a *ImaqAcquisition) fail(err error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg.StopOnError {
		_ = a.stopLocked() // err is the one to report
	}
	return err
}

// Fill waits for the session's next frame and copies its region of
// interest into dst (records lines; rows past the camera's region stay as
// they were, vortex's zero padding of a bypassed region check).
func (a *ImaqAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.cfg.SamplesPerRecord); err != nil {
		return 0, err
	}
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return 0, io.EOF
	}
	if !a.capture {
		if err := a.session.StartCapture(); err != nil {
			a.mu.Unlock()
			return 0, a.fail(err)
		}
		a.capture = true
	}
	k := a.frame
	a.frame++
	stopping := a.stopping
	a.mu.Unlock()
	f, err := a.session.LockFrame(k, true)
	select {
	case <-stopping:
		if err == nil {
			_ = a.session.ReleaseFrame()
		}
		return 0, io.EOF
	default:
	}
	if err != nil {
		return 0, a.fail(err)
	}
	buf := a.ring[f.Actual%uint32(len(a.ring))]
	src := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)/2)
	S, r := a.cfg.SamplesPerRecord, a.copyROI
	for i := int(r.Top); i < int(r.Top+r.Height) && i < records; i++ {
		copy(dst[i*S+int(r.Left):i*S+int(r.Left+r.Width)], src[i*a.stride+int(r.Left):i*a.stride+int(r.Left+r.Width)])
	}
	if err := a.session.ReleaseFrame(); err != nil {
		return 0, a.fail(err)
	}
	return records, nil
}

func (a *ImaqAcquisition) release() error {
	err := a.session.Close()
	for _, b := range a.ring {
		_ = unix.Munmap(b)
	}
	a.ring = nil
	return err
}

// Close stops the capture and closes the session. While an engine that
// prepared the source has not finished it refuses with backend.ErrInUse.
func (a *ImaqAcquisition) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		_ = a.stopLocked()
		return a.release()
	})
}
