//go:build gpu

package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/devices"
	"github.com/vortexgo/vortexgo/gosrc/memory"
)

func cudaAllocator(t *testing.T) *memory.Allocator {
	t.Helper()
	dev, err := devices.Get("cuda")
	require.NoError(t, err, "the gpu build expects a CUDA device")
	a, err := memory.NewAllocator(dev, nil)
	require.NoError(t, err)
	return a
}

// TestGPUTensorHandOff is the endpoint pattern: a writer fills the tensor on
// its stream and records ready; a reader's stream waits on ready and copies
// the volume into a pooled pinned buffer, without host syncs in between.
func TestGPUTensorHandOff(t *testing.T) {
	a := cudaAllocator(t)
	dev := a.Device()
	const n = 1 << 20
	tn, err := memory.NewDeviceTensor(a.WithPurpose("volume"), backend.DeviceMem, []int{n}, backend.Uint8)
	require.NoError(t, err)
	writer, err := dev.NewStream(0)
	require.NoError(t, err)
	defer writer.Close()
	reader, err := dev.NewStream(0)
	require.NoError(t, err)
	defer reader.Close()
	pool, err := memory.NewBufferPool(a.WithPurpose("readback"), memory.PoolConfig{Size: n, Initial: 1, Policy: memory.Block})
	require.NoError(t, err)

	require.NoError(t, tn.Lock(1, true, time.Second))
	require.NoError(t, writer.Memset(tn.Ptr(), 0x5A, n))
	require.NoError(t, tn.SetReady(writer))
	require.NoError(t, tn.Unlock(1, true))

	require.NoError(t, tn.Lock(2, false, time.Second))
	buf, err := pool.GetTimeout(0)
	require.NoError(t, err)
	require.NoError(t, tn.WaitReady(reader))
	require.NoError(t, reader.Copy(buf.Ptr(), tn.Ptr(), n))
	require.NoError(t, tn.Unlock(2, false))
	require.NoError(t, reader.Synchronize())
	host := cpu.HostBytes(buf.Ptr(), n)
	require.Equal(t, byte(0x5A), host[0])
	require.Equal(t, byte(0x5A), host[n-1])
	require.NoError(t, pool.PutStream(buf, reader))

	usage := a.Budget().Usage()
	require.Equal(t, int64(n), usage.Device.ByPurpose["volume"].Bytes)
	require.Equal(t, int64(n), usage.Pinned.ByPurpose["readback"].Bytes)

	require.NoError(t, tn.Resize(3, []int{4, n}, backend.Uint8))
	require.Equal(t, 4*n, tn.Capacity())
	require.NoError(t, tn.Close())
	require.NoError(t, pool.Close())
	require.Zero(t, a.Budget().Usage().Device.Current)
	require.Zero(t, a.Budget().Usage().Pinned.Current)
}

// TestGPUPoolReuseWaitsForCopy returns a buffer behind a large copy: the
// pool may hand it out again only after the copy's event completes.
func TestGPUPoolReuseWaitsForCopy(t *testing.T) {
	a := cudaAllocator(t)
	dev := a.Device()
	const n = 256 << 20
	src, err := a.Alloc(n)
	require.NoError(t, err)
	defer src.Free()
	s, err := dev.NewStream(0)
	require.NoError(t, err)
	defer s.Close()
	pool, err := memory.NewBufferPool(a, memory.PoolConfig{Size: n, Initial: 1, Policy: memory.Block})
	require.NoError(t, err)

	for range 3 {
		buf, err := pool.Get(context.Background())
		require.NoError(t, err)
		require.NoError(t, s.Copy(buf.Ptr(), src.Ptr(), n))
		require.NoError(t, pool.PutStream(buf, s))
		again, err := pool.GetTimeout(5 * time.Second)
		require.NoError(t, err)
		require.Equal(t, buf, again)
		done, err := s.Query()
		require.NoError(t, err)
		require.True(t, done, "buffer reused before its copy finished")
		require.NoError(t, pool.Put(again, nil))
	}
	require.NoError(t, pool.Close())
}
