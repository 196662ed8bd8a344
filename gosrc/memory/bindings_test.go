package memory_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

// TestBindingEntries: the entries the bindings use: a lock timeout
// declares itself one, a closed tensor's address is an error, PutAfter
// picks the stream or the event, and a pool's record.
func TestBindingEntries(t *testing.T) {
	var to interface{ Timeout() bool }
	require.ErrorAs(t, memory.ErrLockTimeout, &to)
	require.True(t, to.Timeout())

	tn := newTensor(t, newAllocator(t, 0, 0), 4)
	p, err := tn.LivePtr()
	require.NoError(t, err)
	require.Equal(t, tn.Ptr(), p)
	require.NoError(t, tn.Close())
	_, err = tn.LivePtr()
	require.ErrorIs(t, err, backend.ErrClosed)

	pool := newPool(t, newAllocator(t, 0, 0), memory.PoolConfig{Size: 64, Initial: 2})
	defer func() { require.NoError(t, pool.Close()) }()
	b1, err := pool.GetTimeout(0)
	require.NoError(t, err)
	b2, err := pool.GetTimeout(0)
	require.NoError(t, err)
	require.Equal(t, memory.PoolStats{Allocated: 2, InUse: 2}, pool.Stats())
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer func() { require.NoError(t, s.Close()) }()
	require.NoError(t, pool.PutAfter(b1, nil, s), "after the stream's work")
	require.NoError(t, pool.PutAfter(b2, nil, nil), "now")
	require.NoError(t, s.Synchronize())
	require.Zero(t, pool.Stats().InUse, "none in use")
}
