package io_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	gio "github.com/vortexgo/vortexgo/gosrc/io"
)

// streams2D is a standalone block's streams with count rows of cols
// columns each (zeros), as vortex's Python callers allocate them.
func streams2D(count, cols int) *gio.BlockStreams {
	f := func() gio.BlockStream[float64] {
		return gio.BlockStream[float64]{Data: make([]float64, count*cols), Dims: 2, Rows: count, Cols: cols}
	}
	return &gio.BlockStreams{
		Counter:     gio.BlockStream[uint64]{Data: make([]uint64, count), Dims: 2, Rows: count, Cols: 1},
		GalvoTarget: f(), SampleTarget: f(), GalvoActual: f(), SampleActual: f(),
		Strobes: gio.BlockStream[uint32]{Data: make([]uint32, count), Dims: 2, Rows: count, Cols: 1},
	}
}

// requireNextRefused checks that an IO's standalone next (its
// NextStandalone) of count samples, over 100 x 2 streams that edit (if
// any) spoils, is refused with backend.ErrInvalid and a message holding
// msg, having moved nothing.
func requireNextRefused(t *testing.T, next func(int64, int, *gio.BlockStreams) (int, error), count int,
	edit func(*gio.BlockStreams), msg string) {
	t.Helper()
	s := streams2D(100, 2)
	if edit != nil {
		edit(s)
	}
	n, err := next(0, count, s)
	require.ErrorIs(t, err, backend.ErrInvalid)
	assert.Contains(t, err.Error(), msg)
	assert.Zero(t, n)
}

// standaloneIO is an IO with vortex's standalone calls (DAQmxIO, AlazarIO).
type standaloneIO interface {
	PrepareStandalone() error
	NextStandalone(id int64, count int, s *gio.BlockStreams) (int, error)
	Close() error
	Claims() []*engine.Claim
}

// requireStandaloneLifecycle checks the refusals of d's standalone calls
// (d's blocks: 100 samples of 2 columns) before the first prepare, while
// an engine holds d's claim and once d is closed; prepare and next work
// in between.
func requireStandaloneLifecycle(t *testing.T, d standaloneIO) {
	t.Helper()
	_, err := d.NextStandalone(0, 100, streams2D(100, 2))
	assert.ErrorContains(t, err, "expected prepare() first")
	require.NoError(t, d.Claims()[0].Take())
	_, err = d.NextStandalone(0, 100, streams2D(100, 2))
	require.ErrorIs(t, err, backend.ErrInUse)
	require.ErrorIs(t, d.PrepareStandalone(), backend.ErrInUse)
	d.Claims()[0].Drop()
	require.NoError(t, d.PrepareStandalone())
	n, err := d.NextStandalone(0, 100, streams2D(100, 2))
	require.NoError(t, err)
	assert.Equal(t, 100, n)
	require.NoError(t, d.Close())
	_, err = d.NextStandalone(0, 100, streams2D(100, 2))
	require.ErrorIs(t, err, backend.ErrClosed)
	require.ErrorIs(t, d.PrepareStandalone(), backend.ErrClosed)
}
