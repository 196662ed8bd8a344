package engine

import (
	"time"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// HostBufferBlocks counts the host sets of the pool (pool.go) that hold a
// pinned buffer for acquisition a (tests of what the pool allocates).
func (e *Engine) HostBufferBlocks(a int) int {
	n := 0
	for _, h := range e.hostSets {
		if a < len(h.bufs) && h.bufs[a] != nil {
			n++
		}
	}
	return n
}

// PoolBlocks is poolBlocks.
var PoolBlocks = poolBlocks

// DeepBlocks is deepBlocks.
const DeepBlocks = deepBlocks

// SlotStreams returns the engine's processing streams (BlockData.Stream
// is one of them).
func (e *Engine) SlotStreams() []backend.Stream { return e.slots }

// DirectPath reports whether the current session routes blocks on the
// direct path (session.direct).
func (e *Engine) DirectPath() bool { return e.sess().direct }

// SessionLanes is how many submitters the current session runs: the
// slots', then each remote device's lane (0 without submitters).
func (e *Engine) SessionLanes() int { return len(e.sess().work) }

// InlinePath reports whether the current session's acquire loop submits
// the blocks itself (SlotPathEnv=inline).
func (e *Engine) InlinePath() bool { return e.sess().inline }

// RecycleSpin returns the current session's recycle loop window.
func (e *Engine) RecycleSpin() time.Duration { return e.sess().recycleSpin }

// PoolSpin returns the current session's pool window (the acquire loop's).
func (e *Engine) PoolSpin() time.Duration { return e.sess().freeWait.Window() }

// PollWindow is pollWindow; RecycleSpinDefault and PoolSpinDefault are its
// defaults for the recycle loop and the pool.
var PollWindow = pollWindow

// DefaultSlotStreams is defaultSlotStreams.
var DefaultSlotStreams = defaultSlotStreams

// DefaultActiveSlots is defaultActiveSlots.
var DefaultActiveSlots = defaultActiveSlots

const (
	RecycleSpinDefault = recycleSpin
	PoolSpinDefault    = poolSpin
)

// StageGoroutines is the current session's stageGoroutines.
func (e *Engine) StageGoroutines() int { return e.sess().stageGoroutines() }
