package engine

import (
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkNextLatency measures the queue's own share of the callback
// latency: a poster sends bursts of 17 events (a block's segments and its
// update) every 2.56 ms, stamped once per burst, as one item as postPlan
// does (postBurst) or, in the "-events" cases, one post each, to a
// consumer goroutine locked to its OS thread (as the Python dispatcher's
// cgo callback is) draining with next into a batch of 256; the figure is
// from the stamp to next returning the event, for the default adaptive
// spin, a 5 ms spin (with and without the spin's yields, see yieldAfter)
// and none (parks between bursts). post-ns is the poster's time per event
// of a burst, which a consumer polling the channel would make contend for
// it (the spin reads eventQueue.signal instead: docs/design.md, "Dispatch
// latency"). Run with
//
//	go test -run '^$' -bench NextLatency -benchtime 400x ./gosrc/engine/
//
// (the 20 and 50 ms cases then take 8 and 20 s; -benchtime 60x is enough there)
func BenchmarkNextLatency(b *testing.B) {
	for _, tc := range []struct {
		name     string
		spin     time.Duration
		noYield  bool
		perEvent bool
		burst    int
		period   time.Duration // between bursts; 0: 2.56 ms
	}{
		{"adaptive", 0, false, false, 17, 0}, {"adaptive-events", 0, false, true, 17, 0},
		{"spin5ms", 5 * time.Millisecond, false, false, 17, 0}, {"spin5ms-events", 5 * time.Millisecond, false, true, 17, 0},
		{"spin5ms-noyield", 5 * time.Millisecond, true, false, 17, 0},
		{"spin5ms-1", 5 * time.Millisecond, false, false, 1, 0}, // the fixed cost of a hand-over
		{"park", -1, false, false, 17, 0},
		// Bursts too far apart to spin through: the adaptive dispatcher
		// parks, and wakes to spin before the next is due (predict).
		{"adaptive-20ms", 0, false, false, 17, 20 * time.Millisecond},
		{"adaptive-50ms", 0, false, false, 17, 50 * time.Millisecond},
		{"park-50ms", -1, false, false, 17, 50 * time.Millisecond},
	} {
		b.Run(tc.name, func(b *testing.B) {
			burst := tc.burst
			q := mustQueue(b, 4096, QueueBlock, tc.spin)
			q.noYield = tc.noYield
			t0 := time.Now()
			lat := make([]time.Duration, 0, b.N*burst)
			done := make(chan struct{})
			go func() {
				defer close(done)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				dst := make([]Event, 256)
				for {
					n := q.next(dst, 100*time.Millisecond)
					now := time.Since(t0)
					for _, ev := range dst[:n] {
						if ev.Kind == EventDone {
							return
						}
						lat = append(lat, now-time.Duration(ev.Timestamp))
					}
				}
			}()
			never := make(chan struct{})
			var posting time.Duration
			b.ResetTimer()
			period := tc.period
			if period == 0 {
				period = 2560 * time.Microsecond
			}
			for range b.N {
				time.Sleep(period)
				ts := int64(time.Since(t0))
				if tc.perEvent {
					for range burst {
						q.post(Event{Kind: EventSegment, Timestamp: ts}, never)
					}
				} else { // as postPlan posts a block's events
					bu := q.newBurst()
					for range burst {
						bu.evs = append(bu.evs, Event{Kind: EventSegment, Timestamp: ts})
					}
					q.postBurst(bu, -1, never)
				}
				posting += time.Since(t0) - time.Duration(ts)
			}
			q.close()
			<-done
			b.StopTimer()
			lat = lat[len(lat)/10:] // the first bursts train the adaptive spin
			slices.Sort(lat)
			pct := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / 1e3 }
			b.ReportMetric(pct(0.5), "p50-us")
			b.ReportMetric(pct(0.99), "p99-us")
			b.ReportMetric(pct(1), "max-us")
			b.ReportMetric(float64(posting.Nanoseconds())/float64(b.N*burst), "post-ns")
		})
	}
}
