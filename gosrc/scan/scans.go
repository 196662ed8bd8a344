package scan

import (
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

// Config is what a scan type's config offers its Scan: vortex's
// patterned_config_factory_t (validate, to_segments, copy).
type Config[C any] interface {
	// Validate checks every field, naming the first bad one.
	Validate() error
	// ToSegments is the pattern's active segments.
	ToSegments() ([]Segment, error)
	// Copy is a deep copy (vortex's copy()).
	Copy() C
	// Segmented is the part every segmented scan shares.
	Segmented() SegmentedConfig
}

// Scan is a segmented scan built from a config of type C, vortex's
// patterned_scan_factory_t: RasterScan, RadialScan, SpiralScan,
// FreeformScan and their repeated variants are its instances. The zero
// value is ready for Initialize.
type Scan[C Config[C]] struct {
	SegmentedScan
	config C
}

// Initialize validates cfg, builds its segments and restarts the scan at
// the origin at rest (vortex's initialize). On error the scan is unchanged.
func (s *Scan[C]) Initialize(cfg C) error {
	segs, base, err := build(cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.initialize(base, segs); err != nil {
		return err
	}
	s.config = cfg.Copy()
	return nil
}

// Change switches to cfg without a discontinuity, vortex's change(config,
// restart, event_id): the segment being played finishes (or the inactive
// path being played reaches its segment), then an inactive path leads into
// the new pattern at the next segment index (at segment 0 when restart, or
// when the new pattern has fewer segments). An Event marker with eventID
// marks the sample where the change takes effect, as vortex's Python
// binding always adds one. channels_per_sample cannot change. On error the
// scan is unchanged.
func (s *Scan[C]) Change(cfg C, restart bool, eventID uint64) error {
	segs, base, err := build(cfg)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.initialized {
		return notInitialized()
	}
	if err := s.change(base, segs, restart, true, eventID); err != nil {
		return err
	}
	s.config = cfg.Copy()
	return nil
}

// Config is a copy of the active config (vortex's config property).
func (s *Scan[C]) Config() C {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.config.Copy()
}

func build[C Config[C]](cfg C) ([]Segment, SegmentedConfig, error) {
	if err := cfg.Validate(); err != nil {
		return nil, SegmentedConfig{}, err
	}
	segs, err := cfg.ToSegments()
	if err != nil {
		return nil, SegmentedConfig{}, err
	}
	base := cfg.Segmented()
	if err := validateSegments(&base, segs); err != nil {
		return nil, SegmentedConfig{}, err
	}
	if p := base.InactivePolicy; p.Kind != MinimumDynamicLimitedKind {
		// a pass holds every segment and one fixed path after each
		total := int64(p.InterVolumeSamples)
		for i := range segs {
			total += int64(segs[i].Len()) + int64(p.InterSegmentSamples)
		}
		if total*int64(base.ChannelsPerSample) > maxScanElements {
			return nil, SegmentedConfig{}, fmt.Errorf("scan: a pass of %d samples of %d channels (segments and inter_segment_samples %d): more than %d values: %w",
				total, base.ChannelsPerSample, p.InterSegmentSamples, maxScanElements, backend.ErrTooLarge)
		}
	}
	return segs, base.copySegmented(), nil
}

var (
	rasterNames = xyNames{samples: "ascans_per_bscan", segments: "bscans_per_volume", segmentExtent: "bscan_extent"}
	spiralNames = xyNames{samples: "samples_per_segment", segments: "segments_per_volume", segmentExtent: "segment_extent"}
)

func named(n xyNames, cls string) xyNames { n.cls = cls; return n }

// RasterScanConfig is vortex's RasterScanConfig: RasterWaypoints,
// SequentialPattern and SegmentedConfig, with their defaults from
// NewRasterScanConfig.
type RasterScanConfig struct {
	RasterWaypoints
	SequentialPattern
	SegmentedConfig
}

// NewRasterScanConfig is vortex's RasterScanConfig() with its defaults.
func NewRasterScanConfig() RasterScanConfig {
	return RasterScanConfig{NewRasterWaypoints(), NewSequentialPattern(), NewSegmentedConfig()}
}

// Validate checks every field, naming the first bad one.
func (c RasterScanConfig) Validate() error {
	const cls = "RasterScanConfig"
	if err := c.validateSegmented(cls); err != nil {
		return err
	}
	return c.XYWaypoints.validate(named(rasterNames, cls))
}

// ToSegments is the pattern's segments (vortex's to_segments).
func (c RasterScanConfig) ToSegments() ([]Segment, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.ToPattern(c.ToWaypoints().List(), 2)
}

// Copy is a deep copy.
func (c RasterScanConfig) Copy() RasterScanConfig {
	c.SegmentedConfig = c.copySegmented()
	return c
}

// Segmented is the shared part.
func (c RasterScanConfig) Segmented() SegmentedConfig { return c.SegmentedConfig }

// RepeatedRasterScanConfig is vortex's RepeatedRasterScanConfig:
// RasterWaypoints, RepeatedPattern and SegmentedConfig.
type RepeatedRasterScanConfig struct {
	RasterWaypoints
	RepeatedPattern
	SegmentedConfig
}

// NewRepeatedRasterScanConfig is vortex's RepeatedRasterScanConfig() with its defaults.
func NewRepeatedRasterScanConfig() RepeatedRasterScanConfig {
	return RepeatedRasterScanConfig{NewRasterWaypoints(), NewRepeatedPattern(), NewSegmentedConfig()}
}

// Validate checks every field, naming the first bad one.
func (c RepeatedRasterScanConfig) Validate() error {
	const cls = "RepeatedRasterScanConfig"
	if err := c.validateSegmented(cls); err != nil {
		return err
	}
	if err := c.XYWaypoints.validate(named(rasterNames, cls)); err != nil {
		return err
	}
	return validateRepeat(cls, c.RepeatedPattern, c.SegmentsPerVolume, c.SamplesPerSegment)
}

// ToSegments is the pattern's segments.
func (c RepeatedRasterScanConfig) ToSegments() ([]Segment, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.ToPattern(c.ToWaypoints().List(), 2)
}

// Copy is a deep copy.
func (c RepeatedRasterScanConfig) Copy() RepeatedRasterScanConfig {
	c.SegmentedConfig = c.copySegmented()
	c.RepeatedPattern = c.copyRepeated()
	return c
}

// Segmented is the shared part.
func (c RepeatedRasterScanConfig) Segmented() SegmentedConfig { return c.SegmentedConfig }

// RadialScanConfig is vortex's RadialScanConfig: RadialWaypoints,
// SequentialPattern and SegmentedConfig.
type RadialScanConfig struct {
	RadialWaypoints
	SequentialPattern
	SegmentedConfig
}

// NewRadialScanConfig is vortex's RadialScanConfig() with its defaults.
func NewRadialScanConfig() RadialScanConfig {
	return RadialScanConfig{NewRadialWaypoints(), NewSequentialPattern(), NewSegmentedConfig()}
}

// Validate checks every field, naming the first bad one.
func (c RadialScanConfig) Validate() error {
	const cls = "RadialScanConfig"
	if err := c.validateSegmented(cls); err != nil {
		return err
	}
	return c.XYWaypoints.validate(named(rasterNames, cls))
}

// ToSegments is the pattern's segments.
func (c RadialScanConfig) ToSegments() ([]Segment, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.ToPattern(c.ToWaypoints().List(), 2)
}

// Copy is a deep copy.
func (c RadialScanConfig) Copy() RadialScanConfig {
	c.SegmentedConfig = c.copySegmented()
	return c
}

// Segmented is the shared part.
func (c RadialScanConfig) Segmented() SegmentedConfig { return c.SegmentedConfig }

// RepeatedRadialScanConfig is vortex's RepeatedRadialScanConfig:
// RadialWaypoints, RepeatedPattern and SegmentedConfig.
type RepeatedRadialScanConfig struct {
	RadialWaypoints
	RepeatedPattern
	SegmentedConfig
}

// NewRepeatedRadialScanConfig is vortex's RepeatedRadialScanConfig() with its defaults.
func NewRepeatedRadialScanConfig() RepeatedRadialScanConfig {
	return RepeatedRadialScanConfig{NewRadialWaypoints(), NewRepeatedPattern(), NewSegmentedConfig()}
}

// Validate checks every field, naming the first bad one.
func (c RepeatedRadialScanConfig) Validate() error {
	const cls = "RepeatedRadialScanConfig"
	if err := c.validateSegmented(cls); err != nil {
		return err
	}
	if err := c.XYWaypoints.validate(named(rasterNames, cls)); err != nil {
		return err
	}
	return validateRepeat(cls, c.RepeatedPattern, c.SegmentsPerVolume, c.SamplesPerSegment)
}

// ToSegments is the pattern's segments.
func (c RepeatedRadialScanConfig) ToSegments() ([]Segment, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.ToPattern(c.ToWaypoints().List(), 2)
}

// Copy is a deep copy.
func (c RepeatedRadialScanConfig) Copy() RepeatedRadialScanConfig {
	c.SegmentedConfig = c.copySegmented()
	c.RepeatedPattern = c.copyRepeated()
	return c
}

// Segmented is the shared part.
func (c RepeatedRadialScanConfig) Segmented() SegmentedConfig { return c.SegmentedConfig }

// SpiralScanConfig is vortex's SpiralScanConfig: SpiralWaypoints,
// SequentialPattern and SegmentedConfig.
type SpiralScanConfig struct {
	SpiralWaypoints
	SequentialPattern
	SegmentedConfig
}

// NewSpiralScanConfig is vortex's SpiralScanConfig() with its defaults.
func NewSpiralScanConfig() SpiralScanConfig {
	return SpiralScanConfig{NewSpiralWaypoints(), NewSequentialPattern(), NewSegmentedConfig()}
}

// Validate checks every field, naming the first bad one.
func (c SpiralScanConfig) Validate() error {
	const cls = "SpiralScanConfig"
	if err := c.validateSegmented(cls); err != nil {
		return err
	}
	return c.SpiralWaypoints.validate(named(spiralNames, cls))
}

// ToSegments is the pattern's segments.
func (c SpiralScanConfig) ToSegments() ([]Segment, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c.ToPattern(c.ToWaypoints().List(), 2)
}

// Copy is a deep copy.
func (c SpiralScanConfig) Copy() SpiralScanConfig {
	c.SegmentedConfig = c.copySegmented()
	return c
}

// Segmented is the shared part.
func (c SpiralScanConfig) Segmented() SegmentedConfig { return c.SegmentedConfig }

// FreeformScanConfig is vortex's FreeformScanConfig: a SegmentedConfig and
// the segments themselves (Pattern, e.g. from SequentialPattern.ToPattern).
type FreeformScanConfig struct {
	SegmentedConfig
	// Pattern is the scan's active segments, played in order.
	Pattern []Segment
}

// NewFreeformScanConfig is vortex's FreeformScanConfig() with its defaults
// (no segments: set Pattern).
func NewFreeformScanConfig() FreeformScanConfig {
	return FreeformScanConfig{SegmentedConfig: NewSegmentedConfig()}
}

// Validate checks every field, naming the first bad one.
func (c FreeformScanConfig) Validate() error {
	const cls = "FreeformScanConfig"
	if err := c.validateSegmented(cls); err != nil {
		return err
	}
	if len(c.Pattern) == 0 {
		return invalidf("%s.pattern: no segments, expected at least one", cls)
	}
	return nil
}

// ToSegments is a copy of Pattern.
func (c FreeformScanConfig) ToSegments() ([]Segment, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return copySegments(c.Pattern), nil
}

// Copy is a deep copy.
func (c FreeformScanConfig) Copy() FreeformScanConfig {
	c.SegmentedConfig = c.copySegmented()
	c.Pattern = copySegments(c.Pattern)
	return c
}

// Segmented is the shared part.
func (c FreeformScanConfig) Segmented() SegmentedConfig { return c.SegmentedConfig }

// The scan types of vortex.scan.
type (
	// RasterScan is vortex's RasterScan.
	RasterScan = Scan[RasterScanConfig]
	// RepeatedRasterScan is vortex's RepeatedRasterScan.
	RepeatedRasterScan = Scan[RepeatedRasterScanConfig]
	// RadialScan is vortex's RadialScan.
	RadialScan = Scan[RadialScanConfig]
	// RepeatedRadialScan is vortex's RepeatedRadialScan.
	RepeatedRadialScan = Scan[RepeatedRadialScanConfig]
	// SpiralScan is vortex's SpiralScan.
	SpiralScan = Scan[SpiralScanConfig]
	// FreeformScan is vortex's FreeformScan.
	FreeformScan = Scan[FreeformScanConfig]
)

func validateRepeat(cls string, p RepeatedPattern, spv, samples int) error {
	if err := p.validate(cls); err != nil {
		return err
	}
	if int64(spv)*int64(samples)*2*int64(p.RepeatCount) > maxScanElements {
		return fmt.Errorf("%s.repeat_count: %d repeats of [%d, %d] waypoints, more than %d values: %w", cls, p.RepeatCount, spv, samples, maxScanElements, backend.ErrTooLarge)
	}
	if spv%p.RepeatPeriod != 0 {
		return invalidf("%s.repeat_period: %d, expected to divide bscans_per_volume (%d)", cls, p.RepeatPeriod, spv)
	}
	return nil
}

func (p RepeatedPattern) copyRepeated() RepeatedPattern {
	p.RepeatStrategy.FlagList = append([]marker.Flags(nil), p.RepeatStrategy.FlagList...)
	return p
}

var invalidf = backend.Invalidf
