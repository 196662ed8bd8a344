package engine

// Flat records for bindings: the Python layer reads events, status and
// timings as fixed-layout arrays of numbers (one buffer, no parsing), so
// the layouts live here, next to the types they flatten. Events, read at
// high rates, are written into the caller's int64s; the rest are float64
// slices, the one record style of the bindings (hostmem.Record).

// Record writes the event's fields (EventFields of them, in layout.go's
// order) into dst.
func (ev *Event) Record(dst []int64) {
	_ = dst[EventFields-1]
	dst[FieldKind], dst[FieldEndpoint], dst[FieldSample], dst[FieldScanIdx] = int64(ev.Kind), int64(ev.Endpoint), ev.Sample, ev.ScanIdx
	dst[FieldVolumeIdx], dst[FieldBscanIdx], dst[FieldTimestamp] = ev.VolumeIdx, ev.BscanIdx, ev.Timestamp
	copy(dst[FieldTimes:EventFields], ev.Times[:])
}

// Record is the status counters (StatusFields of them, in statusNames'
// order, layout.go).
func (s *Status) Record() []float64 {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	return []float64{float64(s.BlocksAcquired), float64(s.BlocksProcessed), float64(s.BlocksFormatted),
		float64(s.BlocksDropped), float64(s.Volumes), float64(s.CallbackErrors), float64(s.EventsDropped),
		float64(s.InFlight), b(s.Running), b(s.Done), float64(s.Dispatched), float64(s.Allocated),
		float64(s.ProfilerDropped)}
}

// Record is the summary (TimingFields values, in timingStages' and
// timingStats' order, layout.go).
func (t *TimingSummary) Record() []float64 {
	out := make([]float64, 0, TimingFields)
	for _, s := range [...]*StageStats{&t.Acquire, &t.Process, &t.Format, &t.Upload} {
		out = append(out, float64(s.Count), s.Mean, s.Min, s.Max, s.P50, s.P99)
	}
	return out
}

// Record is the engine's state as one record for bindings: the status
// (StatusFields values) then the timings (TimingFields values).
func (e *Engine) Record() []float64 {
	s, t := e.Status(), e.Timings()
	return append(s.Record(), t.Record()...)
}

// SetCallbacks sets which event kinds endpoint id's callbacks handle (bits
// of EventMask): only those are posted, and an endpoint with callbacks has
// them run before the engine writes its next volume (SetCallbackSync), so
// a volume callback sees the volume it is told about, as in vortex, whose
// callbacks run inline. Before Start.
func (e *Engine) SetCallbacks(id, bits int) error {
	ks, err := EventMask(bits)
	if err == nil {
		err = e.SetEventMask(id, ks...)
	}
	if err == nil {
		err = e.SetCallbackSync(id, bits != 0)
	}
	return err
}

// EventMask turns a bit set of event kinds (bit k set: kind k handled)
// into the kinds, for SetEventMask. Bits for kinds other than update,
// segment, volume, scan and event (marker) are refused.
func EventMask(bits int) ([]EventKind, error) {
	const handled = 1<<EventUpdate | 1<<EventSegment | 1<<EventVolume | 1<<EventScan | 1<<EventMarker
	if bits < 0 || bits&^handled != 0 {
		return nil, Invalid("event mask %#x, expected bits of update (1), segment (2), volume (4), scan (8), event (64)", bits)
	}
	var ks []EventKind
	for k := EventUpdate; k < eventKinds; k++ {
		if bits&(1<<k) != 0 {
			ks = append(ks, k)
		}
	}
	return ks, nil
}
