// Command pingprobe measures the floor under the engine's event hand-over:
// the time from one goroutine stamping a message to another, spinning on
// its own OS thread (as the Python dispatcher's goroutine is locked to its
// thread), seeing it, every 2.56 ms (the callback benchmarks' block gap).
// Four hand-overs: an atomic counter and a stamp, a buffered channel polled
// with select default, an atomic signal then a channel receive (the shape
// of engine.eventQueue's), and the first with a poster that spins instead
// of sleeping until its deadline (no wake-up before the stamp). On the lent
// H100 VMs the cross-core hand-over alone is about 1 us at the median
// (docs/design.md, "Dispatch latency"). make gpu-build builds it into
// gpu-build/tools.
package main

import (
	"fmt"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// handover is one way to pass a stamp: send publishes it (poster side),
// poll returns it once it has arrived (consumer side, called in a spin).
type handover struct {
	name string
	send func(stamp int64)
	poll func() (int64, bool)
}

const (
	rounds = 800
	gap    = 2560 * time.Microsecond
)

// run passes rounds stamps through h, gap apart, to a goroutine spinning on
// poll on a thread of its own, and prints the latency's percentiles and how
// many stamps the consumer missed (an atomic hand-over keeps only the last
// one: a consumer kept off its CPU for a whole gap misses one). With
// spinPoster the poster waits for each deadline spinning instead of
// sleeping.
func run(h handover, spinPoster bool) {
	t0 := time.Now()
	lat := make([]time.Duration, 0, rounds)
	var ready, stop atomic.Bool
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		ready.Store(true)
		for !stop.Load() {
			if ts, ok := h.poll(); ok {
				lat = append(lat, time.Since(t0)-time.Duration(ts))
			}
		}
		close(done)
	}()
	for !ready.Load() {
		runtime.Gosched() // the consumer spins before the first stamp
	}
	for range rounds {
		if spinPoster {
			for d := time.Now().Add(gap); time.Now().Before(d); {
			}
		} else {
			time.Sleep(gap)
		}
		h.send(int64(time.Since(t0)))
	}
	time.Sleep(gap) // the last stamp's hand-over
	stop.Store(true)
	<-done
	missed := rounds - len(lat)
	lat = lat[len(lat)/10:]
	slices.Sort(lat)
	p := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / 1e3 }
	fmt.Printf("%-22s p50 %6.2f us  p90 %6.2f  p99 %6.2f  max %7.1f  missed %d\n", h.name, p(0.5), p(0.9), p(0.99), p(1), missed)
}

// atomicHandover: a counter the consumer watches and the stamp beside it.
func atomicHandover(name string) handover {
	var seq atomic.Uint64
	var stamp atomic.Int64
	seen := uint64(0)
	return handover{name,
		func(ts int64) { stamp.Store(ts); seq.Add(1) },
		func() (int64, bool) {
			if s := seq.Load(); s != seen {
				seen = s
				return stamp.Load(), true
			}
			return 0, false
		}}
}

// chanHandover: a buffered channel; with signal, the consumer polls it only
// when an atomic signal changed (the shape of engine.eventQueue's).
func chanHandover(name string, signal bool) handover {
	ch := make(chan int64, 64)
	var sig atomic.Uint64
	seen := uint64(0)
	return handover{name,
		func(ts int64) { ch <- ts; sig.Add(1) },
		func() (int64, bool) {
			if signal {
				s := sig.Load()
				if s == seen {
					return 0, false
				}
				seen = s
			}
			select {
			case ts := <-ch:
				return ts, true
			default:
				return 0, false
			}
		}}
}

func main() {
	run(atomicHandover("atomic"), false)
	run(chanHandover("chan polled", false), false)
	run(chanHandover("signal + chan", true), false)
	run(atomicHandover("atomic, poster spins"), true)
}
