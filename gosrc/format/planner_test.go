package format

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/marker"
)

func copyAct(count, off, seg, rec int, rev bool) Action {
	return Action{Kind: Copy, Count: count, BlockOffset: off, BufferSegment: seg, BufferRecord: rec, Reverse: rev,
		ScanIndex: NoIndex, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex}
}

func segAct(sample, scan, vol, seg int64) Action {
	return Action{Kind: FinishSegment, Sample: sample, ScanIndex: scan, VolumeIndex: vol, SegmentIndexBuffer: seg}
}

func volAct(sample, scan, vol int64) Action {
	return Action{Kind: FinishVolume, Sample: sample, ScanIndex: scan, VolumeIndex: vol, SegmentIndexBuffer: NoIndex}
}

func scanAct(sample, scan int64) Action {
	return Action{Kind: FinishScan, Sample: sample, ScanIndex: scan, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex}
}

func resizeAct(s, r int) Action {
	return Action{Kind: Resize, Shape: [2]int{s, r}, ScanIndex: NoIndex, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex}
}

func eventAct(sample int64, id uint64) Action {
	return Action{Kind: EventAction, Sample: sample, ID: id, ScanIndex: NoIndex, VolumeIndex: NoIndex, SegmentIndexBuffer: NoIndex}
}

func head(sample int64) []marker.Marker {
	return []marker.Marker{marker.NewScanBoundary(sample, 0, 0), marker.NewVolumeBoundary(sample, 0, 0, false, 2)}
}

func TestPlannerCases(t *testing.T) {
	flagged := marker.NewSegmentBoundary(0, 0, 0, false, 4)
	flagged.Flags = marker.NoFlags.Set(3)
	cases := []struct {
		name    string
		cfg     func(*FormatPlannerConfig)
		length  int
		markers []marker.Marker
		want    []Action
		finish  []Action
	}{{
		name:   "forward segment",
		length: 6,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 0, false, 4), marker.NewActiveLines(0),
			marker.NewInactiveLines(4)),
		want:   []Action{copyAct(4, 0, 0, 0, false)},
		finish: []Action{segAct(4, 0, 0, 0), volAct(4, 0, 0), scanAct(4, 0)},
	}, {
		name:   "reversed segment is flipped",
		length: 6,
		markers: append(head(0), marker.NewSegmentBoundary(1, 0, 1, true, 4), marker.NewActiveLines(1),
			marker.NewInactiveLines(3)),
		// Two records from the end of a 4-record segment: records 2 and 3.
		want:   []Action{copyAct(2, 1, 1, 2, true)},
		finish: []Action{segAct(3, 0, 0, 1), volAct(3, 0, 0), scanAct(3, 0)},
	}, {
		name:   "reversed segment kept in order without flip_reversed",
		cfg:    func(c *FormatPlannerConfig) { c.FlipReversed = false },
		length: 6,
		markers: append(head(0), marker.NewSegmentBoundary(1, 0, 1, true, 4), marker.NewActiveLines(1),
			marker.NewInactiveLines(3)),
		want: []Action{copyAct(2, 1, 1, 0, false)},
	}, {
		name:   "inactive records kept without strip_inactive",
		cfg:    func(c *FormatPlannerConfig) { c.StripInactive = false },
		length: 3,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 0, false, 4), marker.NewActiveLines(0),
			marker.NewInactiveLines(1)),
		// Nothing stops the load at InactiveLines: one copy of all three.
		want: []Action{copyAct(3, 0, 0, 0, false)},
	}, {
		name:    "a segment too long is truncated",
		length:  6,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 0, false, 4), marker.NewActiveLines(0)),
		want:    []Action{copyAct(4, 0, 0, 0, false)},
	}, {
		name:    "adapt_shape grows records_per_segment",
		cfg:     func(c *FormatPlannerConfig) { c.AdaptShape = true },
		length:  6,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 0, false, 4), marker.NewActiveLines(0)),
		want:    []Action{resizeAct(2, 6), copyAct(6, 0, 0, 0, false)},
	}, {
		name:    "adapt_shape grows segments_per_volume",
		cfg:     func(c *FormatPlannerConfig) { c.AdaptShape = true },
		length:  2,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 3, false, 4), marker.NewActiveLines(0)),
		want:    []Action{resizeAct(4, 4), copyAct(2, 0, 3, 0, false)},
	}, {
		name:    "a segment past the volume is dropped",
		length:  2,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 3, false, 4), marker.NewActiveLines(0)),
		want:    nil,
		finish:  []Action{volAct(0, 0, 0), scanAct(0, 0)},
	}, {
		name:    "a masked segment is skipped",
		cfg:     func(c *FormatPlannerConfig) { c.Mask = marker.NoFlags.Set(1) },
		length:  4,
		markers: []marker.Marker{flagged, marker.NewActiveLines(0)},
		want:    nil,
	}, {
		name:    "events pass the mask",
		length:  4,
		markers: []marker.Marker{marker.NewEvent(2, 7)},
		want:    []Action{eventAct(2, 7)},
	}, {
		name:   "boundaries finish the prior segment and volume",
		length: 8,
		markers: append(head(0), marker.NewSegmentBoundary(0, 0, 0, false, 4), marker.NewActiveLines(0),
			marker.NewSegmentBoundary(4, 1, 1, false, 4), marker.NewVolumeBoundary(6, 1, 1, false, 2)),
		want: []Action{copyAct(4, 0, 0, 0, false), segAct(4, 0, 0, 0), copyAct(2, 4, 1, 0, false),
			segAct(6, 0, 0, 1), volAct(6, 0, 0),
			// Lines are still active: the rest of the block continues the
			// last segment position, as in vortex (no segment boundary came).
			copyAct(2, 6, 1, 2, false)},
		finish: []Action{volAct(6, 0, 1), scanAct(6, 0)},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultFormatPlannerConfig(2, 4)
			if c.cfg != nil {
				c.cfg(&cfg)
			}
			p, err := NewFormatPlanner(cfg)
			require.NoError(t, err)
			var plan FormatPlan
			require.NoError(t, p.Next(&plan, 0, c.length, c.markers))
			require.Equal(t, c.want, plan.Actions)
			if c.finish != nil {
				require.NoError(t, p.Finish(&plan))
				require.Equal(t, c.finish, plan.Actions)
			}
		})
	}
}

// TestPlannerReversedOverflow: a reversed segment longer than the volume's
// segment, or with a record_count_hint above it, stays inside the segment
// (vortex writes before or past it; see load).
func TestPlannerReversedOverflow(t *testing.T) {
	cases := []struct {
		name  string
		hint  int
		adapt bool
		want  []Action
	}{
		{"longer than the hint", 4, false, []Action{copyAct(4, 0, 0, 0, true)}},
		{"hint above the shape", 6, false, []Action{copyAct(4, 2, 0, 0, true)}},
		{"hint above the shape, adapt_shape", 6, true, []Action{resizeAct(1, 6), copyAct(6, 0, 0, 0, true)}},
		{"longer than the hint, adapt_shape", 4, true, []Action{resizeAct(1, 6), copyAct(6, 0, 0, 0, true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultFormatPlannerConfig(1, 4)
			cfg.AdaptShape = c.adapt
			p, err := NewFormatPlanner(cfg)
			require.NoError(t, err)
			var plan FormatPlan
			ms := []marker.Marker{marker.NewSegmentBoundary(0, 0, 0, true, c.hint), marker.NewActiveLines(0), marker.NewInactiveLines(6)}
			require.NoError(t, p.Next(&plan, 0, 8, ms))
			require.Equal(t, c.want, plan.Actions)
			for _, a := range plan.Actions {
				if a.Kind == Copy {
					require.LessOrEqual(t, a.BufferRecord+a.Count, p.RecordsPerSegment())
				}
			}
		})
	}
}

func TestPlannerBadInput(t *testing.T) {
	ok := []marker.Marker{marker.NewSegmentBoundary(2, 0, 0, false, 4), marker.NewActiveLines(2)}
	cases := []struct {
		name    string
		sample  int64
		length  int
		markers []marker.Marker
		msg     string
	}{
		{"marker after the block", 0, 4, []marker.Marker{marker.NewActiveLines(4)}, "markers[0].sample=4 is after the end of the block"},
		{"marker before the block", 10, 4, []marker.Marker{marker.NewActiveLines(9)}, "markers[0].sample=9, expected >= 10"},
		{"markers out of order", 0, 4, []marker.Marker{marker.NewActiveLines(3), marker.NewInactiveLines(2)}, "markers[1].sample=2, expected >= 3"},
		{"unknown kind", 0, 4, []marker.Marker{{Sample: 1}}, "markers[0].kind=0"},
		{"negative length", 0, -1, nil, "block_length=-1"},
		{"negative sample", -1, 1, nil, "block_sample=-1"},
		{"negative index", 0, 4, []marker.Marker{marker.NewSegmentBoundary(0, 0, -1, false, 4)}, "index=-1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewFormatPlanner(DefaultFormatPlannerConfig(2, 4))
			require.NoError(t, err)
			var plan FormatPlan
			require.NoError(t, p.Next(&plan, 0, 4, ok))
			before := plannerState(p)
			err = p.Next(&plan, c.sample, c.length, c.markers)
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, c.msg)
			require.Equal(t, before, plannerState(p), "a rejected block changes nothing")
		})
	}
	_, err := NewFormatPlanner(FormatPlannerConfig{Shape: [2]int{0, 4}})
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.ErrorContains(t, err, "FormatPlannerConfig.segments_per_volume: 0")
	_, err = NewFormatPlanner(FormatPlannerConfig{Shape: [2]int{4, -1}})
	require.ErrorContains(t, err, "FormatPlannerConfig.records_per_segment: -1")
	var zero FormatPlanner
	require.ErrorIs(t, zero.Next(&FormatPlan{}, 0, 1, nil), backend.ErrInvalid)
	p, err := NewFormatPlanner(DefaultFormatPlannerConfig(1, 1))
	require.NoError(t, err)
	require.ErrorContains(t, p.Next(nil, 0, 1, nil), "FormatPlanner.Next: plan is nil")
	require.ErrorContains(t, p.Finish(nil), "FormatPlanner.Finish: plan is nil")
}

func TestPlannerNoAllocs(t *testing.T) {
	p, err := NewFormatPlanner(DefaultFormatPlannerConfig(3, 5))
	require.NoError(t, err)
	s := genScan(rand.New(rand.NewPCG(1, 2)), 3, 5, 3, true)
	var plan FormatPlan
	require.NoError(t, plan.Reserve(len(s.markers)))
	allocs := testing.AllocsPerRun(20, func() {
		p.Reset()
		if err := p.Next(&plan, 0, int(s.length), s.markers); err != nil {
			panic(err)
		}
		if err := p.Finish(&plan); err != nil {
			panic(err)
		}
	})
	require.Zero(t, allocs)
}

// genScan is a marker stream of a raster-like scan with known answers:
// volumes of segments of records records each, with random inactive gaps,
// odd segments reversed when bidir.
type genned struct {
	markers []marker.Marker
	length  int64
	// truth[v][s][r] is the sample whose record belongs at segment s,
	// record r of volume v (with flip_reversed and strip_inactive).
	truth [][][]int64
}

func genScan(rng *rand.Rand, segments, records, volumes int, bidir bool) genned {
	var g genned
	t := int64(rng.IntN(3))
	g.markers = append(g.markers, marker.NewScanBoundary(0, 0, volumes), marker.NewInactiveLines(0))
	for v := range volumes {
		vol := make([][]int64, segments)
		g.markers = append(g.markers, marker.NewVolumeBoundary(t, int64(v), int64(v), false, segments))
		for s := range segments {
			rev := bidir && s%2 == 1
			g.markers = append(g.markers, marker.NewSegmentBoundary(t, int64(v*segments+s), int64(s), rev, records),
				marker.NewActiveLines(t))
			vol[s] = make([]int64, records)
			for r := range records {
				at := r
				if rev {
					at = records - 1 - r
				}
				vol[s][at] = t + int64(r)
			}
			t += int64(records)
			g.markers = append(g.markers, marker.NewInactiveLines(t))
			t += int64(rng.IntN(4))
		}
		g.truth = append(g.truth, vol)
	}
	g.length = t + 1
	return g
}

// place runs the stream through a planner in blocks split at cuts and
// returns where each sample landed, per finished volume, plus the
// notifications' kinds and indices.
func place(t *testing.T, cfg FormatPlannerConfig, g genned, cuts []int64) (vols [][][]int64, notes []string) {
	t.Helper()
	p, err := NewFormatPlanner(cfg)
	require.NoError(t, err)
	cur := func() [][]int64 {
		v := make([][]int64, cfg.Shape[0])
		for i := range v {
			v[i] = make([]int64, cfg.Shape[1])
			for j := range v[i] {
				v[i][j] = -1
			}
		}
		return v
	}
	vol := cur()
	var plan FormatPlan
	apply := func(blockSample int64) {
		for _, a := range plan.Actions {
			switch a.Kind {
			case Copy:
				for k := range a.Count {
					r := a.BufferRecord + k
					if a.Reverse {
						r = a.BufferRecord + a.Count - 1 - k
					}
					// With strip_inactive the records before the first
					// segment are dropped, so no place is written twice;
					// without it they land in segment 0 first (as vortex).
					if cfg.StripInactive {
						require.Equal(t, int64(-1), vol[a.BufferSegment][r], "a place written twice")
					}
					vol[a.BufferSegment][r] = blockSample + int64(a.BlockOffset+k)
				}
			case FinishVolume:
				vols = append(vols, vol)
				vol = cur()
				notes = append(notes, fmt.Sprintf("volume %d %d", a.ScanIndex, a.VolumeIndex))
			case FinishSegment:
				notes = append(notes, fmt.Sprintf("segment %d %d %d", a.ScanIndex, a.VolumeIndex, a.SegmentIndexBuffer))
			case FinishScan:
				notes = append(notes, fmt.Sprintf("scan %d", a.ScanIndex))
			}
		}
	}
	start, mi := int64(0), 0
	for _, end := range append(cuts, g.length) {
		j := mi
		for j < len(g.markers) && g.markers[j].Sample < end {
			j++
		}
		require.NoError(t, p.Next(&plan, start, int(end-start), g.markers[mi:j]))
		apply(start)
		start, mi = end, j
	}
	require.NoError(t, p.Finish(&plan))
	apply(start)
	return vols, notes
}

// TestPlannerProperties: every active record lands exactly once, where the
// markers say, whatever the block boundaries; flip_reversed off keeps
// acquisition order; strip_inactive off gives the same places for every
// split.
func TestPlannerProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for trial := range 200 {
		segments, records, volumes := 1+rng.IntN(4), 1+rng.IntN(6), 1+rng.IntN(3)
		bidir := rng.IntN(2) == 0
		g := genScan(rng, segments, records, volumes, bidir)
		var cuts []int64
		for s := int64(1); s < g.length; s++ {
			if rng.IntN(4) == 0 {
				cuts = append(cuts, s)
			}
		}
		cfg := DefaultFormatPlannerConfig(segments, records)
		vols, notes := place(t, cfg, g, cuts)
		require.Equal(t, g.truth, vols, "trial %d cuts %v", trial, cuts)
		whole, wholeNotes := place(t, cfg, g, nil)
		require.Equal(t, whole, vols)
		require.Equal(t, wholeNotes, notes)

		noflip := cfg
		noflip.FlipReversed = false
		nf, _ := place(t, noflip, g, cuts)
		for v := range nf {
			for s := range nf[v] {
				for r := range nf[v][s] {
					want := g.truth[v][s][r]
					if bidir && s%2 == 1 {
						want = g.truth[v][s][records-1-r]
					}
					require.Equal(t, want, nf[v][s][r])
				}
			}
		}

		keep := DefaultFormatPlannerConfig(segments, records+3)
		keep.StripInactive = false
		a, an := place(t, keep, g, cuts)
		b, bn := place(t, keep, g, nil)
		require.Equal(t, b, a, "trial %d: strip_inactive=false depends on the split", trial)
		require.Equal(t, bn, an)
	}
}

func TestPlannerErrorsAreTyped(t *testing.T) {
	err := FormatPlannerConfig{}.Validate()
	require.True(t, errors.Is(err, backend.ErrInvalid))
	var plan FormatPlan
	require.ErrorIs(t, plan.Reserve(-1), backend.ErrInvalid)
}

// plannerState is every field of p but its lock.
func plannerState(p *FormatPlanner) []any {
	return []any{p.cfg, p.shape, p.activeSample, p.segmentPosition, p.recordPosition, p.segmentReversed,
		p.segmentAccepted, p.linesActive, p.lastScan, p.lastVolume, p.lastSegment, p.initialized}
}
