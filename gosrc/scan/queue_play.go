package scan

import (
	"fmt"
	"reflect"
	"sync"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// A scan queue, and each scan queued in it, serves one running engine at a
// time: the engine's Generate stage advances a scan's position as it
// plays it, so one scan object played by two engines' queues at once
// moved each other's scan (and a data race on its state killed one of
// them). An engine plays its queue from Start until its Generate stage is
// over (Play ... StopPlaying); meanwhile another engine cannot play the
// queue, and no other queue an engine plays can take one of its scans.
// Outside a run nothing is held: queueing one scan object in several
// queues is fine as long as no two engines play it at once.

// scanPlayers maps each scan an engine plays (active or queued) to the
// queue that holds it.
var scanPlayers = struct {
	mu sync.Mutex
	by map[Streamer]*ScanQueue
}{by: map[Streamer]*ScanQueue{}}

// heldBy tells whether scan can be a key of scanPlayers (every scan of this
// package is a pointer; another Streamer that is no map key is not held).
func holdable(scan Streamer) bool {
	return scan != nil && reflect.ValueOf(scan).Comparable()
}

// hold adds one occurrence of scan to q's held scans, refusing it when a
// queue another engine plays holds it. Called with q.mu held.
func (q *ScanQueue) hold(scan Streamer) error {
	if q.player == nil || !holdable(scan) {
		return nil
	}
	scanPlayers.mu.Lock()
	defer scanPlayers.mu.Unlock()
	if other, ok := scanPlayers.by[scan]; ok && other != q {
		return fmt.Errorf("scan_queue: the scan is queued in the scan queue of another running engine: "+
			"a scan serves one running engine at a time (the engine advances its position); stop that "+
			"engine first, or queue another scan object with the same configuration: %w", backend.ErrInUse)
	}
	scanPlayers.by[scan] = q
	q.held[scan]++
	return nil
}

// unhold removes one occurrence of scan (it left the queue: finished,
// aborted or interrupted); the scan is free once none is left. Called
// with q.mu held.
func (q *ScanQueue) unhold(scan Streamer) {
	if q.player == nil || !holdable(scan) {
		return
	}
	scanPlayers.mu.Lock()
	defer scanPlayers.mu.Unlock()
	if q.held[scan] > 1 {
		q.held[scan]--
		return
	}
	delete(q.held, scan)
	if scanPlayers.by[scan] == q {
		delete(scanPlayers.by, scan)
	}
}

// Play marks the queue as played by player (an engine's token, compared
// with ==) until StopPlaying, and holds every scan in it. It fails with
// backend.ErrInUse, holding nothing, while another player plays the queue
// or another played queue holds one of its scans. Playing again by the
// same player is a no-op.
func (q *ScanQueue) Play(player any) error {
	if player == nil {
		return backend.Invalidf("scan_queue: Play(nil), expected an engine's token")
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.player == player:
		return nil
	case q.player != nil:
		return fmt.Errorf("scan_queue: another running engine plays this ScanQueue: a scan queue serves one "+
			"running engine at a time; stop that engine first, or give this engine its own ScanQueue(): %w",
			backend.ErrInUse)
	}
	q.player, q.held = player, map[Streamer]int{}
	scans := make([]Streamer, 0, len(q.queue)+1)
	if q.active != nil {
		scans = append(scans, q.active.scan)
	}
	for _, it := range q.queue {
		scans = append(scans, it.scan)
	}
	for i, s := range scans {
		if err := q.hold(s); err != nil {
			for _, t := range scans[:i] {
				q.unhold(t)
			}
			q.player, q.held = nil, nil
			return err
		}
	}
	return nil
}

// StopPlaying ends player's play (its Generate stage is over) and frees
// the scans held; a no-op for another player or a queue not played.
func (q *ScanQueue) StopPlaying(player any) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.player == nil || q.player != player {
		return
	}
	scanPlayers.mu.Lock()
	for s := range q.held {
		if scanPlayers.by[s] == q {
			delete(scanPlayers.by, s)
		}
	}
	scanPlayers.mu.Unlock()
	q.player, q.held = nil, nil
}

// Playing reports whether an engine plays the queue.
func (q *ScanQueue) Playing() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.player != nil
}
