//go:build unix

package nowait

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

func TestOpenNeverWaits(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o600))
	regular := filepath.Join(dir, "file")
	require.NoError(t, os.WriteFile(regular, []byte("abc"), 0o600))
	cases := []struct {
		name, path string
		flag       int
		err        bool
	}{
		{"fifo read, no writer", fifo, os.O_RDONLY, false},
		{"fifo write, no reader", fifo, os.O_WRONLY, true}, // ENXIO at once, not a wait
		{"regular read", regular, os.O_RDONLY, false},
		{"regular create", filepath.Join(dir, "new"), os.O_WRONLY | os.O_CREATE, false},
		{"missing", filepath.Join(dir, "missing"), os.O_RDONLY, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			f, err := Open(tc.path, tc.flag, 0o644)
			require.Less(t, time.Since(start), time.Second, "Open waited")
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			fl, err := unix.FcntlInt(f.Fd(), unix.F_GETFL, 0)
			require.NoError(t, err)
			require.Zero(t, fl&unix.O_NONBLOCK, "O_NONBLOCK left set")
			require.NoError(t, f.Close())
		})
	}
}
