/* _fastcall: vortexgo's per-call stream and event operations without Go.
 *
 * Each function takes the ids of Stream.FastID/Event.FastID (ints) and calls
 * the CUDA shim's fast functions (gosrc/cuda/fastpath.h), which check the
 * id's generation, mark the entry in use against a concurrent close, make
 * the entry's context current and call the driver. The table's address comes
 * from the Go core once, through init(address).
 *
 * Returns: 0 done / not ready, 1 ready (queries), -1 "not done here": the
 * caller repeats the call through the method path, which raises the full
 * error. Before init, every call returns -1.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "fastpath.h"

static const vg_fast_api* api;

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

/* init(address): adopt the shim's table (pyapi.FastAPI()). It checks the
 * magic and version so that a stale build of either side is refused (the
 * caller then keeps the Go fast path) rather than called with the wrong
 * layout. Returns True once adopted. */
static PyObject* init(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
	const vg_fast_api* t;
	ARGS(1);
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
    {"event_record", (PyCFunction)(void (*)(void))event_record, METH_FASTCALL, "event_record(stream_id, event_id) -> int"},
    {"event_query", (PyCFunction)(void (*)(void))event_query, METH_FASTCALL, "event_query(event_id) -> int"},
    {"event_synchronize", (PyCFunction)(void (*)(void))event_synchronize, METH_FASTCALL,
     "event_synchronize(event_id) -> int"},
    {"stream_synchronize", (PyCFunction)(void (*)(void))stream_synchronize, METH_FASTCALL,
     "stream_synchronize(stream_id) -> int"},
    {"stream_wait_event", (PyCFunction)(void (*)(void))stream_wait_event, METH_FASTCALL,
     "stream_wait_event(stream_id, event_id) -> int"},
    {"stream_query", (PyCFunction)(void (*)(void))stream_query, METH_FASTCALL, "stream_query(stream_id) -> int"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_fastcall",
    "vortexgo's C fast path for per-call stream and event operations (see gosrc/cuda/fastpath.h).", -1, methods,
};

PyMODINIT_FUNC PyInit__fastcall(void) { return PyModule_Create(&module); }
