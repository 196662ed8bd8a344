package pyapi

import (
	"fmt"
	"io"

	"github.com/vortexgo/vortexgo/gosrc/engine"
	"github.com/vortexgo/vortexgo/gosrc/handle"
	"github.com/vortexgo/vortexgo/gosrc/hostmem"
)

// Object is embedded first in every wrapper of a core object that Python
// closes (gopy makes it the Python base class, and accepts any such
// wrapper where an *Object is expected): one Close, one Record and the
// engine's wiring (EngineConfig.Link) serve them all.
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

// Record writes the core object's state record (its Record method, which
// documents the layout) into the caller's n float64s at dst when they fit,
// and returns its length either way (hostmem.Record).
func (o *Object) Record(dst, n int) (int, error) {
	r, ok := o.obj.(interface{ Record() []float64 })
	if !ok {
		return 0, tag(badArg("%T has no record", o.obj))
	}
	return hostmem.Record(dst, n, r.Record()...), nil
}

// Do runs the core object's operation op (its Do method documents them):
// args and result are JSON records; an array result goes into the caller's
// n elements at dst when it fits, its length in the result either way
// (hostmem.Record's convention). with is a second object the op takes (a
// scan a queue appends; pass the object itself when none).
func (o *Object) Do(op, args string, with *Object, dst, n int) (string, error) {
	d, ok := o.obj.(interface {
		Do(op string, args []byte, with any, dst, n int) ([]byte, error)
	})
	if !ok {
		return "", tag(badArg("%T has no operations", o.obj))
	}
	out, err := d.Do(op, []byte(args), with.obj, dst, n)
	return string(out), tag(err)
}
