package pipeline

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// live reports whether [b.Ptr(), +Size) is still allocated on the fake device.
func live(d *fakeDevice, b backend.Buffer) bool {
	_, err := d.bytes(b.Ptr(), b.Size())
	return err == nil
}

func TestTripleBufferBorrowOutlivesClose(t *testing.T) {
	tests := []struct {
		name     string
		borrowed []int
	}{
		{"none", nil},
		{"one slot", []int{1}},
		{"every slot twice", []int{0, 1, 2, 0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := newFakeDevice(backend.CPU)
			tb, err := NewTripleBuffer(dev, 4, backend.Float32)
			require.NoError(t, err)
			bufs := []backend.Buffer{tb.Buffer(0), tb.Buffer(1), tb.Buffer(2)}
			held := map[int]int{}
			var borrows []func() error
			for _, i := range tc.borrowed {
				b, err := tb.Borrow(i)
				require.NoError(t, err)
				require.Equal(t, bufs[i].Ptr(), b.Ptr())
				borrows = append(borrows, b.Release)
				held[i]++
			}
			require.NoError(t, tb.Close())
			require.ErrorIs(t, tb.Close(), backend.ErrClosed)
			_, err = tb.Borrow(0)
			require.ErrorIs(t, err, backend.ErrClosed, "no new borrow once closed")
			for i, b := range bufs {
				require.Equal(t, held[i] > 0, live(dev, b), "slot %d: alive exactly while borrowed", i)
			}
			for _, release := range borrows {
				require.NoError(t, release())
			}
			for i, b := range bufs {
				require.False(t, live(dev, b), "slot %d freed with its last borrow", i)
			}
		})
	}
}

func TestTripleBufferBorrowBadSlot(t *testing.T) {
	tb, err := NewTripleBuffer(newFakeDevice(backend.CPU), 4, backend.Float32)
	require.NoError(t, err)
	defer func() { require.NoError(t, tb.Close()) }()
	for _, i := range []int{-1, 3, math.MaxInt} {
		_, err := tb.Borrow(i)
		require.ErrorIs(t, err, backend.ErrInvalid, "slot %d", i)
		require.Nil(t, tb.Buffer(i))
	}
}

func TestTripleBufferedStepOnClosedBuffer(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	x, err := NewManagedGpuContext(dev, true)
	require.NoError(t, err)
	defer func() { require.NoError(t, x.Close()) }()
	tb, err := x.CreateTripleBuffer(4, backend.Float32)
	require.NoError(t, err)
	require.NoError(t, tb.Close())
	spin, err := SpinOp(0)
	require.NoError(t, err)
	_, err = x.TripleBufferedStep(tb, StepIO{Op: spin})
	require.ErrorIs(t, err, backend.ErrClosed)
}

func TestReadbackHandleOutlivesClose(t *testing.T) {
	tests := []struct {
		name          string
		releaseBefore bool
	}{
		{"released before close", true},
		{"held across close", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := newFakeDevice(backend.CPU)
			src, err := dev.Alloc(8)
			require.NoError(t, err)
			dev.write(src.Ptr(), []byte{1, 2, 3, 4, 5, 6, 7, 8})
			rb, err := NewReadback(dev, 8, ReadbackOptions{})
			require.NoError(t, err)
			prod, err := dev.NewStream(0)
			require.NoError(t, err)
			h, err := rb.ReadbackAsync(src.Ptr(), 8, prod)
			require.NoError(t, err)
			require.NoError(t, h.Wait(-1))
			buf := h.Buffer()
			if tc.releaseBefore {
				require.NoError(t, h.Release())
			}
			require.NoError(t, rb.Close())
			require.Equal(t, !tc.releaseBefore, live(dev, buf), "a held result outlives Close")
			if tc.releaseBefore {
				return
			}
			done, err := h.Done()
			require.NoError(t, err)
			require.True(t, done, "Close waited for every copy")
			require.NoError(t, h.Wait(time.Millisecond))
			require.NoError(t, h.StreamWait(prod))
			got, err := dev.bytes(h.Ptr(), 8)
			require.NoError(t, err)
			require.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, got)
			require.NoError(t, h.Release())
			require.False(t, live(dev, buf), "freed with the handle's reference")
			require.ErrorIs(t, h.Release(), backend.ErrClosed)
			_, err = h.Done()
			require.ErrorIs(t, err, backend.ErrClosed)
		})
	}
}

func TestCheckKernelArgs(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	f32 := NewSpan(dev, 0x1000, 64) // 16 float32
	i8 := NewSpan(dev, 0x2000, 4)   // 4 int8
	tests := []struct {
		name string
		args []any
		want string // "" for accepted
	}{
		{"fill fits", []any{f32, uint64(16), 1.0}, ""},
		{"fill past the array", []any{f32, uint64(17), 1.0}, "n=17 elements, but argument 0 holds 64 bytes"},
		{"bare address is not checked", []any{uintptr(0x1000), uint64(1 << 40), 1.0}, ""},
		{"huge n", []any{f32, uint64(math.MaxUint64), 1.0}, "argument 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckKernelArgs("fill_float32", tc.args)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, backend.ErrInvalid)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.ErrorContains(t, CheckKernelArgs("cast_int8_float32", []any{f32, i8, uint64(5)}), "argument 1 holds 4 bytes")
	require.NoError(t, CheckKernelArgs("cast_int8_float32", []any{f32, i8, uint64(4)}))
	require.ErrorContains(t, CheckKernelArgs("scale_offset_float32", []any{f32, f32, uint64(32), 1.0, 0.0}), "n=32")
	require.NoError(t, CheckKernelArgs("my_kernel", []any{f32, uint64(1 << 40)}), "unknown kernels carry no signature")
	_, err := KernelOp("fill_float32", [3]uint64{1, 1, 1}, [3]uint64{1, 1, 1}, []any{f32, uint64(99), 1.0})
	require.ErrorContains(t, err, "n=99", "refused when the op is built")
}

func TestDecodeArgs(t *testing.T) {
	tests := []struct {
		name  string
		words []int64
		want  []any
		err   string
	}{
		{"empty", nil, nil, ""},
		{"array", []int64{int64(ArgArray), 0x1000, 64}, []any{NewSpan(nil, 0x1000, 64)}, ""},
		{"numbers", []int64{int64(ArgI32), -7, int64(ArgU32), 7, int64(ArgI64), -1, int64(ArgU64), 9,
			int64(ArgF64), int64(math.Float64bits(2.5)), int64(ArgF32), int64(math.Float64bits(0.5))},
			[]any{int32(-7), uint32(7), int64(-1), uint64(9), 2.5, float32(0.5)}, ""},
		{"refs", []int64{int64(ArgIn), 1, int64(ArgOut), 0}, []any{In(1), Out(0)}, ""},
		{"i32 overflow", []int64{int64(ArgI32), 1 << 40}, nil, "expected -2147483648 <= value <= 2147483647"},
		{"u64 negative", []int64{int64(ArgU64), -1}, nil, "argument 0: -1"},
		{"truncated array", []int64{int64(ArgArray), 0x1000}, nil, "kind 0 with 1 words left"},
		{"unknown kind", []int64{99, 1}, nil, "kind 99"},
		{"negative ref", []int64{int64(ArgIn), -1}, nil, "argument 0: -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeArgs(tc.words)
			if tc.err != "" {
				require.ErrorIs(t, err, backend.ErrInvalid)
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

func TestSizesBoundedBeforeAllocating(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{})
	m, err := NewPipelineStageManager(c)
	require.NoError(t, err)
	tests := []struct {
		name string
		make func() error
		is   error
		want string // the argument the message must name
	}{
		{"triple buffer of 2^60 float32", func() error { _, err := NewTripleBuffer(dev, 1<<60, backend.Float32); return err }, backend.ErrTooLarge, "size=1152921504606846976"},
		{"triple buffer of 0", func() error { _, err := NewTripleBuffer(dev, 0, backend.Float32); return err }, backend.ErrInvalid, "size=0"},
		{"readback of 2^50 bytes", func() error { _, err := NewReadback(dev, 1<<50, ReadbackOptions{}); return err }, backend.ErrTooLarge, "buffer_size=1125899906842624"},
		// Counts beyond MaxBuffers are bad arguments whatever the buffer size.
		{"readback of 2^40 buffers", func() error {
			_, err := NewReadback(dev, 1, ReadbackOptions{Buffers: 1 << 40})
			return err
		}, backend.ErrInvalid, "buffers=1099511627776, expected at most 65536"},
		{"readback growing to 2^40 buffers", func() error {
			_, err := NewReadback(dev, 1, ReadbackOptions{Buffers: 1, MaxBuffers: 1 << 40})
			return err
		}, backend.ErrInvalid, "max_buffers=1099511627776, expected at most 65536"},
		{"pipeline buffer of 2^20 versions", func() error { _, err := m.NewBuffer(8, 1<<20); return err }, backend.ErrInvalid, "versions=1048576, expected at most 65536"},
		{"pipeline buffer of 2^40 versions", func() error { _, err := m.NewBuffer(16, 1<<40); return err }, backend.ErrInvalid, "versions=1099511627776"},
		{"pipeline buffer of 2^47 x 3", func() error { _, err := m.NewBuffer(1<<47, 3); return err }, backend.ErrTooLarge, "nbytes=140737488355328"},
		{"spin past MaxSpin", func() error { _, err := SpinOp(MaxSpin + 1); return err }, backend.ErrInvalid, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.make()
			require.ErrorIs(t, err, tc.is)
			require.ErrorContains(t, err, tc.want)
		})
	}
	dev.mu.Lock()
	n := len(dev.mem)
	dev.mu.Unlock()
	require.Zero(t, n, "nothing was allocated")
}

func TestExternalDone(t *testing.T) {
	tests := []struct {
		name   string
		timing bool
		closed bool
		is     error
	}{
		{"untimed", false, false, nil},
		{"timed coordinators need BeginExternal", true, false, backend.ErrInvalid},
		{"closed", false, true, backend.ErrClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dev := newFakeDevice(backend.CPU)
			c, err := NewAsyncCoordinator(dev, CoordinatorOptions{NoTiming: !tc.timing})
			require.NoError(t, err)
			if tc.closed {
				require.NoError(t, c.Close())
			} else {
				defer func() { require.NoError(t, c.Close()) }()
			}
			id, err := c.ExternalDone()
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
				return
			}
			require.NoError(t, err)
			require.Equal(t, OpID(1), id)
			require.Equal(t, OpID(1), c.LastID())
			require.NoError(t, c.Wait(id, -1))
			rs := c.Poll()
			require.Len(t, rs, 1)
			require.Equal(t, "external", rs[0].Name)
			id2, _, err := c.BeginExternal(id)
			require.NoError(t, err)
			_, err = c.ExternalDone()
			require.ErrorIs(t, err, ErrExternalOpen, "not while an external op is open")
			require.NoError(t, c.EndExternal(id2))
		})
	}
}

func TestPipelineBufferBorrowOutlivesClose(t *testing.T) {
	dev := newFakeDevice(backend.CPU)
	c := newCoord(t, dev, CoordinatorOptions{})
	m, err := NewPipelineStageManager(c)
	require.NoError(t, err)
	own, err := m.NewBuffer(16, 2)
	require.NoError(t, err)
	theirs, err := m.AddBuffer(NewSpan(dev, 0x1000, 16))
	require.NoError(t, err)
	tests := []struct {
		name string
		i, v int
		is   error
	}{
		{"allocated by the manager", own, 1, nil},
		{"the caller's", theirs, 0, backend.ErrInvalid},
		{"no such version", own, 2, backend.ErrInvalid},
		{"no such buffer", 9, 0, backend.ErrInvalid},
	}
	var held *struct{ release func() error }
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b, err := m.Borrow(tc.i, tc.v)
			if tc.is != nil {
				require.ErrorIs(t, err, tc.is)
				return
			}
			require.NoError(t, err)
			held = &struct{ release func() error }{b.Release}
		})
	}
	require.NotNil(t, held)
	v0, err := m.Buffer(own, 0)
	require.NoError(t, err)
	v1, err := m.Buffer(own, 1)
	require.NoError(t, err)
	require.NoError(t, m.Close())
	_, err = m.Borrow(own, 0)
	require.ErrorIs(t, err, backend.ErrClosed)
	require.False(t, live(dev, v0), "an unborrowed version is freed by Close")
	require.True(t, live(dev, v1), "a borrowed version outlives Close")
	require.NoError(t, held.release())
	require.False(t, live(dev, v1))
}
