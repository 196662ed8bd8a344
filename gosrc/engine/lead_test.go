package engine_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
	"github.com/vortexgo/vortexgo/gosrc/scan"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

// leadRecorder is an endpoint that keeps a copy of every block's host
// streams at one IO lead (BlockData.HostStreamsLead), in block order.
type leadRecorder struct {
	lead, at     int
	leads        []int // EndpointInfo.Leads as the engine gave them
	galvo        []float64
	sampleTarget []float64
	strobes      []uint32
	s            backend.Stream
}

func (r *leadRecorder) Prepare(info engine.EndpointInfo) (err error) {
	r.leads = slices.Clone(info.Leads)
	if r.at = slices.Index(info.Leads, r.lead); r.at < 0 {
		return fmt.Errorf("lead %d not among the engine's leads %v", r.lead, info.Leads)
	}
	r.s, err = info.Device.NewStream(0)
	return err
}

func (r *leadRecorder) Stream() backend.Stream { return r.s }

func (r *leadRecorder) Format(b *engine.BlockData, _ *engine.FormatPlan) error {
	h := b.HostStreamsLead(r.at)
	if len(h.GalvoTarget) != b.Records*h.OutChannels || len(h.Strobes) != b.Records {
		return fmt.Errorf("block %d: %d target values and %d strobes, expected %d records of %d channels",
			b.Block.ID, len(h.GalvoTarget), len(h.Strobes), b.Records, h.OutChannels)
	}
	r.galvo = append(r.galvo, h.GalvoTarget...)
	r.sampleTarget = append(r.sampleTarget, h.SampleTarget...)
	r.strobes = append(r.strobes, h.Strobes...)
	return nil
}

func (r *leadRecorder) Flush() error { return nil }
func (r *leadRecorder) Close() error {
	if r.s == nil {
		return nil
	}
	return r.s.Close()
}
func (r *leadRecorder) ReadsStrobes() bool { return true }

// TestStreamsPerLead: the engine keeps each block's galvo target and
// strobes for every IO lead (vortex's block.streams(lead_samples)): the
// stream of lead L is lead 0's shifted L samples earlier, across block
// boundaries, also for leads longer than a block; the rows before the
// scan reaches a lead hold the start position and lead_strobes; the
// sample target is the same at every lead. Leads are 0, d/3 and d, as in
// vortex's test_galvo_delay, with d half, one and a half, and two and a
// half blocks.
func TestStreamsPerLead(t *testing.T) {
	const samples, records, leadStrobes = 4, 6, uint32(0x8000_0000)
	wave, _, _ := reference(t, rasterScan(t, false, 0.5), 0, records)
	for _, d := range []int{records / 2, records * 3 / 2, records * 5 / 2} {
		t.Run(fmt.Sprintf("d=%d", d), func(t *testing.T) {
			leads := []int{0, d / 3, d}
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
			require.NoError(t, err)
			acq, proc := newFakeAcq(samples), newFakeProc(samples)
			cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 4, PreloadCount: 2,
				Strobes: engine.DefaultStrobes(), LeadStrobes: leadStrobes}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			recs := make([]*leadRecorder, len(leads))
			eps := make([]engine.Endpoint, len(leads))
			for i, l := range leads {
				recs[i] = &leadRecorder{lead: l}
				eps[i] = recs[i]
				cfg.AddIO(gio.NewNullIO(), engine.IOConfig{LeadSamples: l, Preload: true})
			}
			cfg.AddFormatter(planner, eps...)
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() {
				require.NoError(t, e.Close())
				for _, r := range recs {
					require.NoError(t, r.Close()) // the user's endpoints outlive the engine
				}
			})
			require.NoError(t, e.ScanQueue().Append(rasterScan(t, false, 0.5), nil, scan.ScanBoundary()))
			require.NoError(t, e.Prepare())
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())

			ref := recs[0]
			require.Equal(t, slices.Compact(slices.Clone(leads)), ref.leads, "the engine's distinct leads, sorted")
			n := len(ref.strobes)
			require.Greater(t, n, d+records, "the run is longer than the largest lead and a block")
			require.Len(t, ref.galvo, 2*n)
			for i, l := range leads {
				r := recs[i]
				require.Len(t, r.galvo, 2*n, "lead %d", l)
				require.Len(t, r.strobes, n, "lead %d", l)
				require.Equal(t, ref.galvo, r.sampleTarget, "lead %d: the sample target is lead 0's waveform", l)
				for k := range n {
					// lead L outputs at row k what lead 0 outputs at
					// row k+L, which the queue generated at sample
					// k+L-d (the queue runs d ahead of lead 0).
					j := k + l - d
					for c := range 2 {
						want := 0.0 // the queue's start position, held before the scan
						if j >= 0 && 2*j+c < len(wave) {
							want = wave[2*j+c]
						}
						if j < 0 || 2*j+c < len(wave) {
							require.Equal(t, want, r.galvo[2*k+c], "lead %d row %d channel %d", l, k, c)
						}
						if k+l < n {
							require.Equal(t, ref.galvo[2*(k+l)+c], r.galvo[2*k+c], "lead %d row %d channel %d: lead 0 %d rows later", l, k, c, l)
						}
					}
					if j < 0 && l < d {
						require.Equal(t, leadStrobes, r.strobes[k], "lead %d row %d: lead_strobes before the scan reaches it", l, k)
					}
					if k+l < n {
						require.Equal(t, ref.strobes[k+l], r.strobes[k], "lead %d row %d strobes: lead 0 %d rows later", l, k, l)
					}
				}
			}
			// The streams vary, so the shifts above are seen.
			require.NotEqual(t, ref.galvo, recs[2].galvo, "lead %d's waveform is lead 0's shifted", d)
			require.NotEqual(t, ref.strobes, recs[2].strobes, "lead %d's strobes are lead 0's shifted", d)
		})
	}
}

// TestStreamDumpLeadMustBeAnIOs: a StreamDumpStorage's lead_samples must
// be one of the engine's IO leads (vortex's block.streams(lead) fails on
// another at its first block); the engine's Prepare refuses it, naming the
// argument and the leads there are.
func TestStreamDumpLeadMustBeAnIOs(t *testing.T) {
	tests := []struct {
		name  string
		ios   []int
		lead  int
		want  string // "": accepted
		leads string
	}{
		{"lead 0 without IOs", nil, 0, "", ""},
		{"lead 3 without IOs", nil, 3, "lead_samples=3", "[0]"},
		{"an IO's lead", []int{4, 9}, 9, "", ""},
		{"no IO's lead", []int{4, 9}, 5, "lead_samples=5", "[0 4 9]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
			require.NoError(t, err)
			acq, proc := newFakeAcq(4), newFakeProc(4)
			cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 3, PreloadCount: 1}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			for _, l := range tc.ios {
				cfg.AddIO(gio.NewNullIO(), engine.IOConfig{LeadSamples: l, Preload: true})
			}
			dump := storage.NewStreamDump()
			require.NoError(t, dump.Open(storage.StreamDumpConfig{Path: filepath.Join(t.TempDir(), "d"), Stream: 1, Divisor: 1}))
			t.Cleanup(func() { require.NoError(t, dump.Close()) })
			ep, err := endpoint.NewBlockEndpoint(endpoint.BlockDump, 0, dump, tc.lead)
			require.NoError(t, err)
			cfg.AddFormatter(planner, ep)
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() {
				require.NoError(t, e.Close())
				require.NoError(t, ep.Close())
			})
			err = e.Prepare()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, "StreamDumpStorage.Prepare: "+tc.want)
			require.ErrorContains(t, err, "IO leads "+tc.leads)
		})
	}
}
