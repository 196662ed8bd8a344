package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEventQueue(t *testing.T) {
	tests := []struct {
		name    string
		policy  QueuePolicy
		posts   int
		dropped int64
	}{
		{"drop counts overflow", QueueDrop, 5, 2},
		{"block after stop is best-effort", QueueBlock, 5, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newEventQueue(3, tc.policy, 0)
			stopping := make(chan struct{})
			close(stopping) // a stopped engine: posting must not block
			for i := range tc.posts {
				q.post(Event{Kind: EventUpdate, Sample: int64(i)}, stopping)
			}
			require.Equal(t, tc.dropped, q.dropped.Load())
			buf := make([]Event, 2)
			require.Equal(t, 2, q.next(buf, 0))
			require.Equal(t, []int64{0, 1}, []int64{buf[0].Sample, buf[1].Sample}, "FIFO order")
			q.close()
			require.Equal(t, 2, q.next(buf, -1), "the last event, then done")
			require.Equal(t, int64(2), buf[0].Sample)
			require.Equal(t, EventDone, buf[1].Kind)
			require.Zero(t, q.next(buf, time.Millisecond), "done is reported once")
		})
	}
}

func TestEventQueueTimeout(t *testing.T) {
	q := newEventQueue(1, QueueBlock, -1)
	buf := make([]Event, 1)
	start := time.Now()
	require.Zero(t, q.next(buf, 20*time.Millisecond))
	require.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)
	go func() {
		time.Sleep(10 * time.Millisecond)
		q.post(Event{Kind: EventVolume}, nil)
	}()
	require.Equal(t, 1, q.next(buf, -1), "negative timeout waits")
	require.Equal(t, EventVolume, buf[0].Kind)
}

func TestPercentile(t *testing.T) {
	v := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	require.Equal(t, 5.0, percentile(v, 0.5))
	require.Equal(t, 10.0, percentile(v, 0.99))
	require.Zero(t, percentile(nil, 0.5))
}

func TestAdaptiveSpin(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	faster := []time.Duration{0, 8 * ms, 16 * ms} // then every millisecond for longer than gapMemory
	for a := 17; a <= 117; a++ {
		faster = append(faster, time.Duration(a)*ms)
	}
	tests := []struct {
		name     string
		arrivals []time.Duration // since t0
		at       time.Duration   // when next waits
		want     time.Duration
	}{
		{"no arrival yet", nil, 0, defaultSpin},
		{"one arrival: no gap known", []time.Duration{0}, ms / 10, defaultSpin},
		{"blocks every 2.5 ms: spin to twice the gap", []time.Duration{0, 2500 * time.Microsecond, 5 * ms},
			5*ms + ms/10, 4900 * time.Microsecond},
		{"a block's burst does not hide the gap between blocks",
			[]time.Duration{0, 2500 * time.Microsecond, 2510 * time.Microsecond, 2520 * time.Microsecond},
			2520*time.Microsecond + ms/10, 4900 * time.Microsecond},
		{"a faster rate is followed after the memory", faster, 117*ms + ms/10, 1900 * time.Microsecond},
		{"late beyond twice the gap: the default", []time.Duration{0, 2 * ms, 4 * ms}, 9 * ms, defaultSpin},
		{"gaps above the bound: park after the default", []time.Duration{0, 20 * ms}, 20*ms + ms/10, defaultSpin},
		{"stream stopped long ago", []time.Duration{0, 2 * ms, 4 * ms}, 40 * ms, defaultSpin},
		{"never past the bound after the last arrival", []time.Duration{0, 9 * ms, 18 * ms}, 18*ms + 5*ms/2,
			15 * ms / 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newEventQueue(4, QueueBlock, 0)
			require.True(t, q.adaptive)
			for _, a := range tc.arrivals {
				q.arrived(t0.Add(a))
			}
			require.InDelta(t, float64(tc.want), float64(q.adaptiveSpin(t0.Add(tc.at))), float64(50*time.Microsecond))
		})
	}
	require.False(t, newEventQueue(4, QueueBlock, time.Millisecond).adaptive, "a set spin is fixed")
	require.Zero(t, newEventQueue(4, QueueBlock, -1).spinFor, "negative never spins")
}

func TestSpinYieldsInQuietMoments(t *testing.T) {
	tests := []struct {
		name      string
		sinceLast time.Duration // the last arrival, before the spin starts
		wantYield bool
	}{
		{"quiet: the burst is over", time.Millisecond, true},
		{"no arrival yet", -1, true},
		{"a burst still arriving: never yield inside it", -2, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := newEventQueue(4, QueueBlock, 20*time.Millisecond)
			start := time.Now()
			switch {
			case tc.sinceLast >= 0:
				q.lastArrival = start.Add(-tc.sinceLast)
			case tc.sinceLast == -2:
				// An arrival "now" all through the spin: lastArrival in the future
				// keeps now-lastArrival below yieldQuiet.
				q.lastArrival = start.Add(time.Hour)
			}
			q.lastSched = start.Add(-yieldAfter) // due for a trip through the scheduler
			buf := make([]Event, 1)
			spin := yieldAfter + 2*time.Millisecond
			require.Zero(t, q.next(buf, spin), "nothing was posted")
			require.GreaterOrEqual(t, time.Since(start), spin, "the spin counts against the timeout, no less")
			require.Less(t, time.Since(start), spin+50*time.Millisecond, "and not twice")
			if tc.wantYield {
				require.True(t, q.lastSched.After(start), "the spin yielded")
			} else {
				require.Equal(t, start.Add(-yieldAfter), q.lastSched, "no yield while events arrive")
			}
		})
	}
}

// TestSpinningConsumerGetsEveryEventInOrder: bursts with quiet gaps between
// them, so that a spinning consumer parks, spins and yields, from a poster
// on another goroutine; no event is lost or reordered.
func TestSpinningConsumerGetsEveryEventInOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		spin time.Duration
	}{{"adaptive", 0}, {"fixed 5 ms", 5 * time.Millisecond}, {"no spin", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			const bursts, burst = 60, 17
			q := newEventQueue(64, QueueBlock, tc.spin)
			posted := make(chan struct{})
			go func() {
				defer close(posted)
				for b := range bursts {
					time.Sleep(300 * time.Microsecond)
					for i := range burst {
						q.post(Event{Kind: EventSegment, Sample: int64(b*burst + i)}, nil)
					}
				}
				q.close()
			}()
			var got []int64
			buf := make([]Event, 8)
			for done := false; !done; {
				n := q.next(buf, 100*time.Millisecond)
				for _, ev := range buf[:n] {
					if ev.Kind == EventDone {
						done = true
						break
					}
					got = append(got, ev.Sample)
				}
			}
			<-posted
			want := make([]int64, bursts*burst)
			for i := range want {
				want[i] = int64(i)
			}
			require.Equal(t, want, got)
			require.Zero(t, q.dropped.Load())
		})
	}
}
