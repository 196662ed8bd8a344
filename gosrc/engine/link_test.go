package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
	"github.com/vortexgo/vortexgo/gosrc/scan"
)

// TestConfigLink: the bindings' one-link-at-a-time wiring builds what the
// Add calls build, and a stage of the wrong kind, a nil one or an unknown
// link is a wiring error that Validate names.
func TestConfigLink(t *testing.T) {
	acq, proc := newFakeAcq(8), newFakeProc(8)
	f, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(2, 5))
	require.NoError(t, err)
	ep := endpoint.NewNullEndpoint()
	good := []struct {
		link  engine.Link
		stage any
	}{
		{engine.LinkAcquisition, acq}, {engine.LinkAcquisitionProcessor, proc},
		{engine.LinkProcessor, proc}, {engine.LinkProcessorFormatter, f},
		{engine.LinkFormatter, f}, {engine.LinkFormatterEndpoint, ep},
	}
	cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2}
	for _, l := range good {
		cfg.Link(l.link, l.stage)
	}
	require.NoError(t, cfg.Validate())

	tests := []struct {
		name  string
		link  engine.Link
		stage any
	}{
		{"a processor as the acquisition", engine.LinkAcquisition, proc},
		{"nil", engine.LinkProcessor, nil},
		{"an endpoint as a formatter", engine.LinkFormatter, ep},
		{"an unknown link", engine.Link(99), acq},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := cfg
			bad.Link(tc.link, tc.stage)
			err := bad.Validate()
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, "Config.Link")
		})
	}
}

// queueHolder is a binding's queue object.
type queueHolder struct{ q *scan.ScanQueue }

func (h queueHolder) Queue() *scan.ScanQueue { return h.q }

// TestLinkIOAndScanQueue: LinkIO pairs each IO with its IOWiring entry
// (vortex's add_io defaults beyond it), LinkScanQueue makes the engine
// play the binding's queue.
func TestLinkIOAndScanQueue(t *testing.T) {
	acq, proc := newFakeAcq(8), newFakeProc(8)
	planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	a, b := gio.NewNullIO(), gio.NewNullIO()
	q := scan.NewScanQueue()
	cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, IOWiring: []engine.IOConfig{{LeadSamples: 3, Master: true}}}
	cfg.Link(engine.LinkAcquisition, acq)
	cfg.Link(engine.LinkAcquisitionProcessor, proc)
	cfg.Link(engine.LinkProcessor, proc)
	cfg.Link(engine.LinkProcessorFormatter, planner)
	cfg.Link(engine.LinkFormatter, planner)
	cfg.Link(engine.LinkIO, a)
	cfg.Link(engine.LinkIO, b)
	cfg.Link(engine.LinkScanQueue, queueHolder{q})
	require.NoError(t, cfg.Validate())
	require.Same(t, q, cfg.ScanQueue)
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	require.Same(t, q, e.ScanQueue())
	require.NoError(t, e.Close())

	bad := cfg
	bad.Link(engine.LinkIO, proc)
	require.ErrorContains(t, bad.Validate(), "Config.Link")
	bad = cfg
	bad.Link(engine.LinkScanQueue, proc)
	require.ErrorContains(t, bad.Validate(), "Config.Link")
}
