package engine

// The event record: the Python dispatcher and its C loop read events as
// fixed-layout int64s (one buffer, no parsing), declared in layout.go and
// written here, next to the type they flatten. The status and timings
// cross as typed Go values (Status, TimingSummary): the bindings declare
// their own records of them.

// Record writes the event's fields (EventFields of them, in layout.go's
// order) into dst.
func (ev *Event) Record(dst []int64) {
	_ = dst[EventFields-1]
	dst[FieldKind], dst[FieldEndpoint], dst[FieldSample], dst[FieldScanIdx] = int64(ev.Kind), int64(ev.Endpoint), ev.Sample, ev.ScanIdx
	dst[FieldVolumeIdx], dst[FieldBscanIdx], dst[FieldTimestamp] = ev.VolumeIdx, ev.BscanIdx, ev.Timestamp
	copy(dst[FieldTimes:EventFields], ev.Times[:])
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
