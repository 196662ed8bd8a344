//go:build unix

package acquire

import (
	"errors"
	"fmt"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/vortexgo/vortexgo/gosrc/driver/alazar"
)

// AcquireAlazarClock is vortex's engine.acquire_alazar_clock: one record
// of a swept source's k-clock, digitized on clockChannel at the board's
// highest rate over the sweep's active part (dutyCycle of each of
// triggersPerSecond triggers), with cfg's device, trigger and the input
// settings of its first input (vortex resizes the inputs to one, keeping
// those). It returns the rate and the record's samples.
func AcquireAlazarClock(cfg AlazarConfig, dutyCycle float64, triggersPerSecond int, clockChannel alazar.Channel) (int, []uint16, error) {
	if triggersPerSecond <= 0 || !(dutyCycle > 0 && dutyCycle <= 1) {
		return 0, nil, fmt.Errorf("acquire_alazar_clock: source with %d triggers/s and duty cycle %v, expected > 0 and in (0, 1]",
			triggersPerSecond, dutyCycle)
	}
	b, err := alazar.Open(cfg.SystemIndex, cfg.BoardIndex)
	if err != nil {
		return 0, nil, err
	}
	info := b.Info()
	rate := info.MaxSamplingRate()
	perSweep := dutyCycle * float64(rate) / float64(triggersPerSecond)
	cfg.SamplesPerRecord = int(info.SmallestAlignedSamplesPerRecord(perSweep))
	cfg.RecordsPerBlock = 1
	cfg.Clock = AlazarClock{Kind: AlazarInternalClock, SamplesPerSecond: rate}
	in := AlazarInput{Channel: clockChannel, RangeMillivolts: 400, ImpedanceOhms: 50, Coupling: alazar.CouplingDC}
	if len(cfg.Inputs) > 0 {
		in = cfg.Inputs[0]
		in.Channel = clockChannel
	}
	cfg.Inputs = []AlazarInput{in}
	cfg.Options = nil
	if cfg.AcquireTimeout <= 0 {
		cfg.AcquireTimeout = time.Second
	}
	a, err := NewAlazarAcquisition(cfg)
	if err != nil {
		_ = b.Close()
		return 0, nil, err
	}
	defer a.Close()
	_ = b.Close() // the acquisition opened its own handle of the board
	// The board DMAs into memory outside the Go heap, as into the engine's
	// pinned blocks.
	n := cfg.SamplesPerRecord
	mem, err := unix.Mmap(-1, 0, 2*n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return 0, nil, fmt.Errorf("acquire_alazar_clock: %w", err)
	}
	defer unix.Munmap(mem)
	buf := unsafe.Slice((*uint16)(unsafe.Pointer(&mem[0])), n)
	if err := a.Start(); err != nil {
		return 0, nil, err
	}
	defer a.Stop()
	if err := a.Post(buf); err != nil {
		return 0, nil, err
	}
	got, err := a.Fill(buf, 1)
	if err != nil || got != 1 {
		return 0, nil, errors.Join(errors.New("failed to acquire clock"), err)
	}
	return rate, append([]uint16(nil), buf...), nil
}
