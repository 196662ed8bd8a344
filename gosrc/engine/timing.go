package engine

import (
	"math"
	"sort"
	"sync"
)

// JobTiming is the time one block spent in each stage, in milliseconds.
// Process and Format come from timing events (device time on a GPU, the
// host clock on the CPU backend); Acquire is host time in Fill.
type JobTiming struct {
	// Block is the block's ID.
	Block int64
	// Acquire is the time Fill took.
	Acquire float64
	// Upload is the block's host-to-device copy on the upload stream,
	// from when the copy engine reached it (the copies before it done):
	// the engine device's, or, for a block only processors on another
	// device read (a cycle over devices), that device's upload stream.
	Upload float64
	// Process spans the upload and the processing on the slot stream.
	Process float64
	// Format spans the end of processing to the last endpoint's
	// formatting (including any wait for a tensor lock).
	Format float64
}

// StageStats summarises one stage over the recorded blocks.
type StageStats struct {
	// Count is the number of blocks measured.
	Count int
	// Mean, Min, Max are in milliseconds over all blocks.
	Mean, Min, Max float64
	// P50 and P99 are over the most recent blocks (the timing ring).
	P50, P99 float64
}

// TimingSummary is the per-stage summary of all blocks so far.
type TimingSummary struct {
	// Acquire, Process and Format summarise the stages; Upload the
	// host-to-device copy within Process.
	Acquire, Process, Format, Upload StageStats
}

// timingRingSize bounds the memory of per-block timings: percentiles are
// over the most recent blocks, means over all of them.
const timingRingSize = 1024

type runningStat struct {
	n             int
	sum, min, max float64
}

func (r *runningStat) add(v float64) {
	if r.n == 0 || v < r.min {
		r.min = v
	}
	if r.n == 0 || v > r.max {
		r.max = v
	}
	r.n++
	r.sum += v
}

// timings keeps a ring of recent JobTimings and running statistics. add
// is called by the recycling goroutine and never allocates.
type timings struct {
	mu    sync.Mutex
	ring  [timingRingSize]JobTiming
	next  int // ring index of the next write
	count int // total recorded

	acq, proc, format, upload runningStat
}

func (t *timings) add(j JobTiming) {
	t.mu.Lock()
	t.ring[t.next] = j
	t.next = (t.next + 1) % timingRingSize
	t.count++
	t.acq.add(j.Acquire)
	t.proc.add(j.Process)
	t.format.add(j.Format)
	t.upload.add(j.Upload)
	t.mu.Unlock()
}

// reset forgets every timing (a new session).
func (t *timings) reset() {
	t.mu.Lock()
	t.next, t.count = 0, 0
	t.acq, t.proc, t.format, t.upload = runningStat{}, runningStat{}, runningStat{}, runningStat{}
	t.mu.Unlock()
}

// recent copies the newest timings, oldest first, into dst.
func (t *timings) recent(dst []JobTiming) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := min(len(dst), t.count, timingRingSize)
	for i := range n {
		dst[i] = t.ring[(t.next-n+i+timingRingSize)%timingRingSize]
	}
	return n
}

func (t *timings) summary() TimingSummary {
	buf := make([]JobTiming, timingRingSize)
	n := t.recent(buf)
	buf = buf[:n]
	t.mu.Lock()
	acq, proc, format, upload := t.acq, t.proc, t.format, t.upload
	t.mu.Unlock()
	vals := make([]float64, n)
	stats := func(r runningStat, get func(JobTiming) float64) StageStats {
		s := StageStats{Count: r.n, Min: r.min, Max: r.max}
		if r.n > 0 {
			s.Mean = r.sum / float64(r.n)
		}
		for i, j := range buf {
			vals[i] = get(j)
		}
		sort.Float64s(vals)
		s.P50, s.P99 = percentile(vals, 0.50), percentile(vals, 0.99)
		return s
	}
	return TimingSummary{
		Acquire: stats(acq, func(j JobTiming) float64 { return j.Acquire }),
		Process: stats(proc, func(j JobTiming) float64 { return j.Process }),
		Format:  stats(format, func(j JobTiming) float64 { return j.Format }),
		Upload:  stats(upload, func(j JobTiming) float64 { return j.Upload }),
	}
}

// percentile of sorted values by the nearest-rank method.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
