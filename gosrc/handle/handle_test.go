package handle

import (
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

func TestRegistryLifecycle(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, r *Registry)
	}{
		{"register then get", func(t *testing.T, r *Registry) {
			id := r.Register("a")
			v, err := Get[string](r, id)
			require.NoError(t, err)
			assert.Equal(t, "a", v)
		}},
		{"zero and negative ids are stale", func(t *testing.T, r *Registry) {
			for _, id := range []ID{0, -1, 1, 1 << 40} {
				_, err := Get[string](r, id)
				assert.ErrorIs(t, err, ErrStale, "id %v", id)
				assert.ErrorIs(t, err, backend.ErrClosed)
			}
		}},
		{"released id never names the slot's next object", func(t *testing.T, r *Registry) {
			old := r.Register("old")
			r.Release(old)
			fresh := r.Register("new")
			slotOld, _ := old.split()
			slotNew, _ := fresh.split()
			require.Equal(t, slotOld, slotNew, "the slot is reused")
			assert.NotEqual(t, old, fresh)
			_, err := Get[string](r, old)
			assert.ErrorIs(t, err, ErrStale)
			v, err := Get[string](r, fresh)
			require.NoError(t, err)
			assert.Equal(t, "new", v)
		}},
		{"wrong type is an error, not a panic", func(t *testing.T, r *Registry) {
			id := r.Register(42)
			_, err := Get[string](r, id)
			require.Error(t, err)
			assert.NotErrorIs(t, err, ErrStale)
			assert.Contains(t, err.Error(), "names a int")
		}},
		{"releasing an owner releases its borrowers recursively", func(t *testing.T, r *Registry) {
			owner := r.Register("endpoint")
			stream, err := r.Borrow(owner, "stream")
			require.NoError(t, err)
			view, err := r.Borrow(stream, "view")
			require.NoError(t, err)
			other := r.Register("other")
			got := r.Release(owner)
			assert.Equal(t, []any{"endpoint", "stream", "view"}, got)
			assert.False(t, r.Live(stream))
			assert.False(t, r.Live(view))
			assert.True(t, r.Live(other))
			assert.Equal(t, 1, r.Len())
		}},
		{"borrowing from a stale owner fails", func(t *testing.T, r *Registry) {
			owner := r.Register("x")
			r.Release(owner)
			_, err := r.Borrow(owner, "y")
			assert.ErrorIs(t, err, ErrStale)
			assert.Equal(t, 0, r.Len())
		}},
		{"double release is a no-op", func(t *testing.T, r *Registry) {
			id := r.Register("x")
			assert.Len(t, r.Release(id), 1)
			assert.Nil(t, r.Release(id))
			assert.Equal(t, 0, r.Len())
		}},
		{"releasing a borrower leaves its owner", func(t *testing.T, r *Registry) {
			owner := r.Register("o")
			b, err := r.Borrow(owner, "b")
			require.NoError(t, err)
			r.Release(b)
			assert.True(t, r.Live(owner))
			assert.Equal(t, []any{"o"}, r.Release(owner))
		}},
		{"check and close name the object and fail once released", func(t *testing.T, r *Registry) {
			id := r.Register("s")
			require.NoError(t, r.Check("stream", id))
			require.NoError(t, r.Close("stream", id))
			for _, err := range []error{r.Check("stream", id), r.Close("stream", id)} {
				assert.ErrorIs(t, err, ErrStale)
				assert.ErrorContains(t, err, "stream "+id.String())
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, &Registry{}) })
	}
}

func TestRegistryFreedSlotsRestFIFO(t *testing.T) {
	var r Registry
	a, b := r.Register(1), r.Register(2)
	r.Release(a)
	r.Release(b)
	c := r.Register(3)
	sa, _ := a.split()
	sc, _ := c.split()
	assert.Equal(t, sa, sc, "the slot released first is reused first")
}

func TestRegistryConcurrent(t *testing.T) {
	var r Registry
	const workers, rounds = 8, 500
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				id := r.Register(w*rounds + i)
				v, err := Get[int](&r, id)
				if err != nil || v != w*rounds+i {
					errs <- errors.New("lookup returned another object")
					return
				}
				r.Release(id)
				if r.Live(id) {
					errs <- errors.New("released id still live")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err) // on the test goroutine
	}
	assert.Equal(t, 0, r.Len())
}

func TestIDString(t *testing.T) {
	var r Registry
	id := r.Register("x")
	assert.Equal(t, "#1@1", id.String())
}
