package backend_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

func TestEventPoolReuse(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	for _, timing := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "timing"}[timing], func(t *testing.T) {
			p, err := backend.NewEventPool(cpu.Default(), timing)
			require.NoError(t, err)
			require.Equal(t, timing, p.Timing())
			require.Same(t, cpu.Default(), p.Device())

			a, err := p.Get()
			require.NoError(t, err)
			require.Equal(t, timing, a.Timing())
			b, err := p.Get()
			require.NoError(t, err)
			require.NotSame(t, a, b)
			require.Equal(t, 0, p.Len())
			require.Equal(t, 2, p.Outstanding())

			require.NoError(t, p.Put(a))
			require.Equal(t, 1, p.Len())
			c, err := p.Get()
			require.NoError(t, err)
			require.Same(t, a, c, "Get reuses a released event")

			require.NoError(t, p.Put(b))
			require.NoError(t, p.Put(c))
			require.NoError(t, p.Close())
			_, err = a.Query()
			require.ErrorIs(t, err, backend.ErrClosed, "Close closes free events")
		})
	}
}

func TestEventPoolErrors(t *testing.T) {
	invariants.AllowMisuse(t) // checks the ErrClosed a user sees after misuse
	_, err := backend.NewEventPool(nil, false)
	require.ErrorContains(t, err, "dev=nil, expected a device")

	p, err := backend.NewEventPool(cpu.Default(), false)
	require.NoError(t, err)
	foreign, err := cpu.Default().NewEvent(false)
	require.NoError(t, err)
	ev, err := p.Get()
	require.NoError(t, err)

	tests := []struct {
		name string
		ev   backend.Event
		want string
	}{
		{"nil", nil, "ev=nil, expected an event"},
		{"foreign", foreign, "is not out of this pool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.ErrorContains(t, p.Put(tc.ev), tc.want)
		})
	}
	require.NoError(t, p.Put(ev))
	require.ErrorContains(t, p.Put(ev), "is not out of this pool", "double Put")

	// An event out at Close is closed when returned.
	out, err := p.Get()
	require.NoError(t, err)
	require.NoError(t, p.Close())
	require.ErrorIs(t, p.Close(), backend.ErrClosed)
	_, err = p.Get()
	require.ErrorIs(t, err, backend.ErrClosed)
	require.NoError(t, p.Put(out))
	_, err = out.Query()
	require.ErrorIs(t, err, backend.ErrClosed)
	require.NoError(t, foreign.Close())
}

func TestEventPoolConcurrent(t *testing.T) {
	p, err := backend.NewEventPool(cpu.Default(), true)
	require.NoError(t, err)
	s, err := cpu.Default().NewStream(0)
	require.NoError(t, err)
	defer s.Close()

	const workers, rounds = 8, 500
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			errs <- func() error {
				for range rounds {
					ev, err := p.Get()
					if err != nil {
						return err
					}
					if err := s.Record(ev); err != nil {
						return err
					}
					_ = p.Len()
					if err := p.Put(ev); err != nil {
						return err
					}
				}
				return nil
			}()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	require.Zero(t, p.Outstanding())
	require.LessOrEqual(t, p.Len(), workers, "at most one event per concurrent user")
	require.NoError(t, p.Close())
}
