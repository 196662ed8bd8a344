package acquire

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/vortexgo/vortexgo/gosrc/driver/aravis"
	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// GenICamTrigger is the camera's trigger, set through GenICam's standard
// features (SFNC): TriggerSelector first, then TriggerMode, TriggerSource
// and TriggerActivation. An empty field leaves the camera's setting.
type GenICamTrigger struct {
	// Selector is the trigger configured ("LineStart": one line per
	// pulse, the usual OCT line trigger; "FrameStart").
	Selector string
	// Mode is "On" (triggered) or "Off" (free running).
	Mode string
	// Source is the input ("Line0", "Line1", "Software" ...).
	Source string
	// Activation is the edge or level ("RisingEdge" ...).
	Activation string
}

// GenICamFeature is one more feature set by name, after the others: an
// integer or float value is set as such, anything else as text (an
// enumeration entry, a string).
type GenICamFeature struct {
	Name, Value string
}

// GenICamConfig configures a GenICamAcquisition: a line-scan camera whose
// frames of RecordsPerBlock lines of SamplesPerRecord pixels are the
// engine's blocks.
type GenICamConfig struct {
	// Camera is the Aravis device id ("" opens the first camera found;
	// "Fake_1" is Aravis's in-process simulated camera).
	Camera string
	// SamplesPerRecord is the line's pixels (the camera's Width).
	SamplesPerRecord int
	// RecordsPerBlock is the lines per frame (the camera's Height).
	RecordsPerBlock int
	// PixelFormat is the camera's PixelFormat.
	PixelFormat aravis.PixelFormat
	// LineRate is the lines per second (0 leaves the camera's): set as
	// AcquisitionLineRate, else LineRate, else, on an area camera (the
	// fake), as AcquisitionFrameRate = LineRate / RecordsPerBlock.
	LineRate float64
	// ExposureTimeUs is the exposure in microseconds (0 leaves the
	// camera's): ExposureTime, or ExposureTimeAbs on older cameras.
	ExposureTimeUs float64
	// Trigger is the camera's trigger.
	Trigger GenICamTrigger
	// Features are set last, in order.
	Features []GenICamFeature
	// AcquireTimeout is the longest wait for one frame.
	AcquireTimeout time.Duration
	// TolerateDroppedFrames keeps acquiring past frames the host missed
	// (counted): the block then holds the next frame, and the scan lags
	// the galvos by a frame per frame dropped. By default a dropped frame
	// ends the run, as a digitizer's overflow does.
	TolerateDroppedFrames bool
	// NoPacketResend turns GigE Vision's packet resend requests off, so a
	// lost packet makes its frame incomplete at once.
	NoPacketResend bool
}

// DefaultGenICamConfig is a line-scan OCT camera's usual setup: 2048
// pixels, 512 lines per frame, Mono12, the camera's own rate, exposure and
// trigger.
func DefaultGenICamConfig() GenICamConfig {
	return GenICamConfig{SamplesPerRecord: 2048, RecordsPerBlock: 512, PixelFormat: aravis.Mono12,
		AcquireTimeout: time.Second}
}

func (c *GenICamConfig) check() error {
	switch {
	case c.SamplesPerRecord < 1 || c.SamplesPerRecord > math.MaxInt32:
		return engine.Invalid("acquire: GenICamConfig.SamplesPerRecord=%d, expected >= 1", c.SamplesPerRecord)
	case c.RecordsPerBlock < 1 || c.RecordsPerBlock > math.MaxInt32:
		return engine.Invalid("acquire: GenICamConfig.RecordsPerBlock=%d, expected >= 1", c.RecordsPerBlock)
	case !c.PixelFormat.Valid():
		return engine.Invalid("acquire: GenICamConfig.PixelFormat=%d, expected Mono8, Mono10, Mono12, Mono16, Mono10p or Mono12p", int(c.PixelFormat))
	case c.LineRate < 0 || math.IsNaN(c.LineRate) || math.IsInf(c.LineRate, 0):
		return engine.Invalid("acquire: GenICamConfig.LineRate=%v, expected lines per second >= 0 (0: the camera's)", c.LineRate)
	case c.ExposureTimeUs < 0 || math.IsNaN(c.ExposureTimeUs) || math.IsInf(c.ExposureTimeUs, 0):
		return engine.Invalid("acquire: GenICamConfig.ExposureTimeUs=%v, expected microseconds >= 0 (0: the camera's)", c.ExposureTimeUs)
	case c.AcquireTimeout <= 0:
		return engine.Invalid("acquire: GenICamConfig.AcquireTimeout=%v, expected > 0", c.AcquireTimeout)
	}
	if _, ok := engine.MulSize(c.SamplesPerRecord, c.RecordsPerBlock, 2); !ok {
		return engine.TooLarge("acquire: GenICamConfig: a frame of %d x %d pixels overflows", c.RecordsPerBlock, c.SamplesPerRecord)
	}
	for i, f := range c.Features {
		if f.Name == "" {
			return engine.Invalid("acquire: GenICamConfig.Features[%d] has no name", i)
		}
	}
	return nil
}

// GenICamAcquisition acquires from a GenICam line-scan camera through
// Aravis (GigE Vision, USB3 Vision; CoaXPress through a GenTL producer is
// not Aravis's): each frame of RecordsPerBlock lines of SamplesPerRecord
// pixels is one block of as many records. The engine posts its blocks'
// pinned buffers (engine.Poster) and Aravis writes each frame straight
// into one (a buffer of user memory): no host copy. A frame narrower than
// 16 bits per pixel (Mono8, Mono10p, Mono12p) lands at the end of its
// block; the engine widens it on the device after uploading the packed
// bytes (engine.DeviceUnpacker), else Fill widens it in place on the host.
//
// An incomplete frame (Aravis's buffer status: missing packets, timeout,
// ...) ends the run with that status, its pixels never delivered; a
// dropped frame (the host had no buffer queued, or the frame id skips)
// ends it too unless TolerateDroppedFrames. Both are counted
// (FrameCounts, the engine's Status). A camera lost mid-run (unplugged,
// its heartbeat gone) ends the run with an error naming it.
type GenICamAcquisition struct {
	cfg    GenICamConfig
	cam    *aravis.Camera
	bytes  int // bytes of one frame
	land   int // where a frame lands in its block (bytes)
	pixels int

	// LineFeature is the feature the line rate was set through ("" when
	// LineRate is 0).
	lineFeature string

	mu       sync.Mutex
	running  bool
	started  bool // the camera was started this session
	stream   *aravis.Stream
	posted   []uintptr // the frames' landing addresses, oldest first
	stopping chan struct{}
	popMu    sync.Mutex // held by a Fill while it waits on the stream: Stop closes the stream only after

	haveLast      bool
	lastID        uint64
	gaps          uint64
	underrunsBase uint64
	counted       bool

	received, dropped, incomplete atomic.Int64

	// deviceUnpack: the engine widens the packed frames on the device
	// (engine.DeviceUnpacker); Fill then leaves them as they landed.
	deviceUnpack bool

	claim engine.Claim
}

var (
	_ acquisition         = (*GenICamAcquisition)(nil)
	_ engine.Poster       = (*GenICamAcquisition)(nil)
	_ engine.Claimer      = (*GenICamAcquisition)(nil)
	_ engine.FrameCounter = (*GenICamAcquisition)(nil)

	_ engine.DeviceUnpacker = (*GenICamAcquisition)(nil)
)

// NewGenICamAcquisition opens the camera of cfg and configures it. Without
// Aravis the error wraps aravis.ErrNoLibrary.
func NewGenICamAcquisition(cfg GenICamConfig) (*GenICamAcquisition, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	cfg.Features = append([]GenICamFeature(nil), cfg.Features...)
	cam, err := aravis.Open(cfg.Camera)
	if err != nil {
		return nil, err
	}
	n := cfg.SamplesPerRecord * cfg.RecordsPerBlock
	a := &GenICamAcquisition{cfg: cfg, cam: cam, pixels: n, bytes: cfg.PixelFormat.FrameBytes(n), land: cfg.PixelFormat.LandingOffset(n)}
	a.claim.Name("GenICamAcquisition")
	if err := a.apply(); err != nil {
		_ = cam.Close()
		return nil, err
	}
	return a, nil
}

// apply configures the camera: geometry, pixel format, trigger, exposure,
// line rate, the extra features, continuous acquisition; then checks the
// payload is exactly the frame.
func (a *GenICamAcquisition) apply() error {
	c, cam := &a.cfg, a.cam
	steps := []func() error{
		func() error { return cam.SetInteger("Width", int64(c.SamplesPerRecord)) },
		func() error { return cam.SetInteger("Height", int64(c.RecordsPerBlock)) },
		func() error { return cam.SetPixelFormat(c.PixelFormat.String()) },
	}
	for _, f := range []struct{ name, v string }{
		{"TriggerSelector", c.Trigger.Selector}, {"TriggerMode", c.Trigger.Mode},
		{"TriggerSource", c.Trigger.Source}, {"TriggerActivation", c.Trigger.Activation},
	} {
		if f.v != "" {
			steps = append(steps, func() error { return cam.SetString(f.name, f.v) })
		}
	}
	if c.LineRate > 0 { // before the exposure, which the line period bounds
		steps = append(steps, a.setLineRate)
	}
	if c.ExposureTimeUs > 0 {
		steps = append(steps, func() error { return cam.SetExposureTime(c.ExposureTimeUs) })
	}
	for _, f := range c.Features {
		steps = append(steps, func() error { return setFeature(cam, f) })
	}
	steps = append(steps, cam.SetContinuous)
	for _, s := range steps {
		if err := s(); err != nil {
			return fmt.Errorf("GenICamAcquisition: configuring %s %s: %w", cam.Vendor, cam.Model, err)
		}
	}
	p, err := cam.Payload()
	if err != nil {
		return err
	}
	if p != a.bytes {
		return fmt.Errorf("GenICamAcquisition: the camera sends %d bytes per frame, expected %d (%d lines x %d pixels of %s): "+
			"chunk data, padding or another geometry is not supported", p, a.bytes, c.RecordsPerBlock, c.SamplesPerRecord, c.PixelFormat)
	}
	return nil
}

// setLineRate sets the line rate through the first feature the camera has.
func (a *GenICamAcquisition) setLineRate() error {
	for _, name := range []string{"AcquisitionLineRate", "LineRate"} {
		if ok, err := a.cam.Available(name); err == nil && ok {
			a.lineFeature = name
			return a.cam.SetFloat(name, a.cfg.LineRate)
		}
	}
	a.lineFeature = "AcquisitionFrameRate"
	return a.cam.SetFrameRate(a.cfg.LineRate / float64(a.cfg.RecordsPerBlock))
}

func setFeature(cam *aravis.Camera, f GenICamFeature) error {
	if i, err := strconv.ParseInt(f.Value, 10, 64); err == nil {
		return cam.SetInteger(f.Name, i)
	}
	if x, err := strconv.ParseFloat(f.Value, 64); err == nil {
		return cam.SetFloat(f.Name, x)
	}
	return cam.SetString(f.Name, f.Value)
}

// Config returns the configuration the source was made with.
func (a *GenICamAcquisition) Config() GenICamConfig { return a.cfg }

// Camera is the source's camera.
func (a *GenICamAcquisition) Camera() *aravis.Camera { return a.cam }

// LineRateFeature is the feature the line rate was set through ("" when
// the configuration left it).
func (a *GenICamAcquisition) LineRateFeature() string { return a.lineFeature }

// Claims reports the claim an engine holds while it uses the source.
func (a *GenICamAcquisition) Claims() []*engine.Claim { return []*engine.Claim{&a.claim} }

// SamplesPerRecord is the line's pixels.
func (a *GenICamAcquisition) SamplesPerRecord() int { return a.cfg.SamplesPerRecord }

// FrameCounts are the session's frames: received, dropped, incomplete.
func (a *GenICamAcquisition) FrameCounts() engine.FrameCounts {
	return engine.FrameCounts{Received: a.received.Load(), Dropped: a.dropped.Load(), Incomplete: a.incomplete.Load()}
}

// Prepare checks the source is open.
func (a *GenICamAcquisition) Prepare() error {
	return a.claim.Err("acquire: GenICamAcquisition.Prepare")
}

// Start creates the session's stream; the camera starts at the first Fill,
// once the preload blocks are posted.
func (a *GenICamAcquisition) Start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.running {
		return nil
	}
	if err := a.claim.Err("acquire: GenICamAcquisition.Start"); err != nil {
		return err
	}
	s, err := a.cam.CreateStream(a.cfg.NoPacketResend)
	if err != nil {
		return err
	}
	a.stream, a.running, a.started, a.posted = s, true, false, a.posted[:0]
	a.stopping = make(chan struct{})
	a.haveLast, a.gaps, a.counted = false, 0, false
	a.received.Store(0)
	a.dropped.Store(0)
	a.incomplete.Store(0)
	return nil
}

// Stop stops the camera and the stream: no posted buffer is written after
// it returns; a Fill waiting returns io.EOF.
func (a *GenICamAcquisition) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

func (a *GenICamAcquisition) stopLocked() error {
	if !a.running {
		return nil
	}
	a.running = false
	close(a.stopping)
	var err error
	if a.started && !a.cam.Lost() {
		err = a.cam.StopAcquisition()
	}
	a.popMu.Lock() // a Fill's wait ends within waitSlice
	a.stream.Close()
	a.popMu.Unlock()
	a.stream, a.posted = nil, a.posted[:0]
	return err
}

// failLocked stops the session on err (a.mu held) and returns err.
func (a *GenICamAcquisition) failLocked(err error) error {
	_ = a.stopLocked() // err is the one to report
	return err
}

// Post queues a block's buffer with the stream (engine.Poster).
func (a *GenICamAcquisition) Post(dst []uint16) error {
	if len(dst) != a.pixels {
		return fmt.Errorf("block is not exactly equal to the configured size: %d != %d lines of %d pixels",
			len(dst)/max(a.cfg.SamplesPerRecord, 1), a.cfg.RecordsPerBlock, a.cfg.SamplesPerRecord)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running {
		return fmt.Errorf("acquire: GenICamAcquisition.Post: %w", io.EOF)
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(dst))) + uintptr(a.land)
	if err := a.stream.Push(p, a.bytes); err != nil {
		return a.failLocked(err)
	}
	a.posted = append(a.posted, p)
	return nil
}

// Packing is the landed frame of a format narrower than 16 bits per pixel
// (Mono8, Mono10p, Mono12p): its bits and where it lands in the block
// (LandingOffset, the block's end); the 16-bit formats need no widening.
func (a *GenICamAcquisition) Packing() (bits, offset int, ok bool) {
	f := a.cfg.PixelFormat
	if f.Bits() >= 16 {
		return 0, 0, false
	}
	return f.Bits(), a.land, true
}

// SetUnpackOnDevice is the engine's choice at Prepare: on, Fill leaves
// the packed frames for the device to widen (the bus then carries 3/4 of
// the uint16 bytes for Mono12p, 5/8 for Mono10p, half for Mono8).
func (a *GenICamAcquisition) SetUnpackOnDevice(on bool) {
	a.mu.Lock()
	a.deviceUnpack = on
	a.mu.Unlock()
}

// Fill waits for the frame of dst, the oldest posted buffer, and widens
// it to uint16 in place, unless the engine widens it on the device
// (SetUnpackOnDevice).
func (a *GenICamAcquisition) Fill(dst []uint16, records int) (int, error) {
	if err := checkFill(dst, records, a.cfg.SamplesPerRecord); err != nil {
		return 0, err
	}
	if len(dst) < a.pixels {
		return 0, engine.Invalid("acquire: GenICamAcquisition.Fill: len(dst)=%d, expected a whole block of %d", len(dst), a.pixels)
	}
	p := uintptr(unsafe.Pointer(unsafe.SliceData(dst))) + uintptr(a.land)
	a.mu.Lock()
	if !a.running {
		a.mu.Unlock()
		return 0, io.EOF
	}
	if len(a.posted) == 0 || a.posted[0] != p {
		a.mu.Unlock()
		return 0, fmt.Errorf("acquire: GenICamAcquisition.Fill: dst is not the oldest posted buffer (%d posted): "+
			"an engine posts each block (engine.Poster) before it fills it", len(a.posted))
	}
	if !a.started {
		if err := a.cam.StartAcquisition(); err != nil {
			err = a.failLocked(err)
			a.mu.Unlock()
			return 0, err
		}
		a.started = true
	}
	stopping, stream := a.stopping, a.stream
	a.mu.Unlock()

	f, err := a.wait(stream, stopping)
	if errors.Is(err, io.EOF) {
		return 0, io.EOF
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.running {
		return 0, io.EOF
	}
	if err != nil {
		return 0, a.failLocked(err)
	}
	a.posted = a.posted[1:]
	if err := a.check(stream, f, p); err != nil {
		return 0, a.failLocked(err)
	}
	if !a.deviceUnpack {
		a.cfg.PixelFormat.Widen(dst[:a.pixels])
	}
	return records, nil
}

// wait pops the next frame within AcquireTimeout, in slices of waitSlice
// so that a Stop is seen soon; io.EOF when stopped.
func (a *GenICamAcquisition) wait(stream *aravis.Stream, stopping <-chan struct{}) (aravis.Frame, error) {
	deadline := time.Now().Add(a.cfg.AcquireTimeout)
	for {
		select {
		case <-stopping:
			return aravis.Frame{}, io.EOF
		default:
		}
		a.popMu.Lock()
		select {
		case <-stopping:
			a.popMu.Unlock()
			return aravis.Frame{}, io.EOF
		default:
		}
		f, ok := stream.Pop(min(max(time.Until(deadline), 0), waitSlice))
		a.popMu.Unlock()
		if ok {
			return f, nil
		}
		if a.cam.Lost() {
			return f, fmt.Errorf("GenICamAcquisition: the camera %s (%s %s) was lost (Aravis's control-lost: unplugged, "+
				"or its heartbeat stopped) after %d frames", a.cam.ID, a.cam.Vendor, a.cam.Model, a.received.Load())
		}
		if !time.Now().Before(deadline) {
			return f, fmt.Errorf("GenICamAcquisition: no frame from the camera %s within %v (after %d frames): "+
				"is it triggered, connected, and is acquire_timeout longer than a frame?", a.cam.ID, a.cfg.AcquireTimeout, a.received.Load())
		}
	}
}

// check counts the frame and refuses an incomplete, misplaced or
// misshapen one, or one after dropped frames (unless tolerated); a.mu held.
func (a *GenICamAcquisition) check(stream *aravis.Stream, f aravis.Frame, p uintptr) error {
	a.received.Add(1)
	if f.Status != aravis.BufferSuccess {
		a.incomplete.Add(1)
		return fmt.Errorf("GenICamAcquisition: frame %d from the camera %s is incomplete (Aravis's buffer status: %s); "+
			"its lines are not delivered (%d frames received, %d incomplete)", f.ID, a.cam.ID, f.Status, a.received.Load(), a.incomplete.Load())
	}
	if f.Data != p {
		return fmt.Errorf("GenICamAcquisition: frame %d arrived in another block's buffer (0x%x, expected 0x%x): Aravis returned the buffers out of order", f.ID, f.Data, p)
	}
	if f.Width != a.cfg.SamplesPerRecord || f.Height != a.cfg.RecordsPerBlock || f.PixelFormat != a.cfg.PixelFormat.PFNC() {
		return fmt.Errorf("GenICamAcquisition: frame %d is %d x %d pixels of format 0x%08x, expected %d x %d of %s (0x%08x)",
			f.ID, f.Width, f.Height, f.PixelFormat, a.cfg.SamplesPerRecord, a.cfg.RecordsPerBlock, a.cfg.PixelFormat, a.cfg.PixelFormat.PFNC())
	}
	if a.haveLast {
		a.gaps += frameGap(a.lastID, f.ID)
	}
	a.haveLast, a.lastID = true, f.ID
	_, _, under := stream.Statistics()
	if !a.counted {
		a.underrunsBase, a.counted = under, true
	}
	lost := max(a.gaps, under-min(under, a.underrunsBase))
	if prev := a.dropped.Load(); int64(lost) > prev {
		a.dropped.Store(int64(lost))
		if !a.cfg.TolerateDroppedFrames {
			return fmt.Errorf("GenICamAcquisition: %d frame(s) dropped before frame %d from the camera %s: the host fell behind the "+
				"camera (no buffer was queued) or the link lost them (tolerate_dropped_frames keeps acquiring)", int64(lost)-prev, f.ID, a.cam.ID)
		}
	}
	return nil
}

// frameGap is the frames missing between ids last and id: GigE Vision
// 1.x's 16-bit ids wrap from 65535 to 1 (0 is never used).
func frameGap(last, id uint64) uint64 {
	switch {
	case id > last:
		return id - last - 1
	case last <= 0xffff && id >= 1 && id < last:
		return (0xffff - last) + (id - 1)
	}
	return 0
}

// Close stops a session still running and releases the camera. While an
// engine that prepared the source has not finished it refuses with
// backend.ErrInUse.
func (a *GenICamAcquisition) Close() error {
	return a.claim.Close(func() error {
		a.mu.Lock()
		defer a.mu.Unlock()
		err := a.stopLocked()
		return errors.Join(err, a.cam.Close())
	})
}
