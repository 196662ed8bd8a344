package engine_test

import (
	"encoding/binary"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/storage"
)

func TestPoolBlocks(t *testing.T) {
	const small, large = 256 * 1024 * 2, 8192 * 1024 * 2
	tests := []struct {
		name       string
		asked      int
		kind       backend.Kind
		blocks     int
		blockBytes int
		remote     bool
		want       int
	}{
		{"gpu, small blocks: the deep ring", -1, backend.CUDA, 4, small, false, engine.DeepBlocks},
		{"gpu, small blocks, more asked of blocks_to_allocate", -1, backend.CUDA, 40, small, false, 40},
		{"gpu, 2 MiB blocks: as allocated", -1, backend.CUDA, 4, 2 << 20, false, 4},
		{"gpu, large blocks: as allocated", -1, backend.CUDA, 4, large, false, 4},
		{"gpu, small blocks, processors on other gpus: the deep ring", -1, backend.CUDA, 4, small, true, engine.DeepBlocks},
		{"gpu, 2 MiB blocks, processors on other gpus: the deep ring", -1, backend.CUDA, 4, 2 << 20, true, engine.DeepBlocks},
		{"gpu, large blocks, processors on other gpus: as allocated", -1, backend.CUDA, 4, large, true, 4},
		{"cpu: as allocated", -1, backend.CPU, 4, small, false, 4},
		{"cpu, other devices: as allocated", -1, backend.CPU, 4, small, true, 4},
		{"asked 0: as allocated", 0, backend.CUDA, 4, small, false, 4},
		{"asked fewer: as allocated", 2, backend.CUDA, 4, small, false, 4},
		{"asked more, cpu", 12, backend.CPU, 4, large, false, 12},
		{"asked past the bound", engine.MaxBlocks + 5, backend.CUDA, 4, small, false, engine.MaxBlocks},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, engine.PoolBlocks(tc.asked, tc.kind, tc.blocks, tc.blockBytes, tc.remote))
		})
	}
}

func TestDeviceBlocksEnvRejectsBadValues(t *testing.T) {
	for _, v := range []string{"-1", "many", "1.5"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(engine.DeviceBlocksEnv, v)
			r := newRig(t, 8, raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1})
			e := r.engine(t)
			err := e.Prepare()
			require.ErrorContains(t, err, engine.DeviceBlocksEnv)
			require.ErrorContains(t, err, "expected a count of blocks >= 0")
		})
	}
}

// slowCopies is the CPU device whose streams pause before every copy: the
// thread that uploads (the process loop here) falls behind the acquisition,
// which then waits for host sets. The CPU stream runs work on the calling
// goroutine, so a set's upload is done when it comes back: the wait for an
// upload still running is TestTakeHostWaitsForTheUpload's.
type slowCopies struct {
	*cpu.Device
	pause time.Duration
}

type slowCopyStream struct {
	backend.HostStream
	pause time.Duration
}

func (d *slowCopies) NewStream(priority int) (backend.Stream, error) {
	s, err := d.Device.NewStream(priority)
	if err != nil {
		return nil, err
	}
	return &slowCopyStream{HostStream: s.(backend.HostStream), pause: d.pause}, nil
}

func (s *slowCopyStream) Copy(dst, src uintptr, n int) error {
	if err := s.Enqueue(func() { time.Sleep(s.pause) }); err != nil {
		return err
	}
	return s.HostStream.Copy(dst, src, n)
}

// TestDeviceRingKeepsHostMemory runs blocks through a device ring deeper
// than the blocks to allocate, with slow copies: every record is stored as
// acquired, and the pinned host memory stays blocks_to_allocate blocks.
func TestDeviceRingKeepsHostMemory(t *testing.T) {
	tests := []struct {
		name          string
		blocks, ring  int
		want          int // Status.Allocated
		slots         int
		pause         time.Duration
		hostSetsEqual int
	}{
		{"2 host, 12 device, slow copies", 2, 12, 12, 1, 300 * time.Microsecond, 2},
		{"2 host, 12 device, 2 slots, slow copies", 2, 12, 12, 2, 300 * time.Microsecond, 2},
		{"3 host, ring off", 3, 0, 3, 1, 100 * time.Microsecond, 3},
		{"1 host, 8 device", 1, 8, 8, 1, 200 * time.Microsecond, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(engine.DeviceBlocksEnv, strconv.Itoa(tc.ring))
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 12}
			path := filepath.Join(t.TempDir(), "out.npy")
			stack, err := storage.NewSimpleStack(backend.Uint16)
			require.NoError(t, err)
			require.NoError(t, stack.Open(storage.SimpleStackConfig{Path: path, Shape: [3]int{2, 4, 8}, Header: storage.HeaderNumPy}))
			ep, err := endpoint.NewSpectraStackEndpoint(stack)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			r := newRig(t, 8, scan, ep)
			r.cfg.RecordsPerBlock, r.cfg.BlocksToAllocate, r.cfg.PreloadCount = 3, tc.blocks, 1
			if tc.slots > 1 {
				r.cfg.Slots = tc.slots
			}
			dev := &slowCopies{Device: cpu.Default().(*cpu.Device), pause: tc.pause}
			e, err := engine.New(r.cfg, dev)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			r.queue(t, e)
			require.NoError(t, e.Prepare())
			require.Equal(t, tc.hostSetsEqual, e.HostBufferBlocks(0), "pinned host sets: blocks_to_allocate")
			require.Equal(t, tc.want, e.Status().Allocated)
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			d.wait(t)
			require.Equal(t, 12, ep.Written())
			require.NoError(t, stack.Close())
			st := e.Status()
			require.Zero(t, st.BlocksDropped)
			require.Zero(t, st.InFlight, "every block back in the pool")

			shape, data := readNPY(t, path)
			require.Equal(t, []int{12, 2, 4, 8}, shape)
			forEachStored(scan, 12, 8, func(i, v, b, a, s int) {
				require.Equal(t, expected(scan, v, b, a, s), binary.LittleEndian.Uint16(data[2*i:]),
					"volume %d bscan %d ascan %d sample %d", v, b, a, s)
			})
		})
	}
}
