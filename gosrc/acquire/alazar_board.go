package acquire

import (
	"fmt"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// The ATS-SDK hands every opener of a board the same handle, and a board
// holds one configuration (clock, trigger, inputs, record size). Two
// AlazarAcquisitions of one board in a process (a notebook cell re-run
// builds the new one before the old one is dropped; acquire_alazar_clock
// configures the board for its k-clock record) would otherwise share that
// state silently: the second's configuration would be the first's next
// session's, or reconfigure the board under the first's running DMA.
//
// boardUse records, per board, which acquisition configured it last and
// which one captures now: a capture is refused while another acquisition
// captures on the board (ErrInUse, naming what to stop), and an
// acquisition whose configuration is no longer the board's applies it
// again before its capture. Acquisitions of different boards never meet.
var boardUse = struct {
	sync.Mutex
	by map[boardKey]*boardState
}{by: map[boardKey]*boardState{}}

type boardKey struct{ system, board uint32 }

type boardState struct {
	configured *AlazarAcquisition // whose configuration the board holds
	capturing  *AlazarAcquisition // whose capture is configured (nil: none)
}

func (a *AlazarAcquisition) boardKey() boardKey {
	return boardKey{a.cfg.SystemIndex, a.cfg.BoardIndex}
}

// boardStateOf returns the board's record, made when absent (boardUse held).
func boardStateOf(k boardKey) *boardState {
	st := boardUse.by[k]
	if st == nil {
		st = &boardState{}
		boardUse.by[k] = st
	}
	return st
}

// configured marks a's configuration as the board's (a new acquisition
// applied it).
func (a *AlazarAcquisition) configured() {
	boardUse.Lock()
	boardStateOf(a.boardKey()).configured = a
	boardUse.Unlock()
}

// claimCapture makes a the board's capturing acquisition before it
// configures a capture: refused while another one captures; a's
// configuration is applied again when another acquisition's is the
// board's. It runs under a.mu.
func (a *AlazarAcquisition) claimCapture() error {
	boardUse.Lock()
	defer boardUse.Unlock()
	st := boardStateOf(a.boardKey())
	if o := st.capturing; o != nil && o != a {
		return a.boardBusy(o)
	}
	if st.configured != a {
		if err := a.apply(); err != nil {
			return err
		}
		st.configured = a
	}
	st.capturing = a
	return nil
}

// releaseCapture ends a's capture claim (a stop or a failed configure).
func (a *AlazarAcquisition) releaseCapture() {
	boardUse.Lock()
	if st := boardUse.by[a.boardKey()]; st != nil && st.capturing == a {
		st.capturing = nil
	}
	boardUse.Unlock()
}

// forgetBoard drops a from the board's record when it is closed, so the
// record keeps no closed acquisition alive.
func (a *AlazarAcquisition) forgetBoard() {
	boardUse.Lock()
	if st := boardUse.by[a.boardKey()]; st != nil {
		if st.capturing == a {
			st.capturing = nil
		}
		if st.configured == a {
			st.configured = nil
		}
		if st.capturing == nil && st.configured == nil {
			delete(boardUse.by, a.boardKey())
		}
	}
	boardUse.Unlock()
}

// applyNew configures the board for a new acquisition: refused while
// another acquisition captures on it (the SDK would refuse mid-DMA with
// ApiDmaInProgress, naming neither); a's configuration is the board's after.
func (a *AlazarAcquisition) applyNew() error {
	boardUse.Lock()
	defer boardUse.Unlock()
	st := boardStateOf(a.boardKey())
	if o := st.capturing; o != nil {
		return a.boardBusy(o)
	}
	if err := a.apply(); err != nil {
		if st.configured == nil {
			delete(boardUse.by, a.boardKey())
		}
		return err
	}
	st.configured = a
	return nil
}

// boardBusy is the error of a capture or configuration refused because o
// captures on a's board.
func (a *AlazarAcquisition) boardBusy(o *AlazarAcquisition) error {
	return fmt.Errorf("acquire: %s: board %d-%d is capturing for another %s; stop that one first "+
		"(its engine's stop(), or its stop()), or close it: %w", a.name(), a.cfg.SystemIndex, a.cfg.BoardIndex,
		o.name(), backend.ErrInUse)
}
