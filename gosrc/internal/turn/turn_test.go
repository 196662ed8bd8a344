package turn

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestOrder: callers that took tickets in order and run on their own
// goroutines, started in any order, enter their ordered parts in ticket
// order; a skipped ticket passes its turn on.
func TestOrder(t *testing.T) {
	tests := []struct {
		name    string
		callers int
		skip    map[uint64]bool
	}{
		{"one", 1, nil},
		{"many", 64, nil},
		{"skips", 32, map[uint64]bool{0: true, 5: true, 6: true, 31: true}},
	}
	for _, tc := range tests {
		for _, window := range []time.Duration{0, 50 * time.Microsecond} {
			t.Run(fmt.Sprintf("%s/window=%v", tc.name, window), func(t *testing.T) {
				orderCase(t, window, tc.callers, tc.skip)
			})
		}
	}
}

// orderCase is one case of TestOrder: callers goroutines wait for
// their turns, parking at once (window 0) or polling first.
func orderCase(t *testing.T, window time.Duration, callers int, skip map[uint64]bool) {
	o := New(window)
	tickets := make([]uint64, callers)
	for i := range tickets {
		tickets[i] = o.Take()
	}
	var mu sync.Mutex
	var got []uint64
	var wg sync.WaitGroup
	for _, i := range rand.Perm(callers) {
		wg.Add(1)
		go func(tk uint64) {
			defer wg.Done()
			time.Sleep(time.Duration(rand.IntN(200)) * time.Microsecond)
			o.Wait(tk)
			if !skip[tk] {
				mu.Lock()
				got = append(got, tk)
				mu.Unlock()
			}
			o.Done(tk)
		}(tickets[i])
	}
	wg.Wait()
	var want []uint64
	for _, tk := range tickets {
		if !skip[tk] {
			want = append(want, tk)
		}
	}
	require.Equal(t, want, got)
	require.Equal(t, uint64(callers), o.Take(), "the next ticket follows")
}

// TestOrderDoneOutOfTurnPanics: passing a turn one does not hold is a
// bug of the caller, caught at once rather than left to hang a later one.
func TestOrderDoneOutOfTurnPanics(t *testing.T) {
	o := New(0)
	o.Take()
	second := o.Take()
	require.PanicsWithValue(t, "turn: Done out of turn", func() { o.Done(second) })
}
