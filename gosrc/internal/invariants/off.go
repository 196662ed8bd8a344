//go:build !invariants && !race

package invariants

// Enabled is true only in builds with the "invariants" or "race" tag.
const Enabled = false

// Obj tracks one object in invariant builds; here it is empty and every
// method is a no-op the compiler removes.
type Obj struct{}

// Track does nothing outside invariant builds.
func Track(kind string, id uintptr) Obj { return Obj{} }

// Release does nothing outside invariant builds.
func (Obj) Release() {}

// Misuse returns err: outside invariant builds misuse is the caller's
// error to handle.
func (Obj) Misuse(err error) error { return err }

// Acquired does nothing outside invariant builds.
func Acquired(kind string, obj any, owner int64, exclusive bool) {}

// Released does nothing outside invariant builds.
func Released(obj any, owner int64, exclusive bool) {}

// Live returns nil outside invariant builds.
func Live() []Leak { return nil }

func allowMisuse(delta int32) {}
