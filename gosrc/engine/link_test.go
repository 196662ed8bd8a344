package engine_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// TestConfigLink: the bindings' one-link-at-a-time wiring builds what the
// Add calls build, and a stage of the wrong kind, a nil one or an unknown
// link is a wiring error that Validate names.
func TestConfigLink(t *testing.T) {
	acq, proc := newFakeAcq(8), newFakeProc(8)
	f, err := format.NewStackFormatExecutor(format.RasterScan{AscansPerBscan: 5, BscansPerVolume: 2, Volumes: 1}, format.SampleSlice{})
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
