package engine

// Flat records for bindings: the Python layer reads events, status and
// timings as fixed-layout arrays of numbers (one NumPy buffer, no parsing),
// so the layouts live here, next to the types they flatten.

// EventFields is the number of int64 fields of one event record: kind,
// endpoint, sample, scan_idx, volume_idx, bscan_idx, timestamp_ns.
const EventFields = 7

// Record writes the event's fields (EventFields of them) into dst.
func (ev *Event) Record(dst []int64) {
	_ = dst[EventFields-1]
	dst[0], dst[1], dst[2], dst[3] = int64(ev.Kind), int64(ev.Endpoint), ev.Sample, ev.ScanIdx
	dst[4], dst[5], dst[6] = int64(ev.VolumeIdx), int64(ev.BscanIdx), ev.Timestamp
}

// StatusFields is the number of int64 fields of a status record, in the
// order of Status's fields: blocks acquired, processed, formatted,
// dropped, volumes, callback errors, events dropped, in flight, running
// (0/1), done (0/1). The error text is read separately (Engine.Err).
const StatusFields = 10

// Record writes the status counters (StatusFields of them) into dst.
func (s *Status) Record(dst []int64) {
	_ = dst[StatusFields-1]
	b := func(v bool) int64 {
		if v {
			return 1
		}
		return 0
	}
	dst[0], dst[1], dst[2], dst[3] = s.BlocksAcquired, s.BlocksProcessed, s.BlocksFormatted, s.BlocksDropped
	dst[4], dst[5], dst[6], dst[7] = s.Volumes, s.CallbackErrors, s.EventsDropped, int64(s.InFlight)
	dst[8], dst[9] = b(s.Running), b(s.Done)
}

// TimingFields is the number of float64 fields of a timing record: for
// each stage (acquire, process, format) count, mean, min, max, p50, p99 in
// milliseconds.
const TimingFields = 18

// Record writes the summary (TimingFields values) into dst.
func (t *TimingSummary) Record(dst []float64) {
	_ = dst[TimingFields-1]
	for i, s := range [...]*StageStats{&t.Acquire, &t.Process, &t.Format} {
		r := dst[i*6 : i*6+6]
		r[0], r[1], r[2], r[3], r[4], r[5] = float64(s.Count), s.Mean, s.Min, s.Max, s.P50, s.P99
	}
}

// EventMask turns a bit set of event kinds (bit k set: kind k handled)
// into the kinds, for SetEventMask. Bits for kinds other than update,
// segment, volume and scan are refused.
func EventMask(bits int) ([]EventKind, error) {
	if bits < 0 || bits >= 1<<(EventScan+1) {
		return nil, Invalid("event mask %#x, expected bits of update (1), segment (2), volume (4), scan (8)", bits)
	}
	var ks []EventKind
	for k := EventUpdate; k <= EventScan; k++ {
		if bits&(1<<k) != 0 {
			ks = append(ks, k)
		}
	}
	return ks, nil
}
