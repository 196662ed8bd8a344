package engine

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/internal/dl"
)

// SlotStreamsEnv is the environment variable that sets how many streams
// the processor slots run on, on each device: slot i runs on stream i mod
// n. 0 gives each slot its own stream; unset, the engine picks
// (defaultSlotStreams). Read at each Prepare from the live environment.
const SlotStreamsEnv = "VORTEXGO_SLOT_STREAMS"

// Slots share streams on a GPU from sharedSlotBytes of raw spectra a block
// (1024 records of 1024 samples), sharedSlotStreams streams for all of
// them. Measured on an H200 VM (issue 29, docs/bench.md "Four slots on
// two streams", three calls of two interleaved rounds): with 4 slots on 2
// streams a block took 3-9% less time at 1024 to 8192 records (8 / 4 and
// 32 / 16 blocks, 1024 and 2048 samples), at the copy ceiling where 4 slots
// had been the slowest configurations (0.92-0.95 of it); and 2-44% more at
// 256 and 512 records. A stream of kernels beside the copy stream slows
// the copies even when the GPU is mostly idle (docs/bench.md, "Where the
// missing percent goes", item 10): with large blocks the copy is the
// bound and two streams of processing keep up with it; with small ones a
// block's round trip is, and a slot that waits behind another slot's
// graph on a shared stream lengthens it.
const (
	sharedSlotBytes   = 2 << 20
	sharedSlotStreams = 2
)

// defaultSlotStreams is how many streams slots slots run on without
// SlotStreamsEnv, for blocks of blockBytes bytes of raw spectra on a
// device of this kind: one a slot, but sharedSlotStreams on a GPU from
// sharedSlotBytes a block. The CPU backend runs each stream's work on a
// goroutine of its own: there a shared stream would halve the slots'
// parallelism for nothing.
func defaultSlotStreams(kind backend.Kind, slots, blockBytes int) int {
	if kind == backend.CUDA && slots > sharedSlotStreams && blockBytes >= sharedSlotBytes {
		return sharedSlotStreams
	}
	return slots
}

// slotStreamsAsked reads SlotStreamsEnv: the count it asks for, -1 when
// unset. A value that is not a count is an error naming the variable.
func slotStreamsAsked() (int, error) {
	return countAsked(SlotStreamsEnv, "streams", "one a slot")
}

// slotStreams is how many streams slots slots run on: asked
// (slotStreamsAsked) up to slots, 0 one a slot, -1 defaultSlotStreams.
func slotStreams(asked int, kind backend.Kind, slots, blockBytes int) int {
	return upToSlots(asked, slots, defaultSlotStreams(kind, slots, blockBytes))
}

// countAsked reads a count of things (streams, slots) from the environment
// variable env: -1 when unset. A value that is not a count >= 0 is an error
// naming the variable and what 0 means (zero).
func countAsked(env, things, zero string) (int, error) {
	v, _ := dl.Getenv(env)
	if v == "" {
		return -1, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s=%q in the environment, expected a count of %s >= 0 (0: %s; unset: the engine picks)", env, v, things, zero)
	}
	return n, nil
}

// choiceAsked reads one of values from the environment variable env: ""
// when unset. Another value is an error naming the variable, the values and
// what unset means (unset).
func choiceAsked(env, unset string, values ...string) (string, error) {
	v, _ := dl.Getenv(env)
	if v == "" || slices.Contains(values, v) {
		return v, nil
	}
	list := strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
	return "", fmt.Errorf("%s=%q in the environment, expected %s (unset: %s)", env, v, list, unset)
}

// upToSlots is a count asked for (countAsked) up to slots: 0 and counts
// above slots give slots, -1 (unset) def.
func upToSlots(asked, slots, def int) int {
	switch {
	case asked < 0:
		return def
	case asked == 0 || asked > slots:
		return slots
	}
	return asked
}

// newSlotStreams makes streams streams on d (0 < streams <= slots) and
// returns one per slot, slot i's being stream i mod streams. On an error
// the streams made are closed.
func newSlotStreams(d backend.Device, slots, streams int) ([]backend.Stream, error) {
	out := make([]backend.Stream, 0, slots)
	for i := range slots {
		if i >= streams {
			out = append(out, out[i%streams])
			continue
		}
		s, err := d.NewStream(0)
		if err != nil {
			return nil, errors.Join(err, closeSlotStreams(out))
		}
		out = append(out, s)
	}
	return out, nil
}

// ActiveSlotsEnv is the environment variable that sets how many of the
// processor slots the engine cycles its blocks through (the first n of
// Config.Slots): 0 uses them all; unset, the engine picks
// (defaultActiveSlots). Read at each Prepare from the live environment.
const ActiveSlotsEnv = "VORTEXGO_ACTIVE_SLOTS"

// Below sharedSlotBytes of raw spectra a block, on a GPU, the engine cycles
// its blocks through at most smallBlockSlots of the slots. At such sizes a
// block's processing is a few microseconds of device time against its copy,
// so slots beyond two overlap nothing more on the device, and each one is
// paid on the host: its own submitter thread from 8 blocks a slot, one more
// goroutine the rolling average's turn passes through, its own stream. The
// processors' results are the same (the blocks keep their order). Measured
// on an H200 VM, three sweeps of bench/bench_blocks.py (sessions 46-48,
// docs/bench.md), 2 slots against 4 as fractions of the copy ceiling: at
// 32 / 16 blocks 0.81-0.91 against 0.53-0.68 at 256 x 1024, 0.96-0.98
// against 0.89-0.92 at 512 x 1024, 0.93-0.99 against 0.87-0.92 at 256 x
// 2048; at 8 / 4 0.78-0.88 against 0.72-0.80, 0.95-0.99 against 0.94-0.96
// and 0.97-0.99 against 0.95-0.96; at 4 / 2 level (0.73-0.82 against
// 0.75-0.83 at 256 x 1024). From 2 MiB every slot is used, more than two
// on two streams (defaultSlotStreams).
const smallBlockSlots = 2

// defaultActiveSlots is how many of slots slots the engine uses without
// ActiveSlotsEnv, for blocks of blockBytes bytes of raw spectra on a
// device of this kind: smallBlockSlots on a GPU below sharedSlotBytes,
// else every slot. The CPU backend runs each slot's work on a goroutine
// of its own, its parallelism.
func defaultActiveSlots(kind backend.Kind, slots, blockBytes int) int {
	if kind == backend.CUDA && slots > smallBlockSlots && blockBytes < sharedSlotBytes {
		return smallBlockSlots
	}
	return slots
}

// activeSlotsAsked reads ActiveSlotsEnv: the count it asks for, -1 when
// unset. A value that is not a count is an error naming the variable.
func activeSlotsAsked() (int, error) {
	return countAsked(ActiveSlotsEnv, "slots", "every slot")
}

// activeSlots is how many of slots slots the engine uses: asked
// (activeSlotsAsked) up to slots, 0 every slot, -1 defaultActiveSlots.
func activeSlots(asked int, kind backend.Kind, slots, blockBytes int) int {
	return upToSlots(asked, slots, defaultActiveSlots(kind, slots, blockBytes))
}

// closeSlotStreams closes each distinct stream of slots once (slots may
// share streams: newSlotStreams).
func closeSlotStreams(slots []backend.Stream) error {
	var errs []error
	closed := make(map[backend.Stream]bool, len(slots))
	for _, s := range slots {
		if s != nil && !closed[s] {
			closed[s] = true
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}

// blockRawBytes is the bytes of raw spectra a block holds, over every
// acquisition.
func (e *Engine) blockRawBytes() int {
	n := 0
	for i := range e.acqs {
		n += e.cfg.RecordsPerBlock * e.acqs[i].raw * 2
	}
	return n
}
