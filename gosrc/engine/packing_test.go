package engine_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/format"
	"github.com/vortexgo/vortexgo/gosrc/ops"
)

// packedAcq is a camera-like source of bits-bit values (engine.DeviceUnpacker):
// Fill writes each block's values packed LSB first at the block's end, as
// a GenICam frame lands, or as uint16 when the engine says it will not
// widen them. Sample 0 of record r holds r (mod 2^bits), sample s the
// masked rawValue(r, s), so a checker can verify any record on its own.
type packedAcq struct {
	*fakeAcq
	bits, records int
	offset        int  // Packing's offset; -1: the block's end
	packed        bool // Packing's ok
	onDevice      atomic.Int32
	calls         atomic.Int32 // SetUnpackOnDevice calls
}

func (a *packedAcq) value(rec int64, s int) uint16 {
	mask := uint16(1)<<a.bits - 1
	if a.bits == 16 {
		mask = 0xffff
	}
	if s == 0 {
		return uint16(rec) & mask
	}
	return rawValue(rec, s) & mask
}

func (a *packedAcq) Packing() (bits, offset int, ok bool) {
	n := a.records * a.samples
	off := a.offset
	if off < 0 {
		off = 2*n - ops.PackedBytes(n, a.bits)
	}
	return a.bits, off, a.packed
}

func (a *packedAcq) SetUnpackOnDevice(on bool) {
	a.calls.Add(1)
	v := int32(0)
	if on {
		v = 1
	}
	a.onDevice.Store(v)
}

func (a *packedAcq) Fill(dst []uint16, records int) (int, error) {
	n := records * a.samples
	vals := make([]uint16, n)
	for r := range records {
		for s := range a.samples {
			vals[r*a.samples+s] = a.value(a.sent+int64(r), s)
		}
	}
	a.sent += int64(records)
	if a.onDevice.Load() == 0 {
		copy(dst, vals)
		return records, nil
	}
	_, off, _ := a.Packing()
	raw := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(dst))), 2*len(dst))[off:]
	clear(raw)
	for i, v := range vals {
		for b := range a.bits {
			if v>>b&1 != 0 {
				pos := i*a.bits + b
				raw[pos/8] |= 1 << (pos % 8)
			}
		}
	}
	return records, nil
}

// checkProc verifies, on its stream, every record it is given against
// packedAcq.value and counts the records checked and the bad samples.
type checkProc struct {
	*fakeProc
	acq          *packedAcq
	checked, bad atomic.Int64
}

func (p *checkProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	hs, ok := s.(backend.HostStream)
	if !ok {
		return errors.New("checkProc: needs a host stream")
	}
	return hs.Enqueue(func() {
		v := hostSlice[uint16](in, records*p.acq.samples)
		for r := range records {
			rec := int64(v[r*p.acq.samples])
			for smp := range p.acq.samples {
				if v[r*p.acq.samples+smp] != p.acq.value(rec, smp) {
					p.bad.Add(1)
				}
			}
			p.checked.Add(1)
		}
	})
}

func TestEngineWidensPackedBlocksOnTheDevice(t *testing.T) {
	const samples, records, blocks = 24, 5, 9
	tests := []struct {
		name     string
		bits     int
		packed   bool
		onDevice bool
	}{
		{"Mono8", 8, true, true},
		{"Mono10p (4 pixels in 5 bytes)", 10, true, true},
		{"Mono12p (2 pixels in 3 bytes)", 12, true, true},
		{"a 16-bit format: nothing to widen", 16, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			acq := &packedAcq{fakeAcq: newFakeAcq(samples), bits: tc.bits, records: records, offset: -1, packed: tc.packed}
			proc := &checkProc{fakeProc: newFakeProc(samples), acq: acq}
			scan := raster{AscansPerBscan: records, BscansPerVolume: 3, Volumes: blocks / 3}
			planner, err := format.NewFormatPlanner(format.DefaultFormatPlannerConfig(scan.BscansPerVolume, scan.AscansPerBscan))
			require.NoError(t, err)
			cfg := engine.Config{RecordsPerBlock: records, BlocksToAllocate: 3, PreloadCount: 1}
			cfg.AddAcquisition(acq, proc)
			cfg.AddProcessor(proc, planner)
			cfg.AddFormatter(planner)
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			queueRaster(t, e, scan)
			require.NoError(t, e.Prepare())
			assert.Equal(t, int32(1), acq.calls.Load(), "told once at Prepare")
			assert.Equal(t, tc.onDevice, acq.onDevice.Load() == 1)
			d := startDrain(e)
			require.NoError(t, e.Start())
			d.wait(t)
			require.NoError(t, e.Wait())
			assert.GreaterOrEqual(t, proc.checked.Load(), int64(blocks*records), "every record of the scan reached the processor")
			assert.Zero(t, proc.bad.Load(), "the processor saw the values the source packed")
		})
	}
}

func TestEngineRefusesAPackingOutsideTheBlock(t *testing.T) {
	for _, tc := range []struct {
		name         string
		bits, offset int
		want         string
	}{
		{"past the end", 12, 2 * 5 * 24, "do not fit"},
		{"7 bits", 7, 0, "expected 8 to 16 bits"},
		{"17 bits", 17, 0, "expected 8 to 16 bits"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acq := &packedAcq{fakeAcq: newFakeAcq(24), bits: tc.bits, records: 5, offset: tc.offset, packed: true}
			cfg := engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 3, PreloadCount: 1}
			cfg.AddAcquisition(acq, newFakeProc(24))
			e, err := engine.New(cfg, cpu.Default())
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, e.Close()) })
			err = e.Prepare()
			require.Error(t, err)
			assert.Contains(t, err.Error(), "Packing()")
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
