package pyapi

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSetCPUThreads(t *testing.T) {
	was := runtime.GOMAXPROCS(0)
	t.Cleanup(func() { runtime.GOMAXPROCS(was) })
	for _, tc := range []struct {
		name string
		n    int
		ok   bool
	}{
		{"reads with zero", 0, true},
		{"one", 1, true},
		{"more than the cores", runtime.NumCPU() + 3, true},
		{"the bound", maxCPUThreads, true},
		{"negative", -1, false},
		{"above the bound", maxCPUThreads + 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := runtime.GOMAXPROCS(0)
			prev, err := SetCPUThreads(tc.n)
			if !tc.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "ValueError: SetCPUThreads: threads=", "a Python ValueError naming the argument")
				assert.Equal(t, before, runtime.GOMAXPROCS(0), "a refused value changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, before, prev, "returns the previous value")
			if tc.n > 0 {
				assert.Equal(t, tc.n, runtime.GOMAXPROCS(0))
			} else {
				assert.Equal(t, before, runtime.GOMAXPROCS(0))
			}
		})
	}
}
