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
