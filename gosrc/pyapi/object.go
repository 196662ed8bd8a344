package pyapi

import (
	"fmt"
	"io"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/handle"
)

// Object is embedded first in every wrapper of a core object that Python
// closes (gopy makes it the Python base class, and accepts any such
// wrapper where an *Object is expected): one Close and the engine's
// wiring (EngineConfig.Link) serve them all.
type Object struct {
	obj any
	id  handle.ID // registered (owner) when ids are borrowed from it: its streams
}

// owner is obj's Object, registered: closing it makes every id borrowed
// from it stale on every call path.
func owner(obj any) Object { return Object{obj: obj, id: handles.Register(obj)} }

// ID is the object's registry id (0 when none is borrowed from it).
func (o *Object) ID() int { return int(o.id) }

// Close closes the core object (a no-op for one that holds nothing). A
// registered one's id, with every id borrowed from it, goes first, so no
// call path reaches what Close destroys and of two racing Close calls one
// reaches it; an object an engine uses refuses (InUseError) and keeps them.
func (o *Object) Close() error {
	if o.id != 0 && !engine.Claimed(o.obj) {
		if err := handles.Close(fmt.Sprintf("%T", o.obj), o.id); err != nil {
			return tag(err)
		}
	}
	if c, ok := o.obj.(io.Closer); ok {
		return tag(c.Close())
	}
	return nil
}
