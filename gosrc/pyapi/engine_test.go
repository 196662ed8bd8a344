package pyapi

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vortexgo/vortexgo/gosrc/engine"
)

// TestStatusRecordNamesStatusFields: ENGINE_STATUS carries every number
// and flag of engine.Status under the field's own name, so Python reads
// rec.done for Status.Done and the two cannot drift apart.
func TestStatusRecordNamesStatusFields(t *testing.T) {
	rec := reflect.TypeOf(engineStatusRecord{})
	st := reflect.TypeOf(engine.Status{})
	want := map[string]bool{}
	for i := range st.NumField() {
		f := st.Field(i)
		switch f.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Bool:
			want[f.Name] = true
		case reflect.Struct: // a group of counters (Frames: FrameCounts) flattens to Frames<Field>
			for j := range f.Type.NumField() {
				want[f.Name+f.Type.Field(j).Name] = true
			}
		}
	}
	got := map[string]bool{}
	for i := range rec.NumField() {
		got[rec.Field(i).Name] = true
	}
	assert.Equal(t, want, got)
}

// TestEngineRecords: an engine's status and timings reach the caller's
// buffer, field by field, and a buffer too small gets the size only.
func TestEngineRecords(t *testing.T) {
	dev, err := GetDevice("cpu")
	require.NoError(t, err)
	cfg, err := NewEngineConfig(`{"RecordsPerBlock": 8, "BlocksToAllocate": 3}`, 0, false)
	require.NoError(t, err)
	e, err := NewEngine(dev, cfg)
	require.NoError(t, err)

	var st engineStatusRecord
	buf := make([]int64, reflect.TypeOf(st).NumField())
	size, err := e.Status(addr(buf), 8)
	require.NoError(t, err)
	require.Equal(t, 8*len(buf), size)
	require.Equal(t, make([]int64, len(buf)), buf, "too small: nothing written")
	_, err = e.Status(addr(buf), size)
	require.NoError(t, err)
	st = *(*engineStatusRecord)(reflect.ValueOf(&buf[0]).UnsafePointer())
	assert.Equal(t, engineStatusRecord{Allocated: 3}, st, "a new engine: nothing prepared, started or closed")

	tb := make([]float64, reflect.TypeOf(engineTimingsRecord{}).NumField())
	size, err = e.Timings(addr(tb), 8*len(tb))
	require.NoError(t, err)
	require.Equal(t, 8*len(tb), size)

	require.NoError(t, e.Close())
	_, err = e.Status(addr(buf), size)
	require.NoError(t, err)
	st = *(*engineStatusRecord)(reflect.ValueOf(&buf[0]).UnsafePointer())
	assert.Equal(t, int64(1), st.Closed)
	assert.Equal(t, "", e.TakeErr())
}
