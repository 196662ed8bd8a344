package pyapi

import (
	"encoding/json"
	"strings"

	"github.com/vortexgo/vortexgo/gosrc/backend"
)

// encodeJSON is v as a JSON record (a describing record Python reads in
// one call: a device's Info, the memory usage, a tensor's info).
func encodeJSON(v any) string {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // unreachable: the records hold ints, strings, bools and maps of them
	}
	return string(out)
}

// decodeRecord reads a configuration struct from its JSON record, the form
// in which Python passes a constructor's many fields as one value: keys are
// the Go field names, and an unknown key or a value of the wrong type is an
// error wrapping backend.ErrInvalid that names what (the struct) and the
// cause.
func decodeRecord(what, record string, v any) error {
	d := json.NewDecoder(strings.NewReader(record))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return backend.Invalidf("%s: %v, expected a JSON record of its fields", what, err)
	}
	return nil
}
