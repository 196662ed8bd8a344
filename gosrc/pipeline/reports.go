package pipeline

import "sync"

// ReportFields is the number of values per ReportLog record.
const ReportFields = 4

// ReportLog hands a coordinator's Poll results to a caller that reads them
// in batches as fixed-size float64 records (the Python layer): op names
// are interned, errors kept until asked for, and results that did not fit
// wait for the next Fill. It is safe for concurrent use.
type ReportLog struct {
	mu    sync.Mutex
	names map[string]int
	tab   []string
	errs  map[OpID]string
	rest  []OpResult
}

// Fill polls c and writes up to len(out)/ReportFields records: id, kind,
// gpu_ms, bytes, where kind is (name index * 4 + OpType) * 2, plus 1 when
// Err holds the op's error. It returns the number of records written.
func (l *ReportLog) Fill(c *AsyncCoordinator, out []float64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.names == nil {
		l.names, l.errs = map[string]int{}, map[OpID]string{}
	}
	l.rest = append(l.rest, c.Poll()...)
	k := min(len(l.rest), len(out)/ReportFields)
	for i, r := range l.rest[:k] {
		idx, ok := l.names[r.Name]
		if !ok {
			idx = len(l.tab)
			l.names[r.Name], l.tab = idx, append(l.tab, r.Name)
		}
		kind := (idx*4 + int(r.Type)) * 2
		if r.Err != nil {
			l.errs[r.ID], kind = r.Err.Error(), kind+1
		}
		copy(out[i*ReportFields:], []float64{float64(r.ID), float64(kind), float64(r.GPUMs), float64(r.Bytes)})
	}
	l.rest = append(l.rest[:0], l.rest[k:]...)
	return k
}

// Name is the op name of name index i ("" if unknown).
func (l *ReportLog) Name(i int) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if i < 0 || i >= len(l.tab) {
		return ""
	}
	return l.tab[i]
}

// Err returns, once, the error of a reported op that failed.
func (l *ReportLog) Err(id OpID) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.errs[id]
	delete(l.errs, id)
	return e
}
