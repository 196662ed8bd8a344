/* _fastcall: vortexgo's per-call stream and event operations without Go.
 *
 * Two layers:
 *
 * - StreamBase and EventBase, the C base types of vortexgo.Stream and
 *   vortexgo.Event (python/vortexgo/_stream.py). Their hot methods
 *   (synchronize, query, is_complete, record, wait_event) are C methods, so
 *   a call from Python costs what CuPy's Cython methods cost: no Python
 *   frame, no global lookups. Each reads the object's one id (`_id`, the
 *   registry's: gosrc/handle) from its struct and tries, in turn, the shim's
 *   fast functions (the CUDA streams and events the registry publishes), the
 *   Go fast functions (CPU objects, borrowed streams), then a Python method
 *   of the object named `_<method>_slow`, the pure-Python implementation,
 *   which raises the full error. Anything unusual (a keyword argument, no
 *   argument, a non-vortexgo argument) goes straight to that method, so the C
 *   code decides nothing a Python user could observe.
 *
 * - The module functions below take the ids themselves (ints) and call the
 *   shim's fast functions (gosrc/cuda/fastpath.h, generated from Go), which
 *   find the id's slot in the table the registry publishes, check its
 *   generation, mark the slot in use against a concurrent close, make the
 *   entry's context current and call the driver. The function table's
 *   address comes from the Go core once, through init(address).
 *
 * - ring_next, the dispatcher's wait for the next events with a fixed
 *   dispatch_spin: it takes records straight from the engine's event ring
 *   (gosrc/engine/eventring.h), spinning with the GIL released, with no
 *   call into Go (see ring_next).
 *
 * - run_events, the engine dispatcher's hot loop (python/vortexgo/engine/dispatch.py,
 *   Engine._run_batch): it runs consecutive event records whose handler
 *   takes only ints and returns to Python at the first record that needs
 *   more (see run_events).
 *
 * Status of every fast function: 0 done / not ready, 1 ready (queries),
 * -1 "not done here": the caller repeats the call through the next path.
 * Before init, every shim call returns -1. close() sets the id to 0, so
 * every later call reaches the slow method and its ClosedError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pthread.h>
#include <stddef.h>
#include <time.h>

#include "fastpath.h"
#include "eventlayout.h"
#include "eventring.h"

static const vg_fast_api* api;

/* Set in a child of fork(): the Go runtime and the CUDA driver of the
 * parent do not survive it, so from then on no path here calls either. The
 * shim's table is forgotten (every shim call returns -1), the Go fast
 * functions are never called, and the C base types' methods go straight to
 * their pure-Python methods, which raise vortexgo.ForkError (_core.py). A
 * pthread_atfork handler rather than Python's os.register_at_fork: it also
 * covers a fork made from C. */
static volatile int forked;

/* Set once init ran: this process loaded the Go core. Only such a parent
 * leaves a dead runtime to its forked children; the child of a process that
 * only imported vortexgo loads its own Go core, and must run it, engine
 * dispatcher included (docs/resources.md: "forks like any other"). */
static volatile int adopted;

static void forget_in_child(void) {
	if (adopted) forked = 1;
	api = NULL;
}

/* refuse_forked: the error of a call that would read the parent's memory
 * (an engine's event ring) in a forked child. */
static PyObject* refuse_forked(const char* what) {
	PyErr_Format(PyExc_RuntimeError,
	             "ForkError: %s: vortexgo cannot run in a child of fork(); use multiprocessing's spawn or forkserver start method",
	             what);
	return NULL;
}

/* id reads an int argument; -1 (and a Python error) if it is not one. A
 * value outside int64 is no id at all: 0 makes the call return -1 and take
 * the method path, which names the problem. */
static int id(PyObject* o, int64_t* out) {
	int overflow = 0;
	long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
	if (v == -1 && PyErr_Occurred()) return -1;
	*out = overflow ? 0 : (int64_t)v;
	return 0;
}

#define ARGS(n)                                                                  \
	if (nargs != (n)) {                                                          \
		PyErr_Format(PyExc_TypeError, "expected %d int argument(s), got %zd", (n), nargs); \
		return NULL;                                                             \
	}

static PyObject* event_record(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t s, e;
	ARGS(2);
	if (id(args[0], &s) || id(args[1], &e)) return NULL;
	return PyLong_FromLong(api ? api->event_record(s, e) : -1);
}

static PyObject* stream_wait_event(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t s, e;
	ARGS(2);
	if (id(args[0], &s) || id(args[1], &e)) return NULL;
	return PyLong_FromLong(api ? api->stream_wait(s, e) : -1);
}

static PyObject* event_query(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t e;
	ARGS(1);
	if (id(args[0], &e)) return NULL;
	return PyLong_FromLong(api ? api->event_query(e) : -1);
}

static PyObject* stream_query(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t s;
	ARGS(1);
	if (id(args[0], &s)) return NULL;
	return PyLong_FromLong(api ? api->stream_query(s) : -1);
}

/* The synchronizing calls release the GIL: they block until the GPU is done. */
static PyObject* event_synchronize(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t e;
	int r = -1;
	ARGS(1);
	if (id(args[0], &e)) return NULL;
	if (api) {
		Py_BEGIN_ALLOW_THREADS r = api->event_sync(e);
		Py_END_ALLOW_THREADS
	}
	return PyLong_FromLong(r);
}

static PyObject* stream_synchronize(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t s;
	int r = -1;
	ARGS(1);
	if (id(args[0], &s)) return NULL;
	if (api) {
		Py_BEGIN_ALLOW_THREADS r = api->stream_sync(s);
		Py_END_ALLOW_THREADS
	}
	return PyLong_FromLong(r);
}

/* --- the C base types of Stream and Event ------------------------------------ */

/* The Go fast functions (pyapi.Fast*), bound once by _core through bind():
 * the path for objects the shim's table does not hold. */
enum { GO_RECORD, GO_WAIT_EVENT, GO_QUERY_EVENT, GO_QUERY_STREAM, GO_SYNC_STREAM, GO_SYNC_EVENT, GO_N };
static PyObject* go_fast[GO_N];

/* Both types share one layout: the object's registry id twice, as the
 * shim takes it (`id`) and as the Python int it came as (`gid`): the Go
 * functions take Python ints, and an id is too large for CPython's small-int
 * cache, so converting an int64 on every call would allocate. */
typedef struct {
	PyObject_HEAD
	int64_t id;    /* _id as an int64; 0 when unset or outside int64 */
	PyObject* gid; /* _id: the registry id (an int), NULL until set */
} FastObject;

static PyTypeObject StreamBaseType;
static PyTypeObject EventBaseType;

/* Interned names of the slow methods (see the header). */
static PyObject *s_record_event_slow, *s_wait_event_slow, *s_record_slow, *s_synchronize_slow,
    *s_is_complete_slow;

/* go_call: Go fast function k on the ids a (and b when n == 2). Returns its
 * status, or -2 with a Python error set (the Go wrapper raised). */
static int go_call(int k, PyObject* a, PyObject* b, int n) {
	PyObject* argv[2] = {a, b};
	PyObject* res;
	long r;
	if (forked || go_fast[k] == NULL || a == NULL || (n == 2 && b == NULL)) return -1;
	/* Held for the call: the Go wrapper releases the GIL, and a close() on
	 * another thread then replaces the object's id (set_gid drops the old). */
	Py_INCREF(a);
	Py_XINCREF(b);
	res = PyObject_Vectorcall(go_fast[k], argv, n, NULL);
	Py_DECREF(a);
	Py_XDECREF(b);
	if (res == NULL) return -2;
	r = PyLong_AsLong(res);
	Py_DECREF(res);
	if (r == -1 && PyErr_Occurred()) return -2;
	return r < 0 ? -1 : (int)r;
}

/* slow: self.<name>(*args, **kw), the pure-Python method with the full error. */
static PyObject* slow(PyObject* self, PyObject* name, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
	PyObject* m = PyObject_GetAttr(self, name);
	PyObject* r;
	if (m == NULL) return NULL;
	r = PyObject_Vectorcall(m, args, (size_t)nargs, kwnames);
	Py_DECREF(m);
	return r;
}

/* pair_status: record (or wait) stream s on event e: shim, then Go. */
static int pair_status(FastObject* s, FastObject* e, int shim_wait) {
	int r = -1;
	if (api && s->id && e->id) r = shim_wait ? api->stream_wait(s->id, e->id) : api->event_record(s->id, e->id);
	if (r < 0) r = go_call(shim_wait ? GO_WAIT_EVENT : GO_RECORD, s->gid, e->gid, 2);
	return r;
}

static int sync_status(FastObject* o, int event) {
	int64_t oid = o->id;
	int r = -1;
	if (api && oid) {
		/* Blocks until the GPU is done: the GIL is released meanwhile, and
		 * the shim's in-use mark keeps a concurrent close() waiting. */
		Py_BEGIN_ALLOW_THREADS r = event ? api->event_sync(oid) : api->stream_sync(oid);
		Py_END_ALLOW_THREADS
	}
	if (r < 0) r = go_call(event ? GO_SYNC_EVENT : GO_SYNC_STREAM, o->gid, NULL, 1);
	return r;
}

static int query_status(FastObject* o, int event) {
	int r = -1;
	if (api && o->id) r = event ? api->event_query(o->id) : api->stream_query(o->id);
	if (r < 0) r = go_call(event ? GO_QUERY_EVENT : GO_QUERY_STREAM, o->gid, NULL, 1);
	return r;
}

/* Stream.record_event(event=None) -> event */
static PyObject* stream_record_event(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
	if (nargs == 1 && kwnames == NULL && PyObject_TypeCheck(args[0], &EventBaseType)) {
		int r = pair_status((FastObject*)self, (FastObject*)args[0], 0);
		if (r == -2) return NULL;
		if (r >= 0) return Py_NewRef(args[0]);
	}
	return slow(self, s_record_event_slow, args, nargs, kwnames);
}

/* Stream.wait_event(event) -> None */
static PyObject* stream_wait_event_m(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
	if (nargs == 1 && kwnames == NULL && PyObject_TypeCheck(args[0], &EventBaseType)) {
		int r = pair_status((FastObject*)self, (FastObject*)args[0], 1);
		if (r == -2) return NULL;
		if (r >= 0) Py_RETURN_NONE;
	}
	return slow(self, s_wait_event_slow, args, nargs, kwnames);
}

/* Event.record(stream=None) -> self */
static PyObject* event_record_m(PyObject* self, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
	if (nargs == 1 && kwnames == NULL && PyObject_TypeCheck(args[0], &StreamBaseType)) {
		int r = pair_status((FastObject*)args[0], (FastObject*)self, 0);
		if (r == -2) return NULL;
		if (r >= 0) return Py_NewRef(self);
	}
	return slow(self, s_record_slow, args, nargs, kwnames);
}

static PyObject* synchronize_m(PyObject* self, int event) {
	int r = sync_status((FastObject*)self, event);
	if (r == -2) return NULL;
	if (r >= 0) Py_RETURN_NONE;
	return slow(self, s_synchronize_slow, NULL, 0, NULL);
}

static PyObject* query_m(PyObject* self, int event) {
	int r = query_status((FastObject*)self, event);
	if (r == -2) return NULL;
	if (r >= 0) return PyBool_FromLong(r == 1);
	return slow(self, s_is_complete_slow, NULL, 0, NULL);
}

static PyObject* stream_synchronize_m(PyObject* self, PyObject* unused) { return synchronize_m(self, 0); }
static PyObject* event_synchronize_m(PyObject* self, PyObject* unused) { return synchronize_m(self, 1); }
static PyObject* stream_query_m(PyObject* self, PyObject* unused) { return query_m(self, 0); }
static PyObject* event_query_m(PyObject* self, PyObject* unused) { return query_m(self, 1); }
static PyObject* stream_is_complete(PyObject* self, void* closure) { return query_m(self, 0); }
static PyObject* event_is_complete(PyObject* self, void* closure) { return query_m(self, 1); }

/* _id: an int only (the Go functions would refuse anything else later, far
 * from the assignment); it cannot be deleted. Setting it sets both copies. */
static PyObject* get_gid(PyObject* self, void* closure) {
	PyObject* g = ((FastObject*)self)->gid;
	return g ? Py_NewRef(g) : PyLong_FromLong(0);
}

static int set_gid(PyObject* self, PyObject* v, void* closure) {
	if (v == NULL) {
		PyErr_SetString(PyExc_TypeError, "_id cannot be deleted");
		return -1;
	}
	if (!PyLong_CheckExact(v)) {
		PyErr_Format(PyExc_TypeError, "_id=%R, expected an int", v);
		return -1;
	}
	if (id(v, &((FastObject*)self)->id) < 0) return -1;
	Py_XSETREF(((FastObject*)self)->gid, Py_NewRef(v));
	return 0;
}

static void fast_dealloc(PyObject* self) {
	Py_CLEAR(((FastObject*)self)->gid);
	Py_TYPE(self)->tp_free(self);
}

#define VC(f) (PyCFunction)(void (*)(void))(f), METH_FASTCALL | METH_KEYWORDS

static PyMethodDef stream_methods[] = {
    {"record_event", VC(stream_record_event),
     "record_event($self, /, event=None)\n--\n\nRecord ``event`` (a new one if None) at the tail of this stream and "
     "return it."},
    {"wait_event", VC(stream_wait_event_m),
     "wait_event($self, /, event)\n--\n\nMake later work on this stream wait for ``event``; the host does not wait."},
    {"synchronize", stream_synchronize_m, METH_NOARGS,
     "synchronize($self, /)\n--\n\nBlock the host until all work queued so far is done (GIL released)."},
    {"query", stream_query_m, METH_NOARGS, "query($self, /)\n--\n\nAlias of :attr:`is_complete`."},
    {NULL, NULL, 0, NULL},
};

static PyMethodDef event_methods[] = {
    {"record", VC(event_record_m),
     "record($self, /, stream=None)\n--\n\nRecord this event at the tail of ``stream`` (default: the current stream)."},
    {"synchronize", event_synchronize_m, METH_NOARGS,
     "synchronize($self, /)\n--\n\nBlock the host until the event completes (GIL released)."},
    {"query", event_query_m, METH_NOARGS, "query($self, /)\n--\n\nAlias of :attr:`is_complete`."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef stream_getset[] = {
    {"is_complete", stream_is_complete, NULL, "True when all work queued so far is done (does not block).", NULL},
    {"done", stream_is_complete, NULL, "Alias of :attr:`is_complete` (CuPy's name).", NULL},
    {"_id", get_gid, set_gid, "the registry id (0: none)", NULL},
    {NULL},
};

static PyGetSetDef event_getset[] = {
    {"is_complete", event_is_complete, NULL, "True once the work before the event is done (does not block).",
     NULL},
    {"done", event_is_complete, NULL, "Alias of :attr:`is_complete` (CuPy's name).", NULL},
    {"_id", get_gid, set_gid, "the registry id (0: none)", NULL},
    {NULL},
};

static PyTypeObject StreamBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "vortexgo._native._fastcall.StreamBase",
    .tp_basicsize = sizeof(FastObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C base of vortexgo.Stream: its per-call methods without a Python frame.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = fast_dealloc,
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
};

static PyTypeObject EventBaseType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "vortexgo._native._fastcall.EventBase",
    .tp_basicsize = sizeof(FastObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The C base of vortexgo.Event: its per-call methods without a Python frame.",
    .tp_new = PyType_GenericNew,
    .tp_dealloc = fast_dealloc,
    .tp_methods = event_methods,
    .tp_getset = event_getset,
};

/* --- the engine dispatcher's hot loop --------------------------------------- */

/* An event record: its layout is declared once, in gosrc/engine/layout.go,
 * and generated into eventlayout.h (VG_EV_*). The kinds run here: update,
 * segment, volume, scan and event markers. */
enum {
	EV_FIELDS = VG_EV_FIELDS,
	EV_UPDATE = VG_EV_UPDATE,
	EV_SEGMENT = VG_EV_SEGMENT,
	EV_VOLUME = VG_EV_VOLUME,
	EV_SCAN = VG_EV_SCAN,
	EV_MARKER = VG_EV_EVENT,
};

/* Interned attribute names: the engine's state and each kind's handler. */
static PyObject *s_endpoints, *s_fatal, *s_latency, *s_latency_cap, *s_latency_base, *s_aggregate, *s_block,
    *s_update_cb, *s_segment_cb, *s_volume_cb, *s_scan_cb, *s_event_cb;
#ifndef __linux__
static PyObject* monotonic_ns; /* time.monotonic_ns, where it is not CLOCK_MONOTONIC */
#endif

/* now_ns is time.monotonic_ns(); -1 with a Python error set on failure. */
static int64_t now_ns(void) {
#ifdef __linux__
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t); /* Python's time.monotonic_ns clock on Linux */
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
#else
	PyObject* r = PyObject_CallNoArgs(monotonic_ns);
	int64_t v;
	if (r == NULL) return -1;
	v = PyLong_AsLongLong(r);
	Py_DECREF(r);
	return v;
#endif
}

/* attr_is_none: 1 when o.name is None, 0 when it is something else, -1
 * with a Python error when it cannot be read. */
static int attr_is_none(PyObject* o, PyObject* name) {
	PyObject* v = PyObject_GetAttr(o, name);
	int r;
	if (v == NULL) return -1;
	r = v == Py_None;
	Py_DECREF(v);
	return r;
}

/* raised: the exception being raised, taken from the thread (a new
 * reference; its traceback attached). */
static PyObject* raised(void) {
#if PY_VERSION_HEX >= 0x030C0000
	return PyErr_GetRaisedException();
#else
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	if (tb != NULL && value != NULL) PyException_SetTraceback(value, tb);
	Py_XDECREF(type);
	Py_XDECREF(tb);
	return value;
#endif
}

/* ring_next(address, records, spin_ns) -> int
 *
 * The dispatcher's wait for events with a fixed dispatch_spin
 * (Engine._dispatch): takes up to len(records) / EV_FIELDS records from the
 * engine's event ring at `address` (pyapi EventRing.Addr(), gosrc/engine/eventring.h)
 * into `records` (a writable int64 buffer), spinning up to spin_ns for the
 * first with the GIL released. No call into Go: on the GPU hosts every trip
 * through Go (the cgo return, the runtime's P) added microseconds to the
 * callback latency and most of its tail (docs/design.md, "Dispatch latency").
 * Entering acknowledges the previous batch: its handlers have returned.
 *
 * Returns n > 0 records taken; 0 when the spin ran out (the dispatcher then
 * parks in Go: pyapi.FastNextEvents with spin 0); -1 once the ring is closed and drained
 * (Go's call returns the final EventDone); -2 when engine stages wait for the
 * acknowledgement just stored, which moved (the dispatcher wakes them with the ring's Ack(),
 * then calls again). The caller keeps the EventRing object alive while it
 * passes its address, and is the ring's only consumer: the dispatcher thread,
 * alternating with Go's calls, never beside them.
 */
static PyObject* ring_next(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	int64_t addr, spin_ns;
	Py_buffer view;
	ARGS(3);
	if (forked) return refuse_forked("ring_next");
	if (id(args[0], &addr) || id(args[2], &spin_ns)) return NULL;
	if (addr == 0) {
		PyErr_SetString(PyExc_ValueError, "ring_next: address 0, expected an event ring's address (EventRing.Addr())");
		return NULL;
	}
	if (spin_ns < 0 || spin_ns > 1000000000) {
		PyErr_Format(PyExc_ValueError, "ring_next: spin_ns=%lld, expected 0 to 1e9", (long long)spin_ns);
		return NULL;
	}
	int64_t* w = (int64_t*)(intptr_t)addr;
	if (w[VG_RING_MAGIC] != VG_RING_MAGIC_VALUE || w[VG_RING_VERSION] != VG_RING_VERSION_VALUE ||
	    w[VG_RING_FIELDS] != EV_FIELDS || w[VG_RING_SLOTS] <= 0) {
		PyErr_SetString(PyExc_ValueError, "ring_next: not an event ring of this build (magic, version or fields)");
		return NULL;
	}
	if (PyObject_GetBuffer(args[1], &view, PyBUF_WRITABLE | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
	if (view.itemsize != 8 || view.format == NULL || (strcmp(view.format, "q") != 0 && strcmp(view.format, "l") != 0 &&
	                                                  strcmp(view.format, "<q") != 0 && strcmp(view.format, "=q") != 0)) {
		PyErr_Format(PyExc_TypeError, "ring_next: records of format %s, expected int64", view.format);
		PyBuffer_Release(&view);
		return NULL;
	}
	uint64_t max = (uint64_t)(view.len / 8 / EV_FIELDS), slots = (uint64_t)w[VG_RING_SLOTS];
	if (max == 0) {
		PyBuffer_Release(&view);
		PyErr_SetString(PyExc_ValueError, "ring_next: records hold no whole record, expected room for one at least");
		return NULL;
	}
	uint64_t* head = (uint64_t*)&w[VG_RING_HEAD];
	uint64_t* tailp = (uint64_t*)&w[VG_RING_TAIL];
	uint64_t* closed = (uint64_t*)&w[VG_RING_CLOSED];
	uint64_t tail = __atomic_load_n(tailp, __ATOMIC_SEQ_CST);
	/* The acknowledgement, then the waiters: Go's waitAcked stores its count
	 * before it reads acked again, so one side sees the other's store. Only
	 * an acknowledgement that moved can satisfy a waiter (Go's
	 * eventQueue.ack). */
	uint64_t prev = __atomic_exchange_n((uint64_t*)&w[VG_RING_ACKED], tail, __ATOMIC_SEQ_CST);
	if (prev != tail && __atomic_load_n((uint64_t*)&w[VG_RING_WAITERS], __ATOMIC_SEQ_CST) != 0) {
		PyBuffer_Release(&view);
		return PyLong_FromLong(-2);
	}
	uint64_t h = __atomic_load_n(head, __ATOMIC_SEQ_CST);
	if (h == tail && spin_ns > 0 && __atomic_load_n(closed, __ATOMIC_SEQ_CST) == 0) {
		/* The spin: reads of head (a cache line the producers write once per
		 * item) and, every 64 rounds, the clock. No pause instruction: on a
		 * VM it can make the hypervisor take the CPU away (pause-loop
		 * exiting), the very gap the spin is there to avoid. */
		Py_BEGIN_ALLOW_THREADS
		struct timespec t0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		int64_t deadline = (int64_t)t0.tv_sec * 1000000000 + t0.tv_nsec + spin_ns;
		for (uint64_t i = 1;; i++) {
			h = __atomic_load_n(head, __ATOMIC_SEQ_CST);
			if (h != tail || __atomic_load_n(closed, __ATOMIC_SEQ_CST) != 0) break;
			if ((i & 63) == 0) {
				struct timespec t;
				clock_gettime(CLOCK_MONOTONIC, &t);
				if ((int64_t)t.tv_sec * 1000000000 + t.tv_nsec >= deadline) break;
			}
		}
		Py_END_ALLOW_THREADS
	}
	if (h == tail) {
		/* closed before head: a record published before the close is seen. */
		int done = __atomic_load_n(closed, __ATOMIC_SEQ_CST) != 0 && __atomic_load_n(head, __ATOMIC_SEQ_CST) == tail;
		PyBuffer_Release(&view);
		return PyLong_FromLong(done ? -1 : 0);
	}
	uint64_t n = h - tail < max ? h - tail : max;
	int64_t* dst = (int64_t*)view.buf;
	for (uint64_t i = 0; i < n; i++) {
		const int64_t* rec = w + VG_RING_HEADER + ((tail + i) % slots) * EV_FIELDS;
		memcpy(dst + i * EV_FIELDS, rec, EV_FIELDS * sizeof(int64_t));
	}
	__atomic_store_n(tailp, tail + n, __ATOMIC_SEQ_CST); /* frees the slots for the producers */
	PyBuffer_Release(&view);
	return PyLong_FromUnsignedLongLong(n);
}

/* run_events(engine, records, start, n) -> int | (int, exception)
 *
 * Runs records start..n-1 of `records` (a buffer of int64 event records)
 * as Engine._run_batch's loop does, for as long as each is "simple": an
 * update, segment, volume, scan or event-marker record of an endpoint of
 * engine._endpoints whose update/segment/volume records gather no
 * aggregated segments (aggregate_segment_callback and
 * block_segment_callback None), while engine._fatal is None. For each it
 * reads the kind's handler from the endpoint when the record runs (a
 * handler replaced by an earlier one takes effect at once), skips a None
 * one, records the latency into engine._latency exactly as the Python
 * loop does, and calls it with the same int arguments.
 *
 * Returns the index of the first record it did not run (n when it ran
 * them all): Python runs that one. When a handler raises, returns
 * (index, exception) for Python to route through _callback_failed or
 * _handler_exited; the records after it have not run. Anything unusual (a
 * latency recorder that is not a list, an endpoint index out of range, an
 * attribute that cannot be read) also stops the loop, its error cleared:
 * Python meets it again on that record, so the C code decides nothing the
 * Python loop would decide differently. Only a bad buffer, or a failure to
 * record a latency, raises here. */
static PyObject* run_events(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	PyObject *engine, *eps = NULL, *lat = NULL, *ret = NULL;
	Py_ssize_t start, n, i, cap = 0;
	int64_t base = 0;
	Py_buffer view;
	const int64_t* ev;
	ARGS(4);
	if (forked) return refuse_forked("run_events");
	engine = args[0];
	start = PyLong_AsSsize_t(args[2]);
	if (start == -1 && PyErr_Occurred()) return NULL;
	n = PyLong_AsSsize_t(args[3]);
	if (n == -1 && PyErr_Occurred()) return NULL;
	if (PyObject_GetBuffer(args[1], &view, PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0) return NULL;
	if (view.itemsize != 8 || view.format == NULL || strchr("qlQL", view.format[strlen(view.format) - 1]) == NULL) {
		PyErr_Format(PyExc_TypeError, "run_events: records of format %s, expected int64", view.format);
		goto out;
	}
	if (start < 0 || n < start || n > view.len / (Py_ssize_t)(EV_FIELDS * sizeof(int64_t))) {
		PyErr_Format(PyExc_ValueError, "run_events: records %zd..%zd, expected 0 <= start <= n <= %zd", start, n,
		             view.len / (Py_ssize_t)(EV_FIELDS * sizeof(int64_t)));
		goto out;
	}
	ev = (const int64_t*)view.buf;
	i = start;
	/* What _run_batch reads once per batch: the endpoints and the latency
	 * recorder (set before start, fixed while the dispatcher runs). */
	eps = PyObject_GetAttr(engine, s_endpoints);
	lat = eps ? PyObject_GetAttr(engine, s_latency) : NULL;
	if (lat == NULL || !PyList_CheckExact(eps)) goto unusual;
	if (lat == Py_None) {
		Py_CLEAR(lat);
	} else {
		PyObject *c, *b;
		if (!PyList_CheckExact(lat) || (c = PyObject_GetAttr(engine, s_latency_cap)) == NULL) goto unusual;
		cap = PyLong_AsSsize_t(c);
		Py_DECREF(c);
		if ((b = PyObject_GetAttr(engine, s_latency_base)) == NULL) goto unusual;
		base = PyLong_AsLongLong(b);
		Py_DECREF(b);
		if (PyErr_Occurred()) goto unusual;
	}
	if (attr_is_none(engine, s_fatal) != 1) goto unusual; /* stopping after a handler's BaseException */
	for (; i < n; i++) {
		const int64_t* r = ev + i * EV_FIELDS;
		int64_t kind = r[0], epi = r[1];
		PyObject *ep, *name, *cb, *res, *argv[4];
		Py_ssize_t argc = 0;
		switch (kind) {
		case EV_UPDATE: name = s_update_cb; break;
		case EV_SEGMENT: name = s_segment_cb; argc = 4; break;
		case EV_VOLUME: name = s_volume_cb; argc = 3; break;
		case EV_SCAN: name = s_scan_cb; argc = 2; break;
		case EV_MARKER: name = s_event_cb; argc = 2; break;
		default: goto stop;
		}
		if (epi < 0 || epi >= PyList_GET_SIZE(eps)) goto stop;
		ep = Py_NewRef(PyList_GET_ITEM(eps, epi)); /* held: a handler may change the list */
		if (kind != EV_SCAN && kind != EV_MARKER &&
		    (attr_is_none(ep, s_aggregate) != 1 || attr_is_none(ep, s_block) != 1)) {
			Py_DECREF(ep);
			goto unusual; /* aggregated segments: Python's _aggregate */
		}
		cb = PyObject_GetAttr(ep, name);
		Py_DECREF(ep);
		if (cb == NULL) goto unusual;
		if (cb == Py_None) {
			Py_DECREF(cb);
			continue;
		}
		if (lat != NULL && PyList_GET_SIZE(lat) < cap) {
			int64_t t = now_ns();
			PyObject* v = t == -1 && PyErr_Occurred() ? NULL : PyLong_FromLongLong(t - base - r[6]);
			if (v == NULL || PyList_Append(lat, v) < 0) {
				Py_XDECREF(v);
				Py_DECREF(cb);
				goto out;
			}
			Py_DECREF(v);
		}
		for (Py_ssize_t k = 0; k < argc; k++) {
			if ((argv[k] = PyLong_FromLongLong(r[2 + k])) == NULL) {
				while (k--) Py_DECREF(argv[k]);
				Py_DECREF(cb);
				goto out;
			}
		}
		res = PyObject_Vectorcall(cb, argv, (size_t)argc, NULL);
		for (Py_ssize_t k = 0; k < argc; k++) Py_DECREF(argv[k]);
		Py_DECREF(cb);
		if (res == NULL) {
			PyObject* exc = raised();
			ret = Py_BuildValue("(nN)", i, exc);
			goto out;
		}
		Py_DECREF(res);
		/* Only a handler (through the engine) sets _fatal: check after each. */
		if (attr_is_none(engine, s_fatal) != 1) {
			i++;
			goto unusual;
		}
	}
	goto stop;
unusual:
	/* Python runs record i itself, and meets the same condition (or error)
	 * there: the C loop makes no decision of its own. */
	PyErr_Clear();
stop:
	ret = PyLong_FromSsize_t(i);
out:
	Py_XDECREF(eps);
	Py_XDECREF(lat);
	PyBuffer_Release(&view);
	return ret;
}

/* bind(record, wait_event, query_event, query_stream, sync_stream,
 * sync_event): adopt the Go fast functions (callables taking int ids and
 * returning an int status). Called once by _core; a later call replaces them. */
static PyObject* bind(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	ARGS(GO_N);
	for (int i = 0; i < GO_N; i++) {
		if (!PyCallable_Check(args[i])) {
			PyErr_Format(PyExc_TypeError, "bind: argument %d is %R, expected a callable", i, args[i]);
			return NULL;
		}
	}
	for (int i = 0; i < GO_N; i++) Py_XSETREF(go_fast[i], Py_NewRef(args[i]));
	Py_RETURN_NONE;
}

/* init(address): adopt the shim's table (pyapi.FastAPI()). It checks the
 * magic and version so that a stale build of either side is refused (the
 * caller then keeps the Go fast path) rather than called with the wrong
 * layout. Returns True once adopted. */
static PyObject* init(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	const vg_fast_api* t;
	ARGS(1);
	if (forked) Py_RETURN_FALSE;
	adopted = 1;
	t = (const vg_fast_api*)PyLong_AsVoidPtr(args[0]);
	if (t == NULL) {
		if (PyErr_Occurred()) return NULL;
		Py_RETURN_FALSE;
	}
	if (t->magic != VG_FAST_MAGIC || t->version != VG_FAST_VERSION) Py_RETURN_FALSE;
	api = t;
	Py_RETURN_TRUE;
}

static PyMethodDef methods[] = {
    {"init", (PyCFunction)(void (*)(void))init, METH_FASTCALL, "init(address) -> bool: adopt the shim's table."},
    {"bind", (PyCFunction)(void (*)(void))bind, METH_FASTCALL,
     "bind(record, wait_event, query_event, query_stream, sync_stream, sync_event): adopt the Go fast functions."},
    {"event_record", (PyCFunction)(void (*)(void))event_record, METH_FASTCALL, "event_record(stream_id, event_id) -> int"},
    {"event_query", (PyCFunction)(void (*)(void))event_query, METH_FASTCALL, "event_query(event_id) -> int"},
    {"event_synchronize", (PyCFunction)(void (*)(void))event_synchronize, METH_FASTCALL,
     "event_synchronize(event_id) -> int"},
    {"stream_synchronize", (PyCFunction)(void (*)(void))stream_synchronize, METH_FASTCALL,
     "stream_synchronize(stream_id) -> int"},
    {"stream_wait_event", (PyCFunction)(void (*)(void))stream_wait_event, METH_FASTCALL,
     "stream_wait_event(stream_id, event_id) -> int"},
    {"stream_query", (PyCFunction)(void (*)(void))stream_query, METH_FASTCALL, "stream_query(stream_id) -> int"},
    {"ring_next", (PyCFunction)(void (*)(void))ring_next, METH_FASTCALL,
     "ring_next(address, records, spin_ns) -> int: the dispatcher's wait on the engine's event ring "
     "(Engine._dispatch): records taken, 0 (spin ran out), -1 (closed and drained) or -2 (wake the waiters)."},
    {"run_events", (PyCFunction)(void (*)(void))run_events, METH_FASTCALL,
     "run_events(engine, records, start, n) -> int | (int, exception): the dispatcher's loop over simple event "
     "records (Engine._run_batch)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastcall",
    "vortexgo's C fast path for per-call stream and event operations (see gosrc/cuda/fastpath.h).", -1, methods,
};

static int intern(PyObject** out, const char* s) {
	*out = PyUnicode_InternFromString(s);
	return *out == NULL ? -1 : 0;
}

PyMODINIT_FUNC PyInit__fastcall(void) {
	PyObject* m;
	if (intern(&s_record_event_slow, "_record_event_slow") || intern(&s_wait_event_slow, "_wait_event_slow") ||
	    intern(&s_record_slow, "_record_slow") || intern(&s_synchronize_slow, "_synchronize_slow") ||
	    intern(&s_is_complete_slow, "_is_complete_slow") || intern(&s_endpoints, "_endpoints") ||
	    intern(&s_fatal, "_fatal") || intern(&s_latency, "_latency") || intern(&s_latency_cap, "_latency_cap") ||
	    intern(&s_latency_base, "_latency_base") || intern(&s_aggregate, "aggregate_segment_callback") ||
	    intern(&s_block, "block_segment_callback") || intern(&s_update_cb, "update_callback") ||
	    intern(&s_segment_cb, "segment_callback") || intern(&s_volume_cb, "volume_callback") ||
	    intern(&s_scan_cb, "scan_callback") || intern(&s_event_cb, "event_callback"))
		return NULL;
#ifndef __linux__
	{
		PyObject* time = PyImport_ImportModule("time");
		if (time == NULL) return NULL;
		monotonic_ns = PyObject_GetAttrString(time, "monotonic_ns");
		Py_DECREF(time);
		if (monotonic_ns == NULL) return NULL;
	}
#endif
	if (PyType_Ready(&StreamBaseType) < 0 || PyType_Ready(&EventBaseType) < 0) return NULL;
	if (pthread_atfork(NULL, NULL, forget_in_child) != 0) {
		PyErr_SetString(PyExc_ImportError, "_fastcall: pthread_atfork failed");
		return NULL;
	}
	m = PyModule_Create(&module);
	if (m == NULL) return NULL;
	if (PyModule_AddObjectRef(m, "StreamBase", (PyObject*)&StreamBaseType) < 0 ||
	    PyModule_AddObjectRef(m, "EventBase", (PyObject*)&EventBaseType) < 0 ||
	    PyModule_AddIntConstant(m, "EVENT_FIELDS", EV_FIELDS) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
