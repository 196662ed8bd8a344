package engine_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
)

// checkVolume requires the uint16 tensor of ep to hold volume vol of scan,
// from an acquisition whose records are offset by offset.
func checkVolume(t *testing.T, ep *endpoint.StackTensorEndpoint, scan raster, samples int, vol int, offset int64) {
	t.Helper()
	n := scan.BscansPerVolume * scan.AscansPerBscan * samples
	got := hostSlice[uint16](ep.Tensor().Ptr(), n)
	for b := range scan.BscansPerVolume {
		for a := range scan.AscansPerBscan {
			for s := range samples {
				rec := int64(vol)*scan.RecordsPerVolume() + int64(b*scan.AscansPerBscan+a) + offset
				require.Equal(t, rawValue(rec, s), got[(b*scan.AscansPerBscan+a)*samples+s], "bscan %d ascan %d sample %d", b, a, s)
			}
		}
	}
}

// TestCycleAlternatesBlocks: vortex's cycle([A, B]) (ping-pong): blocks
// alternate between the processors, both feed one formatter, and the
// volumes come out whole and in order.
func TestCycleAlternatesBlocks(t *testing.T) {
	tests := []struct {
		name   string
		sets   func(a, b engine.Processor) [][]engine.Processor
		callsA int64
		callsB int64
	}{
		// 5 blocks of the scan's 24 records, the last block partial: the
		// queue runs dry in the fifth.
		{"cycle", func(a, b engine.Processor) [][]engine.Processor { return [][]engine.Processor{{a}, {b}} }, 3, 2},
		{"cycle of three", func(a, b engine.Processor) [][]engine.Processor { return [][]engine.Processor{{a}, {b}, {b}} }, 2, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ep, err := endpoint.NewStackHostTensorEndpoint(backend.Uint16)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2}
			r := newRig(t, 8, scan, ep)
			pb := newFakeProc(8)
			r.cfg = engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2}
			r.cfg.AddAcquisition(r.acq, r.proc, pb)
			r.cfg.SetRotation(tc.sets(r.proc, pb)...)
			r.cfg.AddProcessor(r.proc, r.fmt)
			r.cfg.AddProcessor(pb, r.fmt)
			r.cfg.AddFormatter(r.fmt, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			evs := d.wait(t)
			require.Equal(t, tc.callsA, r.proc.calls.Load())
			require.Equal(t, tc.callsB, pb.calls.Load())
			checkVolume(t, ep, scan, 8, 1, 0)
			require.Equal(t, 2, count(evs, engine.EventVolume, 0))
			require.Equal(t, 6, count(evs, engine.EventSegment, 0))
			require.Equal(t, int64(2), e.Status().Volumes)
		})
	}
}

// TestTwoAcquisitions: each acquisition fills its own raw buffer of every
// block and feeds its own processor, formatter and endpoint.
func TestTwoAcquisitions(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2}
	epA, err := endpoint.NewStackHostTensorEndpoint(backend.Uint16)
	require.NoError(t, err)
	closeEndpoint(t, epA)
	epB, err := endpoint.NewStackHostTensorEndpoint(backend.Uint16)
	require.NoError(t, err)
	closeEndpoint(t, epB)
	r := newRig(t, 8, scan, epA)
	acqB, procB := newFakeAcq(6), newFakeProc(6)
	acqB.offset = 1000
	fmtB, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
	require.NoError(t, err)
	r.cfg.AddAcquisition(acqB, procB)
	r.cfg.AcquisitionMasters = []bool{true, false}
	r.cfg.AddProcessor(procB, fmtB)
	r.cfg.AddFormatter(fmtB, epB)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	checkVolume(t, epA, scan, 8, 1, 0)
	checkVolume(t, epB, scan, 6, 1, 1000)
	require.Equal(t, int64(5), r.proc.calls.Load())
	require.Equal(t, int64(5), procB.calls.Load())
	require.True(t, acqB.started.Load())
	require.Positive(t, acqB.stopped.Load())
}

// TestTwoAcquisitionsShortestWins: the block holds the records every
// acquisition delivered; the one that ends first ends the session.
func TestTwoAcquisitionsShortestWins(t *testing.T) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 3} // endless
	nullA := endpoint.NewNullEndpoint()
	closeEndpoint(t, nullA)
	r := newRig(t, 8, scan, nullA)
	acqB, procB := newFakeAcq(8), newFakeProc(8)
	acqB.records = 12 // two blocks and a partial one
	fmtB, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(3, 4))
	require.NoError(t, err)
	nullB := endpoint.NewNullEndpoint()
	closeEndpoint(t, nullB)
	r.cfg.AddAcquisition(acqB, procB)
	r.cfg.AddProcessor(procB, fmtB)
	r.cfg.AddFormatter(fmtB, nullB)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	require.Equal(t, int64(3), e.Status().BlocksAcquired)
	require.Equal(t, int64(15), r.acq.sent, "A filled three whole blocks; the third holds B's 2 records")
}

// otherDevice is the CPU under another identity: a second "device" for
// the engine's remote-processor path (a GPU's, DeviceProcessor) on the
// CPU backend. It records the peers the engine enables (PeerAccessor) and
// fails that with peerErr.
type otherDevice struct {
	backend.Device
	peers   *[]backend.Device
	peerErr error
	// copyDelay, if set, makes every copy on the device's streams take
	// that long (slowStream): a link slower than the engine's.
	copyDelay time.Duration
}

func (d otherDevice) NewStream(priority int) (backend.Stream, error) {
	s, err := d.Device.NewStream(priority)
	if err != nil || d.copyDelay == 0 {
		return s, err
	}
	return slowStream{HostStream: s.(backend.HostStream), delay: d.copyDelay}, nil
}

// slowStream is a CPU stream whose copies take delay more.
type slowStream struct {
	backend.HostStream
	delay time.Duration
}

func (s slowStream) Copy(dst, src uintptr, n int) error {
	time.Sleep(s.delay)
	return s.HostStream.Copy(dst, src, n)
}

func (d otherDevice) EnablePeerAccess(peer backend.Device) (bool, error) {
	if d.peerErr != nil {
		return false, d.peerErr
	}
	*d.peers = append(*d.peers, peer)
	return true, nil
}

// remoteProc is a fakeProc bound to another device.
type remoteProc struct {
	*fakeProc
	dev backend.Device
}

func (p remoteProc) Device() backend.Device { return p.dev }

// TestCycleAcrossDevices: vortex's cycle over processors on two devices;
// the remote processor's blocks are uploaded to its device, processed on
// its streams and copied back, and the volumes come out as on one device,
// with the pool as allocated and with a device ring deeper than the host
// sets (the remote uploads read a set that then goes back before the
// block's processing is done).
func TestCycleAcrossDevices(t *testing.T) {
	tests := []struct {
		name        string
		ring        string // DeviceBlocksEnv
		blocks      int
		wantBlocks  int64
		wantVolumes int
	}{
		{"as allocated", "", 4, 4, 2},
		{"a deeper device ring", "12", 4, 12, 2},
		{"a ring over two host sets", "9", 2, 9, 5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(engine.DeviceBlocksEnv, tc.ring)
			ep, err := endpoint.NewStackHostTensorEndpoint(backend.Uint16)
			require.NoError(t, err)
			closeEndpoint(t, ep)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: tc.wantVolumes}
			r := newRig(t, 8, scan, ep)
			var peers []backend.Device
			far := remoteProc{newFakeProc(8), otherDevice{Device: cpu.Default(), peers: &peers}}
			r.cfg = engine.Config{RecordsPerBlock: 5, BlocksToAllocate: tc.blocks, PreloadCount: 2}
			r.cfg.AddAcquisition(r.acq, r.proc, far)
			r.cfg.SetRotation([]engine.Processor{r.proc}, []engine.Processor{far})
			r.cfg.AddProcessor(r.proc, r.fmt)
			r.cfg.AddProcessor(far, r.fmt)
			r.cfg.AddFormatter(r.fmt, ep)
			e := r.engine(t)
			require.NoError(t, e.Prepare())
			require.EqualValues(t, tc.wantBlocks, e.Status().Allocated)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			near, other := r.proc.calls.Load(), far.calls.Load()
			require.GreaterOrEqual(t, near+other, int64(12*tc.wantVolumes+4)/5, "every block of the volumes (12 records each) processed")
			require.Contains(t, []int64{other, other + 1}, near, "the even blocks on the engine's device, the odd ones on the other")
			checkVolume(t, ep, scan, 8, tc.wantVolumes-1, 0)
			require.EqualValues(t, tc.wantVolumes, e.Status().Volumes)
			require.Equal(t, []backend.Device{cpu.Default()}, peers, "the remote device was given access to the engine's, once")
		})
	}
}

// TestRemoteUploadIsTimedOnItsDevice: a block that only a remote processor
// reads is uploaded on that processor's device, and its Upload time is
// that copy's, not the engine upload stream's (which copies nothing for
// it): here every copy on the remote device takes 5 ms more.
func TestRemoteUploadIsTimedOnItsDevice(t *testing.T) {
	const delay = 5 * time.Millisecond
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	r := newRig(t, 8, raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 1}, ep)
	var peers []backend.Device
	far := remoteProc{newFakeProc(8), otherDevice{Device: cpu.Default(), peers: &peers, copyDelay: delay}}
	r.cfg = engine.Config{RecordsPerBlock: 4, BlocksToAllocate: 4, PreloadCount: 2}
	r.cfg.AddAcquisition(r.acq, far)
	r.cfg.AddProcessor(far, r.fmt)
	r.cfg.AddFormatter(r.fmt, ep)
	e := r.engine(t)
	require.NoError(t, e.Prepare())
	require.NoError(t, e.Start())
	require.NoError(t, e.Wait())
	calls := far.calls.Load()
	require.GreaterOrEqual(t, calls, int64(3), "a volume of 12 records in blocks of 4")
	up := e.Timings().Upload
	require.EqualValues(t, calls, up.Count, "every block is timed on the CPU backend")
	require.GreaterOrEqual(t, up.Min, float64(delay.Milliseconds()), "the remote copy's time, not the engine stream's empty span")
}

// TestCycleAcrossDevicesPeerAccessFails: a driver error enabling peer
// access fails Prepare, naming the processor.
func TestCycleAcrossDevicesPeerAccessFails(t *testing.T) {
	ep := endpoint.NewNullEndpoint()
	closeEndpoint(t, ep)
	r := newRig(t, 8, raster{AscansPerBscan: 4, BscansPerVolume: 3}, ep)
	var peers []backend.Device
	far := remoteProc{newFakeProc(8), otherDevice{Device: cpu.Default(), peers: &peers, peerErr: errors.New("cuCtxEnablePeerAccess: 217")}}
	r.cfg = engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 4, PreloadCount: 2}
	r.cfg.AddAcquisition(r.acq, far)
	r.cfg.AddProcessor(far, r.fmt)
	r.cfg.AddFormatter(r.fmt, ep)
	e := r.engine(t)
	err := e.Prepare()
	require.ErrorContains(t, err, "processor #0's device: peer access: cuCtxEnablePeerAccess: 217")
}
