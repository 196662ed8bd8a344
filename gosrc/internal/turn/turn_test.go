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

// TestConfigured: unset or empty is not set, 0 parks at once, anything but
// whole microseconds in [0, 10000] is refused naming the variable.
func TestConfigured(t *testing.T) {
	tests := []struct {
		value   string
		want    time.Duration
		set     bool
		wantErr bool
	}{
		{"", 0, false, false},
		{"0", 0, true, false},
		{"50", 50 * time.Microsecond, true, false},
		{"10000", 10 * time.Millisecond, true, false},
		{"10001", 0, false, true},
		{"-1", 0, false, true},
		{"30us", 0, false, true},
		{"off", 0, false, true},
	}
	for _, tc := range tests {
		t.Run(tc.value, func(t *testing.T) {
			t.Setenv(WindowEnv, tc.value)
			got, set, err := Configured()
			if tc.wantErr {
				require.ErrorContains(t, err, WindowEnv)
				require.ErrorContains(t, err, fmt.Sprintf("%q", tc.value))
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.set, set)
		})
	}
}

// TestHotFollowsTheLastWait: an order polls only while its waits end
// within the window: a wait that outlasts it (the holder was slow to come)
// makes the next park at once, a short parked wait makes it poll again,
// and an order without a window never polls.
func TestHotFollowsTheLastWait(t *testing.T) {
	tests := []struct {
		name    string
		window  time.Duration
		hold    time.Duration // how long the holder keeps the turn
		wantHot bool
	}{
		{"short waits poll", 200 * time.Millisecond, time.Millisecond, true},
		{"long waits park", 100 * time.Microsecond, 50 * time.Millisecond, false},
		{"no window", 0, time.Millisecond, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := New(tc.window)
			first, second := o.Take(), o.Take()
			o.Wait(first) // its turn: returns at once, learns nothing
			require.False(t, o.Hot(), "an order starts cold")
			done := make(chan struct{})
			go func() {
				defer close(done)
				o.Wait(second)
				o.Done(second)
			}()
			time.Sleep(tc.hold)
			o.Done(first)
			<-done
			require.Equal(t, tc.wantHot, o.Hot())
		})
	}
}
