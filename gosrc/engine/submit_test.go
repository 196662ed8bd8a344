package engine_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/cpu"
	"github.com/vortexgo/vortexgo/gosrc/endpoint"
	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/internal/spin"
)

// orderedProc is fakeProc as an engine.OrderedProcessor: its ordered part
// notes each block's first record, in turn; failAt and panicAt (block
// numbers, -1 for none) fail or panic there, in turn.
type orderedProc struct {
	samples         int
	failAt, panicAt int

	mu         sync.Mutex
	cond       *sync.Cond
	next, turn uint64
	seen       []int64 // first record of each block, in the order of the ordered parts
	skipped    int
	goroutines sync.Map // slot -> true: the slots that submitted

	// The first block of slot 0 waits (after its ordered part) for slot
	// 1's first block to start: it does only when another goroutine
	// submits slot 1's blocks.
	rendezvous     chan struct{}
	rendezvousOnce sync.Once
	concurrent     bool
	alone          bool          // one goroutine submits every slot (the inline path): no rendezvous
	window         time.Duration // the engine's SetTurnWindow
}

func newOrderedProc(samples int) *orderedProc {
	p := &orderedProc{samples: samples, failAt: -1, panicAt: -1, rendezvous: make(chan struct{})}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *orderedProc) Prepare() error     { return nil }
func (p *orderedProc) OutputSamples() int { return p.samples }
func (p *orderedProc) Close() error       { return nil }

func (p *orderedProc) Ticket() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.next++
	return p.next - 1
}

func (p *orderedProc) waitTurn(t uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.turn != t {
		p.cond.Wait()
	}
}

func (p *orderedProc) pass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.turn++
	p.cond.Broadcast()
}

func (p *orderedProc) SetTurnWindow(window time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.window = window
}

func (p *orderedProc) SkipTicket(t uint64) {
	p.waitTurn(t)
	p.mu.Lock()
	p.skipped++
	p.mu.Unlock()
	p.pass()
}

func (p *orderedProc) Process(slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	return p.ProcessTicket(p.Ticket(), slot, s, in, records, out, out8)
}

func (p *orderedProc) ProcessTicket(t uint64, slot int, s backend.Stream, in uintptr, records int, out, out8 uintptr) error {
	p.waitTurn(t)
	p.goroutines.Store(slot, true)
	first := int64(hostSlice[uint16](in, 1)[0]) / 16 // rawValue(record, 0) = record*16
	p.mu.Lock()
	block := len(p.seen)
	p.seen = append(p.seen, first)
	p.mu.Unlock()
	if block == p.panicAt {
		defer p.pass() // a panicking processor still gives its turn up
		panic(fmt.Sprintf("orderedProc: panic at block %d", block))
	}
	p.pass()
	switch {
	case slot == 1:
		p.rendezvousOnce.Do(func() { close(p.rendezvous) })
	case slot == 0 && block == 0 && !p.alone:
		select {
		case <-p.rendezvous:
			p.concurrent = true
		case <-time.After(2 * time.Second):
		}
	}
	if block == p.failAt {
		return fmt.Errorf("orderedProc: failing block %d", block)
	}
	hs := s.(backend.HostStream)
	n := records * p.samples
	return hs.Enqueue(func() { // the CPU backend runs it at once, on this goroutine
		src, dst, dst8 := hostSlice[uint16](in, n), hostSlice[float32](out, n), hostSlice[int8](out8, n)
		for i, v := range src {
			dst[i] = float32(v)
			dst8[i] = int8(v % 128)
		}
	})
}

var _ engine.OrderedProcessor = (*orderedProc)(nil)

// TestSlotSubmitters: with several slots and an OrderedProcessor, each
// slot's blocks are submitted from a goroutine of its own; the processor's
// ordered parts still see the blocks in acquisition order, the formatted
// volume is the same, and a failing or panicking block fails the run
// without a hang (every later ticket is given up).
func TestSlotSubmitters(t *testing.T) {
	tests := []struct {
		name            string
		slots           int
		failAt, panicAt int
		wantErr         string
	}{
		{"one slot: the process loop submits, or the acquire loop inline", 1, -1, -1, ""},
		{"one slot, a failing block", 1, 4, -1, "orderedProc: failing block 4"},
		{"two slots", 2, -1, -1, ""},
		{"three slots", 3, -1, -1, ""},
		{"four slots", 4, -1, -1, ""},
		{"a failing block", 3, 7, -1, "orderedProc: failing block 7"},
		{"a panicking block", 2, -1, 5, "orderedProc: panic at block 5"},
	}
	// Each case on both paths (the submitters format on the direct path,
	// a format loop does with the stages between), with the stages
	// parking at once and polling first (internal/spin): the same blocks,
	// order and values every way.
	for _, tc := range tests {
		for _, path := range []string{"direct", "stages", "inline"} {
			for _, window := range []string{"0", "50"} {
				t.Run(tc.name+"/"+path+"/"+spin.Env+"="+window, func(t *testing.T) {
					t.Setenv(engine.SlotPathEnv, path)
					t.Setenv(spin.Env, window)
					slotSubmittersCase(t, path, tc.slots, tc.failAt, tc.panicAt, tc.wantErr)
				})
			}
		}
	}
}

// slotSubmittersCase is one case of TestSlotSubmitters.
func slotSubmittersCase(t *testing.T, path string, slots, failAt, panicAt int, wantErr string) {
	scan := raster{AscansPerBscan: 4, BscansPerVolume: 5, Volumes: 6}
	const samples, rpb = 8, 3
	proc := newOrderedProc(samples)
	proc.failAt, proc.panicAt, proc.alone = failAt, panicAt, path == "inline" || slots == 1
	e, ep := orderedEngine(t, proc, scan, engine.Config{RecordsPerBlock: rpb, BlocksToAllocate: 6, PreloadCount: 3, Slots: slots})
	d := startDrain(e)
	require.NoError(t, e.Start())
	err := waitOr(t, e, 30*time.Second, "the run hung")
	d.wait(t)
	require.Equal(t, slots > 1 && path == "direct", e.DirectPath(), "the path the session took")
	require.Equal(t, path == "inline", e.InlinePath(), "the path the session took (one slot too)")
	blocks := int((scan.RecordsPerVolume()*int64(scan.Volumes) + rpb - 1) / rpb)
	proc.mu.Lock()
	seen, skipped := slices.Clone(proc.seen), proc.skipped
	proc.mu.Unlock()
	for i := 1; i < len(seen); i++ {
		require.Equal(t, seen[i-1]+rpb, seen[i], "ordered parts out of block order at %d: %v", i, seen)
	}
	if wantErr != "" {
		require.Error(t, err)
		require.ErrorContains(t, err, wantErr)
		require.Positive(t, e.Status().BlocksDropped)
		require.LessOrEqual(t, len(seen)+skipped, blocks)
		return
	}
	require.NoError(t, err)
	st := e.Status()
	require.GreaterOrEqual(t, len(seen), blocks)
	require.Equal(t, st.BlocksAcquired, int64(len(seen)), "every block processed once")
	require.Zero(t, skipped)
	require.Equal(t, st.BlocksAcquired, st.BlocksFormatted)
	require.Zero(t, st.BlocksDropped)
	n := scan.BscansPerVolume * scan.AscansPerBscan * samples
	got := hostSlice[float32](ep.Tensor().Ptr(), n)
	for b := range scan.BscansPerVolume {
		for a := range scan.AscansPerBscan {
			for s := range samples {
				want := expected(scan, scan.Volumes-1, b, a, s)
				assert.Equal(t, float32(want), got[(b*scan.AscansPerBscan+a)*samples+s], "bscan %d ascan %d sample %d", b, a, s)
			}
		}
	}
	used := 0
	proc.goroutines.Range(func(any, any) bool { used++; return true })
	require.Equal(t, slots, used, "every slot's stream processed blocks")
	require.Equal(t, slots > 1 && path != "inline", proc.concurrent, "slot 1's blocks submitted while slot 0's first waited")
}

// TestSlotPathDefault: without VORTEXGO_SLOT_PATH the engine picks the
// path by the blocks it has per slot: the acquire loop submits every block
// itself (inline) with fewer than 8 a slot, where a block's round trip sets
// the rate; the slots' submitters take them (direct) from 8 a slot, where
// the submissions do, if Go has two Ps for each stage goroutine (procs:
// GOMAXPROCS). Either way every volume arrives whole.
func TestSlotPathDefault(t *testing.T) {
	t.Setenv(engine.DeviceBlocksEnv, "") // the pool as allocated: this test asserts its size
	tests := []struct {
		blocks, preload, slots, procs int
		want                          string
	}{
		{4, 2, 2, 16, "inline"}, // vortex's defaults
		{8, 4, 2, 16, "inline"},
		{15, 4, 2, 16, "inline"},
		{16, 8, 2, 16, "direct"},
		{32, 16, 2, 16, "direct"},
		{16, 8, 3, 16, "inline"},
		{24, 8, 3, 16, "direct"},
		{4, 2, 4, 16, "inline"},
		{4, 2, 1, 16, "stages"}, // one slot: the process loop, unless asked (oneSlotInline)
		{32, 16, 1, 16, "stages"},
		{32, 16, 2, 10, "direct"}, // two Ps for each of 5 goroutines
		{32, 16, 2, 9, "inline"},
		{32, 16, 2, 2, "inline"}, // the CI machine
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%d/%d/%d slots/%d Ps", tc.blocks, tc.preload, tc.slots, tc.procs), func(t *testing.T) {
			t.Setenv(engine.SlotPathEnv, "")
			withProcs(t, tc.procs)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2}
			proc := newOrderedProc(8)
			proc.alone = tc.want != "direct" // one goroutine submits every slot
			e, ep := orderedEngine(t, proc, scan, engine.Config{RecordsPerBlock: 2, BlocksToAllocate: tc.blocks, PreloadCount: tc.preload, Slots: tc.slots})
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.True(t, e.WaitFor(30*time.Second), "the run ends")
			require.NoError(t, e.Wait())
			d.wait(t)
			require.Equal(t, tc.want == "inline", e.InlinePath(), "inline path")
			require.Equal(t, tc.want == "direct", e.DirectPath(), "direct path")
			switch tc.want {
			case "inline":
				require.Equal(t, 3, e.StageGoroutines(), "acquire, format, recycle")
			case "stages":
				require.Equal(t, 4, e.StageGoroutines(), "and the process loop")
			default:
				require.Equal(t, 3+tc.slots, e.StageGoroutines(), "and a submitter per slot")
			}
			st := e.Status()
			require.Positive(t, st.BlocksFormatted)
			require.Equal(t, st.BlocksAcquired, st.BlocksFormatted, "every block formatted: %+v", st)
			require.Equal(t, int64(scan.Volumes), st.Volumes)
			got := hostSlice[float32](ep.Tensor().Ptr(), 4*3*8)
			for b := range 3 {
				for a := range 4 {
					assert.Equal(t, float32(expected(scan, 1, b, a, 0)), got[(b*4+a)*8], "bscan %d ascan %d", b, a)
				}
			}
		})
	}
}

// withProcs sets GOMAXPROCS to n for the test (no test of the package runs
// in parallel with one that sets the environment).
func withProcs(t *testing.T, n int) {
	t.Helper()
	old := runtime.GOMAXPROCS(n)
	t.Cleanup(func() { runtime.GOMAXPROCS(old) })
}

// TestPollWindow: the recycle loop polls for its next block for
// recycleSpin, the acquire loop the pool for poolSpin, on CUDA when Go has
// two Ps per stage goroutine (16 vCPUs and the inline path's 3 or 2 slots'
// submitters' 5 do); they park at once with fewer, and on the CPU
// backend; VORTEXGO_STAGE_SPIN's window, when set, is theirs too.
func TestPollWindow(t *testing.T) {
	require.Equal(t, 100*time.Microsecond, engine.RecycleSpinDefault)
	require.Equal(t, 30*time.Microsecond, engine.PoolSpinDefault)
	tests := []struct {
		kind              backend.Kind
		stages            time.Duration
		procs, goroutines int
		polls             bool // the default, else want
		want              time.Duration
	}{
		{backend.CUDA, 0, 16, 3, true, 0},
		{backend.CUDA, 0, 16, 5, true, 0},
		{backend.CUDA, 0, 16, 8, true, 0},
		{backend.CUDA, 0, 16, 9, false, 0},
		{backend.CUDA, 0, 6, 3, true, 0},
		{backend.CUDA, 0, 5, 3, false, 0},
		{backend.CUDA, 0, 2, 3, false, 0}, // the CI machine
		{backend.CPU, 0, 16, 3, false, 0},
		{backend.CUDA, 30 * time.Microsecond, 2, 3, false, 30 * time.Microsecond},
		{backend.CPU, 45 * time.Microsecond, 16, 3, false, 45 * time.Microsecond},
	}
	for _, def := range []time.Duration{engine.RecycleSpinDefault, engine.PoolSpinDefault} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%v/%s/%v/%d procs/%d goroutines", def, tc.kind, tc.stages, tc.procs, tc.goroutines), func(t *testing.T) {
				want := tc.want
				if tc.polls {
					want = def
				}
				assert.Equal(t, want, engine.PollWindow(def, tc.kind, tc.stages, tc.procs, tc.goroutines))
			})
		}
	}
}

// TestStageSpinEnvs: VORTEXGO_RECYCLE_SPIN sets the recycle loop's window,
// VORTEXGO_POOL_SPIN the acquire loop's on the pool, over the default and
// VORTEXGO_STAGE_SPIN, read at each Start; every block still arrives; a
// bad value fails Start naming the variable (TestStageEnvRefused).
func TestStageSpinEnvs(t *testing.T) {
	tests := []struct {
		env, value, stages string
		recycle, pool      time.Duration
	}{
		{spin.RecycleEnv, "", "", 0, 0}, // the CPU backend's defaults
		{spin.RecycleEnv, "0", "", 0, 0},
		{spin.RecycleEnv, "250", "", 250 * time.Microsecond, 0},
		{spin.PoolEnv, "40", "", 0, 40 * time.Microsecond},
		{spin.PoolEnv, "0", "20", 20 * time.Microsecond, 0},
		{spin.PoolEnv, "", "20", 20 * time.Microsecond, 20 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.env+"="+tc.value+",stages="+tc.stages, func(t *testing.T) {
			t.Setenv(tc.env, tc.value)
			t.Setenv(spin.Env, tc.stages)
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 3, Volumes: 2}
			proc := newOrderedProc(8)
			proc.alone = true
			e, _ := orderedEngine(t, proc, scan, engine.Config{RecordsPerBlock: 2, BlocksToAllocate: 4, PreloadCount: 2, Slots: 2})
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.True(t, e.WaitFor(30*time.Second), "the run ends")
			require.NoError(t, e.Wait())
			d.wait(t)
			assert.Equal(t, tc.recycle, e.RecycleSpin())
			assert.Equal(t, tc.pool, e.PoolSpin())
			st := e.Status()
			require.Equal(t, int64(scan.Volumes), st.Volumes)
			require.Zero(t, st.InFlight)
		})
	}
}

// TestStageEnvRefused: a misspelt VORTEXGO_STAGE_SPIN, VORTEXGO_SLOT_PATH
// (or another stage variable) fails Start with an error naming it, before any stage runs; the next
// Start with a good value runs.
func TestStageEnvRefused(t *testing.T) {
	tests := []struct{ env, bad, good string }{
		{spin.Env, "off", "20"},
		{engine.SlotPathEnv, "fast", "stages"},
		{engine.SlotPathEnv, "Direct", "direct"},
		{engine.SlotPathEnv, "inlined", "inline"},
		{spin.RecycleEnv, "fast", "40"},
		{spin.RecycleEnv, "-1", "0"},
		{spin.PoolEnv, "30us", "30"},
		{spin.PoolEnv, "20000", "0"},
		{engine.RemoteLanesEnv, "slots", "slot"},
		{engine.RemoteLanesEnv, "Device", "device"},
	}
	for _, tc := range tests {
		t.Run(tc.env+"="+tc.bad, func(t *testing.T) {
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}
			proc := newOrderedProc(8)
			proc.alone = tc.env != engine.SlotPathEnv || tc.good == "inline" // unset: 4 blocks on 2 slots go inline
			e, _ := orderedEngine(t, proc, scan, engine.Config{RecordsPerBlock: 4, BlocksToAllocate: 4, PreloadCount: 2, Slots: 2})
			t.Setenv(tc.env, tc.bad)
			err := e.Start()
			require.Error(t, err)
			require.ErrorContains(t, err, tc.env)
			require.ErrorContains(t, err, fmt.Sprintf("%q", tc.bad))
			t.Setenv(tc.env, tc.good)
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			d.wait(t)
			st := e.Status()
			require.Positive(t, st.BlocksFormatted)
			require.Equal(t, st.BlocksAcquired, st.BlocksFormatted)
			require.Zero(t, st.BlocksDropped)
		})
	}
}

// orderedEngine is a prepared engine of cfg's sizes over proc: a fake
// acquisition, proc, a format planner of scan's raster and a host stack
// endpoint of proc's samples (returned), scan queued. Closed by the test.
func orderedEngine(t *testing.T, proc *orderedProc, scan raster, cfg engine.Config) (*engine.Engine, *endpoint.StackTensorEndpoint) {
	t.Helper()
	ep, planner := floatStack(t, scan, proc.samples)
	cfg.AddAcquisition(newFakeAcq(proc.samples), proc)
	cfg.AddProcessor(proc, planner)
	cfg.AddFormatter(planner, ep)
	e, err := engine.New(cfg, cpu.Default())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, e.Close()) })
	queueRaster(t, e, scan)
	require.NoError(t, e.Prepare())
	return e, ep
}

// TestTurnWindow: each Start sets the ordered processors' turn window:
// polling with many blocks per slot where Go has two Ps per stage
// goroutine (procs: GOMAXPROCS), parking at once with vortex's few or
// fewer Ps,
// and VORTEXGO_TURN_SPIN's value in place of either; a misspelt value
// fails Start naming the variable.
func TestTurnWindow(t *testing.T) {
	t.Setenv(engine.DeviceBlocksEnv, "") // the pool as allocated: this test asserts its size
	tests := []struct {
		name                 string
		blocks, slots, procs int
		env                  string
		want                 time.Duration
		wantErr              bool
	}{
		{"vortex's 4 blocks on 2 slots park", 4, 2, 16, "", 0, false},
		{"32 blocks on 2 slots poll", 32, 2, 16, "", 30 * time.Microsecond, false},
		{"16 blocks on 2 slots poll", 16, 2, 16, "", 30 * time.Microsecond, false},
		{"16 blocks on 4 slots park", 16, 4, 16, "", 0, false},
		{"32 blocks on 2 slots with 10 Ps poll", 32, 2, 10, "", 30 * time.Microsecond, false},
		{"32 blocks on 2 slots with 9 Ps park", 32, 2, 9, "", 0, false},
		{"32 blocks on 2 slots with 2 Ps park", 32, 2, 2, "", 0, false},
		{"the environment's window", 4, 2, 2, "75", 75 * time.Microsecond, false},
		{"the environment's 0", 32, 2, 16, "0", 0, false},
		{"misspelt", 32, 2, 16, "fast", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("VORTEXGO_TURN_SPIN", tc.env)
			withProcs(t, tc.procs)
			proc := newOrderedProc(8)
			proc.window = -1  // not set yet
			proc.alone = true // no test of concurrency here: either path
			scan := raster{AscansPerBscan: 4, BscansPerVolume: 2, Volumes: 1}
			e, _ := orderedEngine(t, proc, scan, engine.Config{RecordsPerBlock: 4, BlocksToAllocate: tc.blocks, PreloadCount: 2, Slots: tc.slots})
			if tc.wantErr {
				err := e.Start()
				require.ErrorContains(t, err, "VORTEXGO_TURN_SPIN")
				return
			}
			d := startDrain(e)
			require.NoError(t, e.Start())
			require.NoError(t, e.Wait())
			d.wait(t)
			proc.mu.Lock()
			defer proc.mu.Unlock()
			require.Equal(t, tc.want, proc.window)
		})
	}
}

// TestSlotPathsStopAndInterrupt: an endless run on slot submitters, by
// either path, ends promptly on a stop or an interrupt; every acquired
// block is formatted or dropped, never lost; the processor's ordered parts
// saw a run of blocks without gaps; and the next session runs clean.
func TestSlotPathsStopAndInterrupt(t *testing.T) {
	for _, path := range []string{"direct", "stages", "inline"} {
		for _, interrupt := range []bool{false, true} {
			for _, slots := range []int{2, 3} {
				t.Run(fmt.Sprintf("%s/interrupt=%v/slots=%d", path, interrupt, slots), func(t *testing.T) {
					t.Setenv(engine.SlotPathEnv, path)
					proc := newOrderedProc(8)
					proc.alone = path == "inline"
					scan := raster{AscansPerBscan: 4, BscansPerVolume: 3} // endless
					e, _ := orderedEngine(t, proc, scan, engine.Config{RecordsPerBlock: 5, BlocksToAllocate: 8, PreloadCount: 4, Slots: slots})
					var ends []int // len(proc.seen) at each session's end
					for session := range 2 {
						d := startDrainAfter(e)
						require.NoError(t, e.Start())
						waitVolumes(t, e, 4)
						e.Shutdown(interrupt)
						require.True(t, e.WaitFor(10*time.Second), "session %d ends after the shutdown", session)
						require.NoError(t, e.Wait())
						d.wait(t)
						st := e.Status()
						require.Positive(t, st.BlocksFormatted)
						require.Equal(t, st.BlocksAcquired, st.BlocksFormatted+st.BlocksDropped, "session %d: %+v", session, st)
						require.Zero(t, st.InFlight, "every block back in the pool")
						require.Equal(t, slots > 1 && path == "direct", e.DirectPath())
						require.Equal(t, slots > 1 && path == "inline", e.InlinePath())
						proc.mu.Lock()
						ends = append(ends, len(proc.seen))
						proc.mu.Unlock()
						e.ScanQueue().Reset()
						queueRaster(t, e, scan)
					}
					proc.mu.Lock()
					defer proc.mu.Unlock()
					require.Zero(t, proc.skipped)
					// Within a session, consecutive blocks; between sessions the
					// acquisition's records go on past the blocks an interrupt dropped.
					for i := 1; i < len(proc.seen); i++ {
						// The first record is read back from a uint16 raw value
						// (rawValue: record x 16), so it counts modulo 4096: an
						// endless session on a fast machine goes past it.
						if i != ends[0] {
							require.Equal(t, (proc.seen[i-1]+5)%4096, proc.seen[i], "ordered parts out of block order at %d: %v", i, proc.seen)
						}
					}
				})
			}
		}
	}
}
