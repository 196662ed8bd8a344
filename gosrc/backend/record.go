package backend

import (
	"encoding/json"
	"strings"
)

// DecodeRecord reads a configuration struct from its JSON record, the form
// in which bindings pass a constructor's many fields as one value: keys are
// the Go field names, and an unknown key or a value of the wrong type is an
// error wrapping ErrInvalid that names what (the struct) and the cause.
func DecodeRecord(what, record string, v any) error {
	d := json.NewDecoder(strings.NewReader(record))
	d.DisallowUnknownFields()
	if err := d.Decode(v); err != nil {
		return Invalidf("%s: %v, expected a JSON record of its fields", what, err)
	}
	return nil
}
