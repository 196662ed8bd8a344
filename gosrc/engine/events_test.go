package engine

import (
	"fmt"
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
			q := mustQueue(t, 3, tc.policy, 0)
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
	q := mustQueue(t, 1, QueueBlock, -1)
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
	faster := []time.Duration{0, 8 * ms, 16 * ms} // then every millisecond for longer than two windows
	for a := 17; a <= 217; a++ {
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
		{"a faster rate is followed after two windows", faster, 217*ms + ms/10, 1900 * time.Microsecond},
		{"late beyond twice the gap: the default", []time.Duration{0, 2 * ms, 4 * ms}, 9 * ms, defaultSpin},
		{"gaps above the bound: park after the default", []time.Duration{0, 20 * ms}, 20*ms + ms/10, defaultSpin},
		{"stream stopped long ago", []time.Duration{0, 2 * ms, 4 * ms}, 40 * ms, defaultSpin},
		{"never past the bound after the last arrival", []time.Duration{0, 9 * ms, 18 * ms}, 18*ms + 5*ms/2,
			15 * ms / 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := mustQueue(t, 4, QueueBlock, 0)
			require.True(t, q.adaptive)
			for _, a := range tc.arrivals {
				q.arrived(t0.Add(a))
			}
			require.InDelta(t, float64(tc.want), float64(q.adaptiveSpin(t0.Add(tc.at))), float64(50*time.Microsecond))
		})
	}
	require.False(t, mustQueue(t, 4, QueueBlock, time.Millisecond).adaptive, "a set spin is fixed")
	require.Zero(t, mustQueue(t, 4, QueueBlock, -1).spinFor, "negative never spins")
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
			q := mustQueue(t, 4, QueueBlock, 20*time.Millisecond)
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
			q := mustQueue(t, 64, QueueBlock, tc.spin)
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

// TestBurstsKeepOrderAndSeq: bursts (postBurst, as postPlan posts a
// block's events) and single events interleaved, drained in batches
// smaller than, equal to and larger than a burst: every event arrives
// once, in order, with consecutive Seqs, then EventDone; the rest of a
// burst that did not fit a batch comes first in the next one.
func TestBurstsKeepOrderAndSeq(t *testing.T) {
	for _, batch := range []int{1, 3, 17, 256} {
		for _, spin := range []time.Duration{0, -1} {
			t.Run(fmt.Sprintf("batch=%d/spin=%v", batch, spin), func(t *testing.T) {
				q := mustQueue(t, 64, QueueBlock, spin)
				sizes := []int{1, 5, 17, 40, 0, 2, 17, 64, 1}
				total := 0
				go func() {
					for i, n := range sizes {
						if i%2 == 1 {
							q.post(Event{Kind: EventUpdate, Sample: int64(total)}, nil)
							total++
						}
						b := q.newBurst()
						for range n {
							b.evs = append(b.evs, Event{Kind: EventSegment, Sample: int64(total)})
							total++
						}
						if _, ok := q.postBurst(b, -1, nil); n > 0 && !ok {
							panic(fmt.Sprintf("burst %d was not queued", i))
						}
					}
					q.close()
				}()
				var got []Event
				buf := make([]Event, batch)
				for done := false; !done; {
					n := q.next(buf, time.Second)
					require.LessOrEqual(t, n, batch)
					for _, ev := range buf[:n] {
						if ev.Kind == EventDone {
							done = true
							break
						}
						got = append(got, ev)
					}
				}
				want := 0
				for i, n := range sizes {
					want += n
					if i%2 == 1 {
						want++
					}
				}
				require.Len(t, got, want)
				for i, ev := range got {
					require.Equal(t, int64(i), ev.Sample, "event %d in order", i)
					require.Equal(t, uint64(i+1), ev.Seq, "event %d: consecutive Seqs", i)
				}
				require.Zero(t, q.dropped.Load())
				require.Zero(t, q.used(), "every queued event was taken")
			})
		}
	}
}

// TestBurstRoomAndDrops: the queue's room is counted in events, a burst's
// all of them. A burst that finds room goes whole, even past the room
// (posters overshoot, as single posts do by one); with none, QueueDrop
// drops all its events, and QueueBlock waits, dropping them only once the
// engine is stopping. The Seq postBurst returns for an index is the one
// the consumer sees; a burst longer than burstRoom goes in parts.
func TestBurstRoomAndDrops(t *testing.T) {
	burst := func(q *eventQueue, n int) *eventBurst {
		b := q.newBurst()
		for i := range n {
			b.evs = append(b.evs, Event{Kind: EventSegment, Sample: int64(i)})
		}
		return b
	}
	t.Run("overshoot then drop", func(t *testing.T) {
		q := mustQueue(t, 4, QueueDrop, -1)
		seq, ok := q.postBurst(burst(q, 10), 7, nil)
		require.True(t, ok)
		require.Equal(t, uint64(8), seq, "the Seq of index 7")
		require.Equal(t, uint64(10), q.used())
		require.True(t, q.full())
		_, ok = q.postBurst(burst(q, 3), 0, nil)
		require.False(t, ok)
		require.Zero(t, q.post(Event{Kind: EventUpdate}, nil), "a single event is dropped too")
		require.Equal(t, int64(4), q.dropped.Load(), "3 of the burst and the single event")
		buf := make([]Event, 4)
		require.Equal(t, 4, q.next(buf, 0))
		require.Equal(t, uint64(6), q.used(), "the rest stays queued")
		require.Equal(t, 4, q.next(buf, 0), "the rest comes next")
		require.Equal(t, []int64{4, 5, 6, 7}, []int64{buf[0].Sample, buf[1].Sample, buf[2].Sample, buf[3].Sample})
		require.Equal(t, []uint64{5, 6, 7, 8}, []uint64{buf[0].Seq, buf[1].Seq, buf[2].Seq, buf[3].Seq})
		require.Equal(t, 2, q.next(buf, 0))
		require.True(t, q.full() == false && q.used() == 0)
	})
	t.Run("block waits for room", func(t *testing.T) {
		q := mustQueue(t, 4, QueueBlock, -1)
		_, ok := q.postBurst(burst(q, 4), 0, nil)
		require.True(t, ok)
		posted := make(chan uint64)
		go func() {
			seq, ok := q.postBurst(burst(q, 2), 0, nil)
			if !ok {
				seq = 0
			}
			posted <- seq
		}()
		select {
		case <-posted:
			t.Fatal("a full QueueBlock queue must make the poster wait")
		case <-time.After(20 * time.Millisecond):
		}
		// Taking the first burst makes room, and the waiting poster may
		// queue the second before that same call returns: the events come
		// in one call or two, in order either way.
		buf := make([]Event, 8)
		var seqs []uint64
		n := q.next(buf, 0)
		require.Contains(t, []int{4, 6}, n)
		for i := range n {
			seqs = append(seqs, buf[i].Seq)
		}
		require.Equal(t, uint64(5), <-posted, "Seqs 5 and 6 follow the first burst's")
		if n == 4 {
			require.Equal(t, 2, q.next(buf, time.Second))
			seqs = append(seqs, buf[0].Seq, buf[1].Seq)
		}
		require.Equal(t, []uint64{1, 2, 3, 4, 5, 6}, seqs)
	})
	t.Run("block drops once stopping", func(t *testing.T) {
		q := mustQueue(t, 2, QueueBlock, -1)
		_, ok := q.postBurst(burst(q, 2), 0, nil)
		require.True(t, ok)
		stopping := make(chan struct{})
		close(stopping)
		_, ok = q.postBurst(burst(q, 5), 0, stopping)
		require.False(t, ok)
		require.Equal(t, int64(5), q.dropped.Load())
	})
	t.Run("longer than burstRoom: in parts, in order", func(t *testing.T) {
		q := mustQueue(t, 4, QueueBlock, -1)
		const n = 2*burstRoom + 5
		done := make(chan uint64)
		go func() {
			seq, _ := q.postBurst(burst(q, n), n-1, nil)
			done <- seq
		}()
		var got []int64
		buf := make([]Event, 64)
		for len(got) < n {
			k := q.next(buf, time.Second)
			require.NotZero(t, k, "the parts keep coming while the consumer drains")
			for _, ev := range buf[:k] {
				got = append(got, ev.Sample)
			}
		}
		require.Equal(t, uint64(n), <-done, "the last event's Seq")
		for i, s := range got {
			require.Equal(t, int64(i), s)
		}
	})
	t.Run("empty burst", func(t *testing.T) {
		q := mustQueue(t, 2, QueueBlock, -1)
		_, ok := q.postBurst(q.newBurst(), 0, nil)
		require.False(t, ok)
		require.Zero(t, q.used())
		require.Zero(t, q.next(make([]Event, 1), 0))
	})
}

// TestPredict: for gaps between arrivals longer than maxAdaptiveSpin the
// adaptive dispatcher parks until predictMargin before the next arrival is
// due and spins until predictMargin after it.
func TestPredict(t *testing.T) {
	ms := time.Millisecond
	t0 := time.Unix(1000, 0)
	tests := []struct {
		name       string
		arrivals   []time.Duration
		at         time.Duration
		ok         bool
		wait, spin time.Duration
	}{
		{"no arrival yet", nil, 0, false, 0, 0},
		{"gaps short enough to spin through", []time.Duration{0, 2500 * time.Microsecond}, 2600 * time.Microsecond, false, 0, 0},
		{"every 50 ms, just after a block", []time.Duration{0, 50 * ms}, 50*ms + ms/10, true,
			50*ms - 3125*time.Microsecond - ms/10, 6250 * time.Microsecond},
		{"every 50 ms, inside the window", []time.Duration{0, 50 * ms}, 98 * ms, true, 0, 103*ms + ms/8 - 98*ms},
		{"every 50 ms, past the window", []time.Duration{0, 50 * ms}, 104 * ms, false, 0, 0},
		{"every 12 ms: the margin's floor", []time.Duration{0, 12 * ms}, 12 * ms, true, 11 * ms, 2 * ms},
		{"every second: the margin's cap", []time.Duration{0, time.Second}, time.Second, true, 995 * ms, 10 * ms},
		{"gaps beyond maxPredictGap", []time.Duration{0, 3 * time.Second}, 3 * time.Second, false, 0, 0},
		// A block split in two (the format stage waited for a volume's
		// callbacks) as a window of gapMemory ends: its short gap must not
		// replace the gap between blocks.
		{"a split block at a window's end", []time.Duration{0, 50600 * time.Microsecond, 100200 * time.Microsecond, 150 * ms,
			151100 * time.Microsecond}, 151200 * time.Microsecond, true,
			47337500 * time.Nanosecond, 6325 * time.Microsecond}, // gap 50.6 ms, margin 3.1625 ms, 0.1 ms since
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := mustQueue(t, 4, QueueBlock, 0)
			for _, a := range tc.arrivals {
				q.arrived(t0.Add(a))
			}
			wait, spin, ok := q.predict(t0.Add(tc.at))
			require.Equal(t, tc.ok, ok)
			require.Equal(t, tc.wait, wait)
			require.Equal(t, tc.spin, spin)
		})
	}
}

// TestPredictedWaitDelivers: whether the item comes while the dispatcher
// is parked before the predicted arrival, during its spin, or the queue
// closes meanwhile, next hands it over (or EventDone) as without the
// prediction.
func TestPredictedWaitDelivers(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after time.Duration // from next's call to the post
		close bool
	}{
		{"early: while parked", 5 * time.Millisecond, false},
		{"on time: while spinning", 29 * time.Millisecond, false},
		{"late: parked after the spin", 45 * time.Millisecond, false},
		{"closed while parked", 5 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := mustQueue(t, 4, QueueBlock, 0)
			now := time.Now()
			q.arrived(now.Add(-30 * time.Millisecond))
			q.arrived(now) // a block every 30 ms: the next is due in 30 ms
			_, _, planned := q.predict(time.Now())
			require.True(t, planned)
			go func() {
				time.Sleep(tc.after)
				if tc.close {
					q.close()
					return
				}
				q.post(Event{Kind: EventSegment, Sample: 7}, nil)
			}()
			dst := make([]Event, 4)
			n := q.next(dst, time.Second)
			require.Equal(t, 1, n)
			if tc.close {
				require.Equal(t, EventDone, dst[0].Kind)
				return
			}
			require.Equal(t, EventSegment, dst[0].Kind)
			require.Equal(t, int64(7), dst[0].Sample)
		})
	}
}

// mustQueue is newEventQueue for a test.
func mustQueue(t testing.TB, size int, policy QueuePolicy, spin time.Duration) *eventQueue {
	q, err := newEventQueue(size, policy, spin)
	require.NoError(t, err)
	return q
}
