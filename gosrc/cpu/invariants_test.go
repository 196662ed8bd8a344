package cpu_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/internal/invariants"
)

// TestMain fails the package's tests if they leave streams, events,
// buffers or graphs open or tensor locks held (in invariant builds:
// -tags invariants, or -race).
func TestMain(m *testing.M) { os.Exit(invariants.RunTests(m)) }

// misuse runs fn and returns its error, or the *invariants.Violation it
// panicked with (which wraps the same error).
func misuse(fn func() error) (err error, panicked bool) {
	defer func() {
		if r := recover(); r != nil {
			err, panicked = r.(*invariants.Violation), true
		}
	}()
	return fn(), false
}

// TestMisusePanicsInInvariantBuilds: a second close or a use after close
// returns ErrClosed to users, and in invariant builds (-race, -tags
// invariants) panics naming the object and where it was made and closed.
func TestMisusePanicsInInvariantBuilds(t *testing.T) {
	d := cpu.Default()
	tests := []struct {
		name string
		kind string
		// setup makes a closed object and returns the misuse to try
		setup func(t *testing.T) func() error
	}{
		{"stream double close", "cpu.Stream", func(t *testing.T) func() error {
			s, err := d.NewStream(0)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			return s.Close
		}},
		{"stream use after close", "cpu.Stream", func(t *testing.T) func() error {
			s, err := d.NewStream(0)
			require.NoError(t, err)
			require.NoError(t, s.Close())
			return s.Synchronize
		}},
		{"event use after close", "cpu.Event", func(t *testing.T) func() error {
			e, err := d.NewEvent(false)
			require.NoError(t, err)
			require.NoError(t, e.Close())
			return e.Synchronize
		}},
		{"event double close", "cpu.Event", func(t *testing.T) func() error {
			e, err := d.NewEvent(false)
			require.NoError(t, err)
			require.NoError(t, e.Close())
			return e.Close
		}},
		{"buffer double free", "cpu.Buffer", func(t *testing.T) func() error {
			b, err := d.Alloc(16)
			require.NoError(t, err)
			require.NoError(t, b.Free())
			return b.Free
		}},
		{"buffer address after free", "cpu.Buffer", func(t *testing.T) func() error {
			b, err := d.Alloc(16)
			require.NoError(t, err)
			require.NoError(t, b.Free())
			return func() error {
				if p := b.Ptr(); p != 0 {
					return fmt.Errorf("Ptr()=%#x after Free, expected 0", p)
				}
				return backend.ErrClosed // user builds: 0 stands for "freed"
			}
		}},
		{"graph launch after close", "cpu.Graph", func(t *testing.T) func() error {
			s, err := d.NewStream(0)
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, s.Close()) })
			require.NoError(t, s.BeginCapture())
			g, err := s.EndCapture()
			require.NoError(t, err)
			require.NoError(t, g.Close())
			return func() error { return g.Launch(s) }
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err, panicked := misuse(tc.setup(t))
			require.Equal(t, invariants.Enabled, panicked, "panics only in invariant builds")
			require.ErrorIs(t, err, backend.ErrClosed)
			if panicked {
				require.Contains(t, err.Error(), tc.kind)
				require.Contains(t, err.Error(), "created at:")
				require.Contains(t, err.Error(), "closed at:")
				require.Contains(t, err.Error(), "cpu_test.TestMisusePanicsInInvariantBuilds")
			}
		})
	}
}
