package alazar

import (
	"fmt"
	"math"
)

// The galvo DAC (vortex's info_t::dac_t and the DAC calls of board_t,
// which vortex's AlazarIO drives). Names and signatures are from the
// ATS-SDK's public header AlazarGalvo.h (ATS-SDK 7.x); behaviour and
// messages follow vortex's driver.

// DACSlots is the number of pattern memory slots (GALVO_PATTERN_SLOT_1..5).
const DACSlots = 5

// DAC describes the board's galvo DAC (vortex's info_t::dac_t).
type DAC struct {
	// SequenceCount is how many sequences the sequence memory holds.
	SequenceCount int
	// SlotSizes maps each pattern slot (from 1) to its size in words.
	SlotSizes map[int]int
	// VoltsPerLSB and ZeroPoint convert volts to the DAC's offset-binary
	// codes: code = volts/VoltsPerLSB + ZeroPoint (vortex's values).
	VoltsPerLSB float64
	ZeroPoint   uint16
}

// readDAC queries the DAC as vortex's board_t constructor does (absent
// on boards and libraries without one: no sequences, no slots).
func readDAC(h uintptr) DAC {
	d := DAC{SlotSizes: map[int]int{}, VoltsPerLSB: 5.0 / 32767, ZeroPoint: 32768}
	if n, rc := galvoSequenceCount(h); rc == ApiSuccess {
		d.SequenceCount = int(n)
	}
	for slot := 1; slot <= DACSlots; slot++ {
		if n, rc := galvoSlotSize(h, slot); rc == ApiSuccess {
			d.SlotSizes[slot] = int(n)
		}
	}
	return d
}

// StartDAC starts playing the sequences (from sequence 0).
func (b *Board) StartDAC() error {
	return check(galvoPlaybackStart(b.h), "failed to start DAC")
}

// StopDAC stops playback.
func (b *Board) StopDAC() error {
	return check(galvoPlaybackStop(b.h), "failed to stop DAC")
}

// ConfigureDACMode sets the A-lines per B-scan (0: the custom mode vortex
// uses) and the B-scan mode.
func (b *Board) ConfigureDACMode(ascansPerBscan int32, bscanMode bool) error {
	mode := 0
	if ascansPerBscan == 0 {
		mode = 1 // GALVO_ALINES_PER_BSCAN_MODE_CUSTOM
	}
	if err := check(galvoAlinesPerBscan(b.h, mode, ascansPerBscan), "failed to set DAC ascans per bscans to %d", ascansPerBscan); err != nil {
		return err
	}
	on := 0
	if bscanMode {
		on = 1
	}
	return check(galvoBscanMode(b.h, on), "failed to set DAC bscan mode to %v", bscanMode)
}

// ConfigureDACSequence makes sequence seq play slot's words start..end
// (inclusive) repetitions times (0: forever).
func (b *Board) ConfigureDACSequence(seq, slot int, repetitions, start, end int32) error {
	if seq < 0 || seq > math.MaxInt32 {
		return fmt.Errorf("failed to configure DAC sequence %d: out of range", seq)
	}
	return check(galvoSequenceWrite(b.h, int32(seq), slot, repetitions, start, end),
		"failed to configure DAC sequence %d for slot %d: %d -> %d, repeat %dx", seq, slot, start, end, repetitions)
}

// WriteDACSlot writes data (x in the low 16 bits, y in the high) into
// slot at word offset.
func (b *Board) WriteDACSlot(slot int, data []uint32, offset int32) error {
	if len(data) > math.MaxInt32 {
		return fmt.Errorf("failed to write DAC pattern slot %d with %d samples: too many", slot, len(data))
	}
	return check(galvoSlotWrite(b.h, slot, data, offset), "failed to write DAC pattern slot %d with %d samples", slot, len(data))
}

// SetDACParkPosition sets where the outputs rest when not playing (codes).
func (b *Board) SetDACParkPosition(x, y uint16) error {
	return check(galvoSetPark(b.h, x, y), "failed to set DAC park position to x=%d, y=%d", x, y)
}
