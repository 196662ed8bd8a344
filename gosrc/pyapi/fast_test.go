package pyapi

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestFastPathOnCPU(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	e, err := dev.NewEvent(true)
	require.NoError(t, err)
	require.Positive(t, s.ID())
	require.Zero(t, FastRecord(s.ID(), e.ID()))
	require.Equal(t, 1, FastQueryEvent(e.ID()))
	require.Equal(t, 1, FastQueryStream(s.ID()))
	require.Zero(t, FastSyncStream(s.ID()))
	require.Zero(t, FastSyncEvent(e.ID()))
	require.Zero(t, FastWaitEvent(s.ID(), e.ID()))
	buf, err := dev.Alloc(64, false)
	require.NoError(t, err)
	defer func() { require.NoError(t, buf.Free()) }()
	require.Zero(t, FastFill(s.ID(), buf.Ptr(), 16, DTypeCode("float32"), 2))
	require.Zero(t, FastScaleOffset(s.ID(), buf.Ptr(), buf.Ptr(), 16, DTypeCode("float32"), 2, 1))
	require.Equal(t, -1, DTypeCode("float16"))
	require.Equal(t, -1, FastFill(s.ID(), buf.Ptr(), 16, 99, 0), "bad dtype code")
	// Unregistered (0) and closed ids fail, so Python takes the method path.
	require.Equal(t, -1, FastRecord(0, e.ID()))
	sid := s.ID()
	require.NoError(t, s.Close())
	require.Equal(t, -1, FastRecord(sid, e.ID()))
	require.Equal(t, -1, FastSyncStream(sid))
	eid := e.ID()
	require.NoError(t, e.Close())
	require.Equal(t, -1, FastQueryEvent(eid))
	// A closed id never names the next object, even when its slot is reused.
	s2, err := dev.NewStream(0)
	require.NoError(t, err)
	require.NotEqual(t, sid, s2.ID())
	require.Equal(t, -1, FastSyncStream(sid))
	require.Zero(t, FastSyncStream(s2.ID()))
	require.NoError(t, s2.Close())
	_, err = s2.Handle()
	require.ErrorContains(t, err, "ClosedError: ")
}

// TestResizeWhileHoldingIsLockError: memory.ErrLockHeld crosses to Python
// as a LockError.
func TestResizeWhileHoldingIsLockError(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	tn, err := NewTensor(dev, "4", "int8", false)
	require.NoError(t, err)
	defer func() { require.NoError(t, tn.Close()) }()
	require.NoError(t, tn.Lock(7, true, -1))
	err = tn.Resize(7, "8", "int8")
	require.ErrorContains(t, err, "LockError: ")
	require.ErrorContains(t, err, "would deadlock")
	require.NoError(t, tn.Unlock(7, true))
	require.NoError(t, tn.Resize(7, "8", "int8"))
	require.Equal(t, "8", tn.Shape())
}
