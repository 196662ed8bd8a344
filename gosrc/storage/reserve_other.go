//go:build !linux

package storage

// reserver is Linux's (fallocate); elsewhere writes go on unguarded.
type reserver struct{}

func openReserver(string, int) (*reserver, error) { return nil, nil }
func (r *reserver) reserve(int64) error           { return nil }
func (r *reserver) freeze(int) bool               { return false }
func (r *reserver) release()                      {}
