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

func report(name string, lat []time.Duration) {
	lat = lat[len(lat)/10:]
	slices.Sort(lat)
	p := func(f float64) float64 { return float64(lat[int(f*float64(len(lat)-1))]) / 1e3 }
	fmt.Printf("%-22s p50 %6.2f us  p90 %6.2f  p99 %6.2f  max %7.1f\n", name, p(0.5), p(0.9), p(0.99), p(1))
}

func main() {
	const n = 800
	t0 := time.Now()
	// 1. atomic counter + stamp
	{
		var seq atomic.Uint64
		var stamp atomic.Int64
		lat := make([]time.Duration, 0, n)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			seen := uint64(0)
			for len(lat) < n {
				if s := seq.Load(); s != seen {
					seen = s
					lat = append(lat, time.Since(t0)-time.Duration(stamp.Load()))
				}
			}
			close(done)
		}()
		for range n {
			time.Sleep(2560 * time.Microsecond)
			stamp.Store(int64(time.Since(t0)))
			seq.Add(1)
		}
		<-done
		report("atomic", lat)
	}
	// 2. buffered channel, consumer polling with select default
	{
		ch := make(chan int64, 64)
		lat := make([]time.Duration, 0, n)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			for len(lat) < n {
				select {
				case ts := <-ch:
					lat = append(lat, time.Since(t0)-time.Duration(ts))
				default:
				}
			}
			close(done)
		}()
		for range n {
			time.Sleep(2560 * time.Microsecond)
			ch <- int64(time.Since(t0))
		}
		<-done
		report("chan polled", lat)
	}
	// 3. atomic signal then channel receive (the engine's queue's hand-over)
	{
		ch := make(chan int64, 64)
		var sig atomic.Uint64
		lat := make([]time.Duration, 0, n)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			seen := sig.Load()
			for len(lat) < n {
				if s := sig.Load(); s != seen {
					seen = s
					select {
					case ts := <-ch:
						lat = append(lat, time.Since(t0)-time.Duration(ts))
					default:
					}
				}
			}
			close(done)
		}()
		for range n {
			time.Sleep(2560 * time.Microsecond)
			ch <- int64(time.Since(t0))
			sig.Add(1)
		}
		<-done
		report("signal + chan", lat)
	}
	// 4. as 1, the poster not sleeping but spinning until its deadline (no wake-up before the stamp)
	{
		var seq atomic.Uint64
		var stamp atomic.Int64
		lat := make([]time.Duration, 0, n)
		done := make(chan struct{})
		go func() {
			runtime.LockOSThread()
			seen := uint64(0)
			for len(lat) < n {
				if s := seq.Load(); s != seen {
					seen = s
					lat = append(lat, time.Since(t0)-time.Duration(stamp.Load()))
				}
			}
			close(done)
		}()
		for range n {
			d := time.Now().Add(2560 * time.Microsecond)
			for time.Now().Before(d) {
			}
			stamp.Store(int64(time.Since(t0)))
			seq.Add(1)
		}
		<-done
		report("atomic, poster spins", lat)
	}
}
