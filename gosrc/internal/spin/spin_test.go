package spin

import (
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestConfigured(t *testing.T) {
	tests := []struct {
		name, value string
		set         bool
		want        time.Duration
		err         bool
	}{
		{"unset: off", "", false, 0, false},
		{"empty: off", "", true, 0, false},
		{"off", "0", true, 0, false},
		{"microseconds", "120", true, 120 * time.Microsecond, false},
		{"the largest", "10000", true, 10 * time.Millisecond, false},
		{"too long", "10001", true, 0, true},
		{"negative", "-1", true, 0, true},
		{"a word", "off", true, 0, true},
		{"a fraction", "1.5", true, 0, true},
		{"a unit", "50us", true, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.set {
				t.Setenv(Env, tc.value)
			} else {
				t.Setenv(Env, "x") // restored after the test
				require.NoError(t, os.Unsetenv(Env))
			}
			got, err := Configured()
			if tc.err {
				require.Error(t, err)
				assert.Contains(t, err.Error(), Env, "the error names the variable")
				assert.Contains(t, err.Error(), "[0, 10000]", "and the values it takes")
				assert.Zero(t, Window(), "an invalid value never polls")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.want, Window())
		})
	}
}

// TestRecv: every value in order and the close, whether the waiter polls
// or parks, and whether the sender is ahead (hot) or behind (cold).
func TestRecv(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration
		gap    time.Duration // between sends
	}{
		{"parks, sender ahead", 0, 0},
		{"parks, sender behind", 0, 200 * time.Microsecond},
		{"polls, sender ahead", 50 * time.Microsecond, 0},
		{"polls, sender within the window", time.Millisecond, 20 * time.Microsecond},
		{"polls, sender beyond the window", 20 * time.Microsecond, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n = 300
			ch := make(chan int, 4)
			go func() {
				for i := range n {
					if tc.gap > 0 && i%10 == 0 {
						time.Sleep(tc.gap)
					}
					ch <- i
				}
				close(ch)
			}()
			w := NewWaiter(tc.window)
			for i := range n {
				v, ok := Recv(w, ch)
				require.True(t, ok)
				require.Equal(t, i, v)
			}
			_, ok := Recv(w, ch)
			require.False(t, ok, "the close is seen")
			if tc.window == 0 {
				assert.False(t, w.hot, "a waiter without a window never polls")
			}
		})
	}
}

// TestHot: a wait within the window makes the waiter poll next time, a
// longer one makes it park at once.
func TestHot(t *testing.T) {
	w := NewWaiter(time.Millisecond)
	ch := make(chan int, 1)
	ch <- 1
	_, _ = Recv(w, ch)
	require.True(t, w.hot, "an item waiting: hot")
	go func() { time.Sleep(20 * time.Millisecond); ch <- 2 }()
	v, ok := Recv(w, ch)
	require.True(t, ok)
	require.Equal(t, 2, v)
	require.False(t, w.hot, "a 20 ms wait against a 1 ms window: cold")
}

// TestSend: every value arrives in order, whether the waiter polls or
// parks, and whether the receiver keeps up (room at once) or lags (a full
// channel, waited for within the window or beyond it).
func TestSend(t *testing.T) {
	tests := []struct {
		name   string
		window time.Duration
		gap    time.Duration // between receives
	}{
		{"parks, receiver ahead", 0, 0},
		{"parks, receiver behind", 0, 200 * time.Microsecond},
		{"polls, receiver ahead", 50 * time.Microsecond, 0},
		{"polls, receiver within the window", time.Millisecond, 20 * time.Microsecond},
		{"polls, receiver beyond the window", 20 * time.Microsecond, time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const n = 300
			ch := make(chan int, 2)
			got := make(chan []int, 1)
			go func() {
				var vs []int
				for v := range ch {
					if tc.gap > 0 && len(vs)%10 == 0 {
						time.Sleep(tc.gap)
					}
					vs = append(vs, v)
				}
				got <- vs
			}()
			w := NewWaiter(tc.window)
			for i := range n {
				Send(w, ch, i)
			}
			close(ch)
			vs := <-got
			require.Len(t, vs, n)
			for i, v := range vs {
				require.Equal(t, i, v)
			}
			if tc.window == 0 {
				assert.False(t, w.hot, "a waiter without a window never polls")
			}
		})
	}
}

// TestSendHot: room at once, or a wait within the window, makes the waiter
// poll next time; a longer wait makes it park at once.
func TestSendHot(t *testing.T) {
	w := NewWaiter(time.Millisecond)
	ch := make(chan int, 1)
	Send(w, ch, 1)
	require.True(t, w.hot, "room at once: hot")
	go func() { time.Sleep(20 * time.Millisecond); <-ch }()
	Send(w, ch, 2) // full until the receiver takes 1
	require.False(t, w.hot, "a 20 ms wait against a 1 ms window: cold")
	require.Equal(t, 2, <-ch)
}

func TestRecvOr(t *testing.T) {
	for _, window := range []time.Duration{0, 50 * time.Microsecond} {
		t.Run(window.String(), func(t *testing.T) {
			w := NewWaiter(window)
			w.hot = true
			ch, stop := make(chan int, 1), make(chan struct{})
			ch <- 7
			v, stopped := RecvOr(w, ch, stop)
			require.False(t, stopped)
			require.Equal(t, 7, v)
			go func() { time.Sleep(2 * time.Millisecond); close(stop) }()
			_, stopped = RecvOr(w, ch, stop)
			require.True(t, stopped, "a stop while waiting ends the wait")
			_, stopped = RecvOr(w, ch, stop)
			require.True(t, stopped, "and every wait after it")
		})
	}
}

func TestUntil(t *testing.T) {
	var flag atomic.Bool
	assert.False(t, Until(0, flag.Load), "no window: one look")
	start := time.Now()
	assert.False(t, Until(200*time.Microsecond, flag.Load), "never true: false once the window ends")
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Microsecond)
	go func() { time.Sleep(50 * time.Microsecond); flag.Store(true) }()
	assert.True(t, Until(time.Second, flag.Load), "true within the window")
}
