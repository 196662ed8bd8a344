package io

import (
	"errors"
	"fmt"

	"github.com/vortexgo/vortexgo/gosrc/backend"
	"github.com/vortexgo/vortexgo/gosrc/driver/machdsp"
)

// vortex's standalone IO calls on a MachDSPIO (bind/io.hpp's setup_io).

// PrepareStandalone is vortex's prepare outside an engine: the stream is
// reset.
func (m *MachDSPIO) PrepareStandalone() error {
	if err := standalone(&m.claim, "MachDSPIO", "prepare"); err != nil {
		return err
	}
	m.mu.Lock()
	m.needReset, m.stopped = false, false
	m.mu.Unlock()
	return m.named(m.dev.StreamReset())
}

// NextStandalone is vortex's next(id, count, streams) outside an engine:
// count must be exactly samples_per_block (vortex's check); the outputs'
// streams are converted and sent. The servo's and the line's errors stop
// the stream when StopOnError is set, as vortex's; a bad count or stream
// does not (vortex catches only the servo's exceptions there).
func (m *MachDSPIO) NextStandalone(id int64, count int, s *BlockStreams) (int, error) {
	if err := standalone(&m.claim, "MachDSPIO", "next"); err != nil {
		return 0, err
	}
	m.blockMu.Lock()
	defer m.blockMu.Unlock()
	c := &m.cfg
	if count != c.SamplesPerBlock {
		return 0, backend.Invalidf("block is not exactly equal to the configured size: %d != %d", count, c.SamplesPerBlock)
	}
	if count%c.SampleDivisor != 0 {
		return 0, backend.Invalidf("block size (%d) is not evenly divisible by divisor (%d): %d != 0", count,
			c.SampleDivisor, count%c.SampleDivisor)
	}
	err := m.process(count, s)
	if err == nil {
		return count, nil
	}
	var de *machdsp.Error
	if errors.As(err, &de) {
		if m.log != nil {
			m.log.Error(fmt.Sprintf("error during I/O for block %d: %v", id, err))
		}
		if c.StopOnError {
			_ = m.Stop()
		}
		if cerr := m.claim.Err("io: MachDSPIO.next"); cerr != nil {
			return 0, cerr
		}
	}
	return 0, err
}
