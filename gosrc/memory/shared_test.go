package memory

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
)

func newSharedCPU(t *testing.T, n int) *Shared {
	t.Helper()
	buf, err := cpu.Default().Alloc(n)
	require.NoError(t, err)
	return NewShared(buf)
}

func TestSharedFreesWithLastReference(t *testing.T) {
	tests := []struct {
		name      string
		borrows   int
		releaseAt int // borrows released before the owner closes
	}{
		{"no borrowers: close frees", 0, 0},
		{"borrowers outlive the owner", 3, 0},
		{"borrowers released first", 2, 2},
		{"some before, some after", 3, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSharedCPU(t, 64)
			var bs []*Borrow
			for range tc.borrows {
				b, err := s.Borrow()
				require.NoError(t, err)
				bs = append(bs, b)
			}
			assert.Equal(t, tc.borrows, s.Borrowers())
			for _, b := range bs[:tc.releaseAt] {
				require.NoError(t, b.Release())
			}
			require.NoError(t, s.Close())
			assert.True(t, s.Closed())
			assert.Equal(t, tc.releaseAt == tc.borrows, s.Freed(), "freed only when nothing borrows")
			for _, b := range bs[tc.releaseAt:] {
				assert.False(t, s.Freed())
				require.NoError(t, b.Release())
			}
			assert.True(t, s.Freed())
			assert.Equal(t, 0, s.Borrowers())
		})
	}
}

func TestSharedMisuse(t *testing.T) {
	s := newSharedCPU(t, 8)
	b, err := s.Borrow()
	require.NoError(t, err)
	require.NoError(t, s.Close())
	assert.ErrorIs(t, s.Close(), backend.ErrClosed, "double close")
	_, err = s.Borrow()
	assert.ErrorIs(t, err, backend.ErrClosed, "borrow after close")
	require.NoError(t, b.Release())
	require.NoError(t, b.Release(), "second release is a no-op")
	assert.True(t, s.Freed())
}

func TestSharedConcurrentBorrowers(t *testing.T) {
	s := newSharedCPU(t, 8)
	const n = 64
	bs := make([]*Borrow, n)
	for i := range bs {
		b, err := s.Borrow()
		require.NoError(t, err)
		bs[i] = b
	}
	var wg sync.WaitGroup
	errs := make(chan error, n+1)
	for _, b := range bs {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- b.Release() }()
	}
	errs <- s.Close()
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	assert.True(t, s.Freed())
}

func TestBorrowThroughBorrow(t *testing.T) {
	tests := []struct {
		name        string
		ownerClosed bool
	}{
		{"owner live", false},
		{"owner closed: the borrow still lends", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSharedCPU(t, 32)
			b, err := s.Borrow()
			require.NoError(t, err)
			if tc.ownerClosed {
				require.NoError(t, s.Close())
			}
			nested, err := b.Borrow()
			require.NoError(t, err)
			require.NoError(t, b.Release())
			assert.False(t, s.Freed(), "the nested borrow keeps the memory")
			_, err = b.Borrow()
			assert.ErrorIs(t, err, backend.ErrClosed, "borrowing through a released borrow")
			require.NoError(t, nested.Release())
			if !tc.ownerClosed {
				assert.False(t, s.Freed())
				require.NoError(t, s.Close())
			}
			assert.True(t, s.Freed())
		})
	}
}

func TestSharedCheck(t *testing.T) {
	s := newSharedCPU(t, 64)
	defer func() { require.NoError(t, s.Close()) }()
	base := s.Ptr()
	tests := []struct {
		name string
		ptr  uintptr
		n    int
		ok   bool
	}{
		{"whole", base, 64, true},
		{"tail", base + 60, 4, true},
		{"empty at the end", base + 64, 0, true},
		{"one past the end", base + 60, 5, false},
		{"before the start", base - 1, 1, false},
		{"past the end", base + 65, 0, false},
		{"negative", base, -1, false},
		{"huge", base + 1, int(^uint(0) >> 1), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := s.Check(tc.ptr, tc.n)
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, backend.ErrInvalid)
		})
	}
}
