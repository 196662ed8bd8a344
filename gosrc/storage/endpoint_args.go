package storage

import "github.com/vortexgo/vortexgo/gosrc/backend"

// decodeArgs decodes BlockEndpoint.Do's JSON arguments. It serves only
// endpoint.go, which leaves this package with issue 25's endpoint slice:
// delete this file with it (the storages themselves take typed arguments,
// gosrc/pyapi/storage.go).
func decodeArgs(what, op string, args []byte, v any) error {
	if len(args) == 0 {
		return nil
	}
	return backend.DecodeRecord(what+"."+op, string(args), v)
}
