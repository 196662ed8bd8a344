package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// TestDecodeOp: every stage op kind from one list of words, each word
// count and kind checked.
func TestDecodeOp(t *testing.T) {
	tests := []struct {
		name    string
		kind    StageOpKind
		words   []int64
		want    string // the op's Kernel name
		errText string
	}{
		{"spin", StageSpin, []int64{1000}, "spin_ns", ""},
		{"upload", StageUpload, []int64{0x1000, 64}, "upload", ""},
		{"download", StageDownload, []int64{0x1000, 64}, "download", ""},
		{"kernel without grid", StageKernel, []int64{1, 1}, "", "expected grid and block"},
		{"spin without words", StageSpin, nil, "", "0 words, expected 1"},
		{"negative spin", StageSpin, []int64{-1}, "", "expected 0 <= duration"},
		{"copy without length", StageUpload, []int64{0x1000, 0}, "", "expected a host address and a length > 0"},
		{"unknown kind", StageOpKind(9), nil, "", "stage op kind 9"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			op, err := DecodeOp(tc.kind, "", tc.words)
			if tc.errText != "" {
				require.ErrorIs(t, err, backend.ErrInvalid)
				require.ErrorContains(t, err, tc.errText)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, op.Kernel)
		})
	}
}

// TestBindingEntries: External's steps, QueueStageOp, AddBufferAt and the
// records that the bindings read.
func TestBindingEntries(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{})
	begin, err := c.External(ExternalBegin, 0)
	require.NoError(t, err)
	end, err := c.External(ExternalEnd, begin)
	require.NoError(t, err)
	require.Zero(t, end)
	_, err = c.External(ExternalTrack, 0)
	require.ErrorContains(t, err, "expected BeginExternal", "a timed coordinator tracks no untimed work")
	untimed := newCoord(t, dev, CoordinatorOptions{NoTiming: true})
	tracked, err := untimed.External(ExternalTrack, 0)
	require.NoError(t, err)
	require.Equal(t, OpID(1), tracked)
	_, err = c.External(ExternalStep(5), 0)
	require.ErrorIs(t, err, backend.ErrInvalid)

	spin, err := SpinOp(0)
	require.NoError(t, err)
	id, err := c.QueueStageOp(spin)
	require.NoError(t, err)
	require.NoError(t, c.Wait(id, -1))
	up, err := HostCopyOp(HostMem{Ptr: 0x1000, Len: 8}, CopyUpload)
	require.NoError(t, err)
	_, err = c.QueueStageOp(up)
	require.ErrorContains(t, err, "pipeline stage op", "a copy is a stage op only")
	require.Zero(t, c.Pending())
	require.Zero(t, c.Dropped())
	require.Equal(t, id, c.LastID())
	require.False(t, c.Sequential())

	m, err := NewPipelineStageManager(c)
	require.NoError(t, err)
	defer func() { require.NoError(t, m.Close()) }()
	bufs := []backend.Buffer{pinned(t, dev, make([]byte, 16)), pinned(t, dev, make([]byte, 16))}
	i, err := m.AddBufferAt(dev, 16, bufs[0].Ptr(), bufs[1].Ptr())
	require.NoError(t, err)
	b, err := m.Buffer(i, 1)
	require.NoError(t, err)
	require.Equal(t, bufs[1].Ptr(), b.Ptr())
	versions, size, err := m.BufferInfo(i)
	require.NoError(t, err)
	require.Equal(t, []int{2, 16}, []int{versions, size})
	_, err = m.Buffer(i+1, 0)
	require.ErrorIs(t, err, backend.ErrInvalid)
	require.Zero(t, m.Iteration(), "no iteration issued")
}
