/*
 * _shardpipe.c - the CPython extension under the shardpipe package.
 *
 * It uses only include/shardpipe.h and the buffer protocol (no NumPy C
 * API): appends take any C-contiguous buffer, reads fill a writable one
 * that the Python layer allocates as a NumPy array.  Every library call
 * that can take time runs with the GIL released.  The Python layer
 * (__init__.py) gives the classes their public shape; the exception
 * classes it defines are handed to this module by _set_errors() so that a
 * library code raises the family's class with the library's message.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include <shardpipe.h>

/* Appends are cut into spans of this size so that Ctrl-C is seen between
 * them; far above the library's batch, so the cut costs nothing. */
#define APPEND_SPAN ((size_t)64 << 20)

/* The exception being raised, taken and given back whole (3.12's
 * PyErr_GetRaisedException, spelled so that 3.11 has it too). */
static PyObject *exc_take(void)
{
#if PY_VERSION_HEX >= 0x030C0000
	return PyErr_GetRaisedException();
#else
	PyObject *t, *v, *tb;

	PyErr_Fetch(&t, &v, &tb);
	PyErr_NormalizeException(&t, &v, &tb);
	if (v != NULL && tb != NULL)
		PyException_SetTraceback(v, tb);
	Py_XDECREF(t);
	Py_XDECREF(tb);
	return v;
#endif
}

static void exc_give(PyObject *v)
{
#if PY_VERSION_HEX >= 0x030C0000
	PyErr_SetRaisedException(v);
#else
	PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(v)), v,
		      PyException_GetTraceback(v));
#endif
}

/* Indexed by shardpipe_error; set by _set_errors(). */
static PyObject *error_classes;

/* Raise the class of `code` with `msg`; returns NULL. */
static PyObject *raise_code(int code, const char *msg)
{
	PyObject *cls = NULL, *exc;

	if (error_classes != NULL && code >= 0 &&
	    code < PyTuple_GET_SIZE(error_classes))
		cls = PyTuple_GET_ITEM(error_classes, code);
	if (cls == NULL || cls == Py_None)
		cls = PyExc_RuntimeError;
	if (msg == NULL || *msg == '\0')
		msg = shardpipe_strerror(code);
	exc = PyObject_CallFunction(cls, "si", msg, code);
	if (exc != NULL) {
		PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
		Py_DECREF(exc);
	}
	return NULL;
}

/* "strerror: message", the CLI's form. */
static PyObject *raise_lib(int code, const char *detail)
{
	char buf[1024];

	if (detail != NULL && *detail != '\0')
		snprintf(buf, sizeof(buf), "%s: %s", shardpipe_strerror(code),
			 detail);
	else
		snprintf(buf, sizeof(buf), "%s", shardpipe_strerror(code));
	return raise_code(code, buf);
}

/* ---------------------------------------------------------------- */
/* Streams                                                            */

typedef struct {
	PyObject_HEAD
	shardpipe_stream *s;
	PyThread_type_lock lock;   /* one call into the stream at a time */
	PyObject *sink;            /* the callable, or NULL */
	PyObject *sink_exc;        /* what the sink raised, until re-raised */
	int index_start;           /* the sink's shards put the index first */
	size_t itemsize;
	shardpipe_dtype dtype;
	char backend[32];
	int rc;                    /* the library's sticky error, once seen */
	shardpipe_stats last;      /* the counters as close began */
	int have_last;
	/* What the stream was opened with: dims' sizes (dim 0 the bound, 0
	 * unbounded), one element of fill, and the row of dim 0 its first
	 * append lands on (a reopen's: the rows the store advertised). */
	int rank;
	uint64_t shape[SHARDPIPE_MAX_RANK];
	int append_dim;        /* the storage dim rows run along (§3.3) */
	unsigned char fill[8];
	uint64_t start_row;
	int nfields;           /* frame_meta fields, "skipped" not counted */
} StreamObject;

static PyObject *u64_tuple(const uint64_t *v, int n);

static int sink_shard(void *user, const uint64_t *coords, int rank,
		      const void *data, size_t data_bytes, const void *index,
		      size_t index_bytes)
{
	StreamObject *self = user;
	PyGILState_STATE g = PyGILState_Ensure();
	PyObject *tup = NULL, *blob = NULL, *res = NULL;
	int rc = 1;

	/* After a failure the library stops calling, but be safe. */
	if (self->sink_exc != NULL)
		goto out;
	tup = PyTuple_New(rank);
	if (tup == NULL)
		goto fail;
	for (int d = 0; d < rank; d++) {
		PyObject *v = PyLong_FromUnsignedLongLong(coords[d]);

		if (v == NULL)
			goto fail;
		PyTuple_SET_ITEM(tup, d, v);
	}
	blob = PyBytes_FromStringAndSize(NULL,
					 (Py_ssize_t)(data_bytes + index_bytes));
	if (blob == NULL)
		goto fail;
	{
		char *p = PyBytes_AS_STRING(blob);

		if (self->index_start) {
			memcpy(p, index, index_bytes);
			memcpy(p + index_bytes, data, data_bytes);
		} else {
			memcpy(p, data, data_bytes);
			memcpy(p + data_bytes, index, index_bytes);
		}
	}
	res = PyObject_CallFunctionObjArgs(self->sink, tup, blob, NULL);
	if (res != NULL) {
		rc = 0;
		goto out;
	}
fail:
	self->sink_exc = exc_take();
out:
	Py_XDECREF(res);
	Py_XDECREF(blob);
	Py_XDECREF(tup);
	PyGILState_Release(g);
	return rc;
}

/* Take the stream's lock; refuse a second thread rather than let two
 * calls into one stream run at once. */
static int stream_enter(StreamObject *self)
{
	if (self->s == NULL) {
		raise_code(SHARDPIPE_ERR_CLOSED, "the stream is closed");
		return -1;
	}
	if (!PyThread_acquire_lock(self->lock, NOWAIT_LOCK)) {
		PyErr_SetString(PyExc_RuntimeError,
				"the stream is in use by another thread (calls "
				"on one stream must not run concurrently)");
		return -1;
	}
	return 0;
}

static void stream_leave(StreamObject *self)
{
	PyThread_release_lock(self->lock);
}

/* Turn a failed call's code into an exception: what the sink raised, if
 * it is why, else the library's class and message. */
static PyObject *stream_fail(StreamObject *self, int rc, const char *msg)
{
	self->rc = rc;
	if (self->sink_exc != NULL) {
		PyObject *e = self->sink_exc;

		self->sink_exc = NULL;
		exc_give(e);
		return NULL;
	}
	return raise_lib(rc, msg);
}

static PyObject *stream_close_locked(StreamObject *self)
{
	shardpipe_stream *s = self->s;
	char msg[512];
	int rc;

	self->s = NULL;
	self->have_last = shardpipe_stream_stats(s, &self->last) == SHARDPIPE_OK;
	Py_BEGIN_ALLOW_THREADS
	rc = shardpipe_stream_close(s);
	Py_END_ALLOW_THREADS
	if (rc != SHARDPIPE_OK) {
		/* close frees the stream; its message is left as this
		 * thread's last error. */
		snprintf(msg, sizeof(msg), "%s", shardpipe_last_error_message());
		return stream_fail(self, rc, msg);
	}
	if (self->sink_exc != NULL)
		return stream_fail(self, SHARDPIPE_ERR_SINK, NULL);
	Py_RETURN_NONE;
}

/* A group (shardpipe(3), "Groups"): its streams are Streams opened with
 * group= and array=; they keep the shared threads alive on their own. */
typedef struct {
	PyObject_HEAD
	shardpipe_group *g;
} GroupObject;

static int group_init(GroupObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "create", "threads", NULL };
	PyObject *path_obj, *path_bytes;
	int create, threads, rc;
	shardpipe_group *g;

	if (!PyArg_ParseTupleAndKeywords(args, kw, "Opi", kwlist, &path_obj,
					 &create, &threads))
		return -1;
	if (self->g != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "group already open");
		return -1;
	}
	if (!PyUnicode_FSConverter(path_obj, &path_bytes))
		return -1;
	Py_BEGIN_ALLOW_THREADS
	rc = create ? shardpipe_group_create(&g, PyBytes_AS_STRING(path_bytes),
					     threads)
		    : shardpipe_group_open(&g, PyBytes_AS_STRING(path_bytes),
					   threads);
	Py_END_ALLOW_THREADS
	Py_DECREF(path_bytes);
	if (rc != SHARDPIPE_OK) {
		raise_lib(rc, shardpipe_last_error_message());
		return -1;
	}
	self->g = g;
	return 0;
}

static void group_dealloc(GroupObject *self)
{
	shardpipe_group_close(self->g);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *group_close(GroupObject *self, PyObject *unused)
{
	(void)unused;
	shardpipe_group_close(self->g);
	self->g = NULL;
	Py_RETURN_NONE;
}

static PyObject *group_get_arrays(GroupObject *self, void *closure)
{
	size_t n = self->g != NULL ? shardpipe_group_array_count(self->g) : 0;
	PyObject *t = PyTuple_New((Py_ssize_t)n);

	(void)closure;
	for (size_t i = 0; t != NULL && i < n; i++) {
		PyObject *v = PyUnicode_FromString(
			shardpipe_group_array_name(self->g, i));

		if (v == NULL) {
			Py_CLEAR(t);
			break;
		}
		PyTuple_SET_ITEM(t, (Py_ssize_t)i, v);
	}
	return t;
}

static PyMethodDef group_methods[] = {
	{ "close", (PyCFunction)group_close, METH_NOARGS,
	  "close(): release the group; its streams stay usable." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef group_getset[] = {
	{ "arrays", (getter)group_get_arrays, NULL,
	  "the arrays the group held when opened, sorted", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject GroupType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "shardpipe._shardpipe.Group",
	.tp_basicsize = sizeof(GroupObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_new = PyType_GenericNew,
	.tp_init = (initproc)group_init,
	.tp_dealloc = (destructor)group_dealloc,
	.tp_methods = group_methods,
	.tp_getset = group_getset,
};

/* A plate (shardpipe(3), "Plates"; doc/design.md §28.8): its fields
 * are Streams opened with plate= and field=.  The library lets calls on
 * one plate run from several threads, but a field's open holds the
 * plate's mutex throughout anyway; the lock here keeps close() from
 * freeing the plate under an open that runs with the GIL released. */
typedef struct {
	PyObject_HEAD
	shardpipe_plate *p;
	PyThread_type_lock lock;
} PlateObject;

/* The strs of the sequence seq (the Python layer has checked their kind)
 * as UTF-8 pointers into them, living as long as seq does; *out is
 * PyMem_Free'd by the caller.  0, or -1 with an exception set. */
static int utf8_list(PyObject *seq, const char ***out, size_t *n)
{
	Py_ssize_t len;

	*out = NULL;
	*n = 0;
	if (seq == Py_None)
		return 0;
	len = PySequence_Size(seq);
	if (len < 0)
		return -1;
	*out = PyMem_Calloc((size_t)len + 1, sizeof(**out));
	if (*out == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < len; i++) {
		PyObject *v = PySequence_GetItem(seq, i);

		if (v == NULL)
			return -1;
		(*out)[i] = PyUnicode_AsUTF8(v);
		Py_DECREF(v);
		if ((*out)[i] == NULL)
			return -1;
	}
	*n = (size_t)len;
	return 0;
}

static PyObject *plate_new_obj(PyTypeObject *type, PyObject *args,
			       PyObject *kw)
{
	PlateObject *self = (PlateObject *)type->tp_alloc(type, 0);

	(void)args;
	(void)kw;
	if (self == NULL)
		return NULL;
	self->lock = PyThread_allocate_lock();
	if (self->lock == NULL) {
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	return (PyObject *)self;
}

/* Plate(path, threads, rows, columns, field_count, name, acquisitions):
 * rows None opens the plate at path, else one is made there.  rows,
 * columns and acquisitions are tuples of str (or None). */
static int plate_init(PlateObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = { "path", "threads", "rows", "columns",
				  "field_count", "name", "acquisitions",
				  NULL };
	PyObject *path_obj, *path_bytes, *rows = Py_None, *cols = Py_None;
	PyObject *acqs = Py_None;
	const char **r = NULL, **c = NULL, **a = NULL;
	shardpipe_plate_desc desc;
	shardpipe_plate *p = NULL;
	int threads, rc, ret = -1;

	shardpipe_plate_desc_init(&desc);
	if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi|OOizO", kwlist,
					 &path_obj, &threads, &rows, &cols,
					 &desc.field_count, &desc.name,
					 &acqs))
		return -1;
	if (self->p != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "plate already open");
		return -1;
	}
	if (!PyUnicode_FSConverter(path_obj, &path_bytes))
		return -1;
	if (utf8_list(rows, &r, &desc.nrows) != 0 ||
	    utf8_list(cols, &c, &desc.ncolumns) != 0 ||
	    utf8_list(acqs, &a, &desc.nacquisitions) != 0)
		goto out;
	desc.rows = r;
	desc.columns = c;
	desc.acquisitions = a;
	Py_BEGIN_ALLOW_THREADS
	rc = rows != Py_None
		? shardpipe_plate_create(&p, PyBytes_AS_STRING(path_bytes),
					 &desc, threads)
		: shardpipe_plate_open(&p, PyBytes_AS_STRING(path_bytes),
				       threads);
	Py_END_ALLOW_THREADS
	if (rc != SHARDPIPE_OK) {
		raise_lib(rc, shardpipe_last_error_message());
		goto out;
	}
	self->p = p;
	ret = 0;
out:
	Py_DECREF(path_bytes);
	PyMem_Free(r);
	PyMem_Free(c);
	PyMem_Free(a);
	return ret;
}

static void plate_dealloc(PlateObject *self)
{
	shardpipe_plate_close(self->p);
	if (self->lock != NULL)
		PyThread_free_lock(self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *plate_close(PlateObject *self, PyObject *unused)
{
	shardpipe_plate *p;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(self->lock, WAIT_LOCK);
	Py_END_ALLOW_THREADS
	p = self->p;
	self->p = NULL;
	PyThread_release_lock(self->lock);
	shardpipe_plate_close(p);
	Py_RETURN_NONE;
}

static PyObject *plate_get_closed(PlateObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->p == NULL);
}

static PyMethodDef plate_methods[] = {
	{ "close", (PyCFunction)plate_close, METH_NOARGS,
	  "close(): release the plate; its fields' streams stay usable." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef plate_getset[] = {
	{ "closed", (getter)plate_get_closed, NULL,
	  "True once the plate is closed.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject PlateType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "shardpipe._shardpipe.Plate",
	.tp_basicsize = sizeof(PlateObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The library's plate; see shardpipe.Plate.",
	.tp_new = plate_new_obj,
	.tp_init = (initproc)plate_init,
	.tp_dealloc = (destructor)plate_dealloc,
	.tp_methods = plate_methods,
	.tp_getset = plate_getset,
};

/* Entry d of the sequence seq as a uint64_t: 0, or -1 with an exception
 * set (the Python layer has checked kinds and ranges). */
static int seq_u64(PyObject *seq, int d, uint64_t *out)
{
	PyObject *v = PySequence_GetItem(seq, d);

	if (v == NULL)
		return -1;
	*out = PyLong_AsUnsignedLongLong(v);
	Py_DECREF(v);
	return PyErr_Occurred() ? -1 : 0;
}

/* In a reopen, a given sequence `what` must have one entry per dimension
 * of the store's array: 0, or -1 with InvalidDescriptionError set. */
static int reopen_rank(PyObject *seq, const char *what, int rank,
		       const char *path)
{
	Py_ssize_t n = PySequence_Size(seq);
	char msg[640];

	if (n < 0)
		return -1;
	if (n == rank)
		return 0;
	snprintf(msg, sizeof(msg), "%s has %zd entries; the array at %.500s "
		 "has %d dimensions", what, n, path, rank);
	raise_code(SHARDPIPE_ERR_RANK, msg);
	return -1;
}

/* storage_order (None: the identity) into desc, whose rank is set: one
 * int per dim, checked by the package; whether it is a permutation, by
 * the library. */
static int order_into(PyObject *order, shardpipe_desc *desc)
{
	Py_ssize_t n;

	if (order == Py_None)
		return 0;
	if ((n = PySequence_Size(order)) < 0)
		return -1;
	if (n != desc->rank) {
		PyErr_Format(PyExc_ValueError, "storage_order has %zd entries, "
			     "the array %d dims", n, desc->rank);
		return -1;
	}
	for (int d = 0; d < desc->rank; d++) {
		PyObject *v = PySequence_GetItem(order, d);

		if (v == NULL)
			return -1;
		desc->storage_order[d] = (int)PyLong_AsLong(v);
		Py_DECREF(v);
		if (PyErr_Occurred())
			return -1;
	}
	return 0;
}

/* A storage order given before shardpipe_desc_from_store() reads a
 * store (mode "a"): where it stores the append dim as another dim, the
 * store's rows run along that one (design §3.3), and the library needs to
 * know before it reads.  Its length is the rank it takes the store to
 * have; one of another length is the library's to ignore and the
 * caller's check after the read to refuse. */
static int order_before_store(PyObject *order, shardpipe_desc *desc)
{
	Py_ssize_t n;

	if (order == Py_None)
		return 0;
	if ((n = PySequence_Size(order)) < 0)
		return -1;
	if (n < 1 || n > SHARDPIPE_MAX_RANK)
		return 0;
	desc->rank = (int)n;
	return order_into(order, desc);
}

/*
 * Stream(path, shape, chunks, shards, dtype, codec, dimension_names,
 * index_location, backend, threads, overwrite, sink, fill_value,
 * write_empty_chunks, durable, max_memory, attributes, [group, array,
 * pyramid fields], reopen, truncate, [plate, field]).  shards is in
 * elements; chunks per shard are computed here, once the chunks are
 * known.  field is (row, column, index, acquisition id or -1): the field
 * of the Plate plate the stream writes (shardpipe_plate_field).
 *
 * A new array (reopen false) needs every array field.  reopen true
 * continues the array at path (shardpipe_stream_reopen): the description
 * starts as the store's (shardpipe_desc_from_store), each array field
 * given (not None) is set over it, and the library refuses a difference
 * from the store, naming the field; shape[0] is this run's bound.
 */
static int stream_init(StreamObject *self, PyObject *args, PyObject *kw)
{
	static char *kwlist[] = {
		"path", "shape", "chunks", "shards", "dtype", "codec",
		"dimension_names", "index_location", "backend", "threads",
		"overwrite", "sink", "fill_value", "write_empty_chunks",
		"durable", "max_memory", "attributes", "group", "array",
		"downsample", "method", "append_method", "max_levels", "ngff",
		"units", "scales", "axis_types", "reopen", "truncate",
		"max_levels_dim", "plate", "field", "frame_fields", "storage_order",
		"region", "publish", NULL,
	};
	PyObject *frame_obj = Py_None;
	shardpipe_frame_field ff[SHARDPIPE_MAX_FRAME_FIELDS];
	PyObject *path_obj, *shape, *chunks, *shards, *names, *sink, *attrs;
	PyObject *group = Py_None, *plate = Py_None, *field = Py_None;
	const char *array = NULL, *path = NULL, *row = NULL, *col = NULL;
	int field_index = 0, acquisition = -1;
	PyObject *units = Py_None, *scales = Py_None, *axis_types = Py_None;
	PyObject *stops = Py_None, *order = Py_None;
	PyObject *region = Py_None, *publish = Py_None;
	uint64_t lo[SHARDPIPE_MAX_RANK] = { 0 }, hi[SHARDPIPE_MAX_RANK] = { 0 };
	unsigned int downsample = 0;
	int method = 0, append_method = -1, max_levels = 0, ngff = 0;
	int reopen = 0, truncate = 0;
	PyObject *path_bytes = NULL, *name_bytes[SHARDPIPE_MAX_RANK] = { 0 };
	const char *dtype, *codec, *index_location, *backend, *fill;
	Py_ssize_t fill_len, nattrs = 0;
	int threads, overwrite, write_empty, durable, rc, ret = -1;
	unsigned long long max_memory;
	uint64_t rows = 0;
	shardpipe_desc desc;
	shardpipe_attribute *pairs = NULL;
	shardpipe_stream *s = NULL;
	shardpipe_sink sk;

	if (!PyArg_ParseTupleAndKeywords(args, kw,
					 "OOOOzzOzsipOz#ppKO|OzIiiipOOOppOOOOOOO",
					 kwlist, &path_obj, &shape, &chunks,
					 &shards, &dtype, &codec, &names,
					 &index_location, &backend, &threads,
					 &overwrite, &sink, &fill, &fill_len,
					 &write_empty, &durable, &max_memory,
					 &attrs, &group, &array, &downsample,
					 &method, &append_method, &max_levels,
					 &ngff, &units, &scales, &axis_types,
					 &reopen, &truncate, &stops, &plate,
					 &field, &frame_obj, &order, &region,
					 &publish))
		return -1;
	if (group != Py_None && (!PyObject_TypeCheck(group, &GroupType) ||
				 ((GroupObject *)group)->g == NULL)) {
		PyErr_SetString(PyExc_ValueError, "group: not an open Group");
		return -1;
	}
	if (plate != Py_None) {
		if (!PyObject_TypeCheck(plate, &PlateType) || group != Py_None ||
		    !PyArg_ParseTuple(field, "ssii;field: (row, column, "
				      "index, acquisition)", &row, &col,
				      &field_index, &acquisition)) {
			if (!PyErr_Occurred())
				PyErr_SetString(PyExc_ValueError,
						"plate: not a Plate");
			return -1;
		}
	}
	if (self->s != NULL) {
		PyErr_SetString(PyExc_RuntimeError, "stream already open");
		return -1;
	}
	if (path_obj != Py_None && !PyUnicode_FSConverter(path_obj, &path_bytes))
		return -1;
	if (path_bytes != NULL)
		path = PyBytes_AS_STRING(path_bytes);
	shardpipe_desc_init(&desc);
	if (reopen) {
		if (path == NULL || sink != Py_None || group != Py_None ||
		    plate != Py_None) {
			PyErr_SetString(PyExc_ValueError, "reopen: a directory "
					"path is needed (no sink, no group)");
			goto out;
		}
		if (order_before_store(order, &desc) != 0)
			goto out;
		Py_BEGIN_ALLOW_THREADS
		rc = shardpipe_desc_from_store(&desc, path, &rows);
		Py_END_ALLOW_THREADS
		if (rc != SHARDPIPE_OK) {
			raise_lib(rc, shardpipe_last_error_message());
			goto out;
		}
		/* The array fields given are set over the store's, each with
		 * one entry per dimension of the store's array. */
		if ((shape != Py_None &&
		     reopen_rank(shape, "shape", desc.rank, path) != 0) ||
		    (chunks != Py_None &&
		     reopen_rank(chunks, "chunks", desc.rank, path) != 0) ||
		    (shards != Py_None &&
		     reopen_rank(shards, "shards", desc.rank, path) != 0) ||
		    (names != Py_None &&
		     reopen_rank(names, "dimension_names", desc.rank,
				 path) != 0))
			goto out;
	} else {
		Py_ssize_t rank;

		if (shape == Py_None || chunks == Py_None ||
		    shards == Py_None || dtype == NULL || codec == NULL ||
		    index_location == NULL || fill == NULL) {
			PyErr_SetString(PyExc_TypeError, "a new array needs "
					"shape, chunks, shards, dtype, codec, "
					"index_location and fill_value");
			goto out;
		}
		rank = PySequence_Size(shape);
		if (rank < 0)
			goto out;
		if (rank < 1 || rank > SHARDPIPE_MAX_RANK) {
			raise_code(SHARDPIPE_ERR_RANK, "shape must have 1 to 16 "
				   "dimensions");
			goto out;
		}
		desc.rank = (int)rank;
		if (path == NULL && sink == Py_None && group == Py_None &&
		    plate == Py_None) {
			PyErr_SetString(PyExc_TypeError,
					"a path or a sink is needed");
			goto out;
		}
	}
	for (int d = 0; d < desc.rank; d++) {
		shardpipe_dim *dim = &desc.dims[d];
		uint64_t shard;

		if (shape != Py_None && seq_u64(shape, d, &dim->size) != 0)
			goto out;
		if (chunks != Py_None && seq_u64(chunks, d, &dim->chunk) != 0)
			goto out;
		if (shards == Py_None)
			continue;
		if (seq_u64(shards, d, &shard) != 0)
			goto out;
		if (dim->chunk == 0 || shard % dim->chunk != 0) {
			char msg[200];

			snprintf(msg, sizeof(msg), "shards[%d] = %llu: not a "
				 "multiple of chunks[%d] = %llu%s (a shard "
				 "holds whole chunks)", d,
				 (unsigned long long)shard, d,
				 (unsigned long long)dim->chunk,
				 chunks == Py_None ? ", the store's" : "");
			raise_code(SHARDPIPE_ERR_SHARD_SIZE, msg);
			goto out;
		}
		dim->chunks_per_shard = shard / dim->chunk;
	}
	if (names != Py_None) {
		for (int d = 0; d < desc.rank; d++) {
			PyObject *v = PySequence_GetItem(names, d);

			if (v == NULL)
				goto out;
			desc.dims[d].name = NULL;
			if (v != Py_None) {
				name_bytes[d] = PyUnicode_AsUTF8String(v);
				if (name_bytes[d] == NULL) {
					Py_DECREF(v);
					goto out;
				}
				desc.dims[d].name =
					PyBytes_AS_STRING(name_bytes[d]);
			}
			Py_DECREF(v);
		}
	}
	if (dtype != NULL) {
		rc = shardpipe_dtype_from_name(dtype, &desc.dtype);
		if (rc != SHARDPIPE_OK) {
			char msg[160];

			snprintf(msg, sizeof(msg), "unknown dtype \"%.64s\" "
				 "(bool, int8..int64, uint8..uint64, "
				 "float16..float64)", dtype);
			raise_code(rc, msg);
			goto out;
		}
	}
	if (codec != NULL) {
		rc = shardpipe_desc_set_codec(&desc, codec);
		if (rc != SHARDPIPE_OK) {
			raise_lib(rc, shardpipe_last_error_message());
			goto out;
		}
	}
	if (index_location == NULL) {
		/* the store's */
	} else if (strcmp(index_location, "end") == 0) {
		desc.index_location = SHARDPIPE_INDEX_END;
	} else if (strcmp(index_location, "start") == 0) {
		desc.index_location = SHARDPIPE_INDEX_START;
	} else {
		PyErr_Format(PyExc_ValueError, "index_location must be "
			     "\"start\" or \"end\", not \"%s\"",
			     index_location);
		goto out;
	}
	desc.backend = backend;
	desc.threads = threads;
	desc.overwrite = overwrite;
	/* The Python layer has converted the fill value to the dtype's
	 * bytes; (key, JSON text) pairs are its serialised attributes. */
	if (fill != NULL) {
		if ((size_t)fill_len > sizeof(desc.fill_value)) {
			PyErr_SetString(PyExc_ValueError,
					"fill_value: too many bytes");
			goto out;
		}
		memset(desc.fill_value, 0, sizeof(desc.fill_value));
		memcpy(desc.fill_value, fill, (size_t)fill_len);
	}
	desc.write_empty_chunks = write_empty;
	desc.durable = durable;
	desc.truncate_to_advertised = truncate;
	desc.max_memory = max_memory;
	/* The pyramid: the Python layer has resolved names to dims and
	 * words to numbers; units, scales and axis types are one per dim
	 * (None, 0 and 0 where not given). */
	desc.downsample = downsample;
	desc.method = (shardpipe_method)method;
	desc.append_method = append_method;
	desc.max_levels = max_levels;
	desc.ngff = ngff;
	if (order_into(order, &desc) != 0)
		goto out;
	for (int d = 0; d < desc.rank; d++) {
		PyObject *t[4] = { units, scales, axis_types, stops };

		for (int k = 0; k < 4; k++) {
			PyObject *v;

			if (t[k] == Py_None)
				continue;
			if ((v = PySequence_GetItem(t[k], d)) == NULL)
				goto out;
			if (k == 0) {
				if (v != Py_None)
					desc.unit[d] = PyUnicode_AsUTF8(v);
			} else if (k == 1)
				desc.scale[d] = PyFloat_AsDouble(v);
			else if (k == 2)
				desc.axis_type[d] =
					(shardpipe_axis_type)PyLong_AsLong(v);
			else
				desc.max_levels_dim[d] = (int)PyLong_AsLong(v);
			/* The strings live as long as the sequence does. */
			Py_DECREF(v);
			if (PyErr_Occurred())
				goto out;
		}
	}
	if (frame_obj != Py_None) {
		/* (name, dtype name) pairs; the strings live as long as
		 * the tuple does, and the stream copies them at open. */
		Py_ssize_t n = PySequence_Size(frame_obj);

		if (n < 0)
			goto out;
		if (n > SHARDPIPE_MAX_FRAME_FIELDS) {
			raise_code(SHARDPIPE_ERR_INVALID_ARGUMENT, "frame_meta: "
				   "more fields than SHARDPIPE_MAX_FRAME_FIELDS");
			goto out;
		}
		for (Py_ssize_t k = 0; k < n; k++) {
			PyObject *t = PySequence_GetItem(frame_obj, k);
			const char *dt = NULL;
			int good = t != NULL &&
				   PyArg_ParseTuple(t, "ss;frame_fields: (name, "
						    "dtype) pairs", &ff[k].name,
						    &dt);

			Py_XDECREF(t);
			if (!good)
				goto out;
			ff[k].dtype = strcmp(dt, "float64") == 0
				? SHARDPIPE_DTYPE_FLOAT64
				: strcmp(dt, "int64") == 0
				? SHARDPIPE_DTYPE_INT64 : SHARDPIPE_DTYPE_BOOL;
		}
		desc.frame_fields = ff;
		desc.n_frame_fields = (size_t)n;
	}
	if (attrs != Py_None) {
		nattrs = PySequence_Size(attrs);
		if (nattrs < 0)
			goto out;
		pairs = PyMem_Calloc((size_t)nattrs + 1, sizeof(*pairs));
		if (pairs == NULL) {
			PyErr_NoMemory();
			goto out;
		}
		for (Py_ssize_t k = 0; k < nattrs; k++) {
			PyObject *t = PySequence_GetItem(attrs, k);
			int good = t != NULL &&
				   PyArg_ParseTuple(t, "ss;attributes: (key, "
						    "JSON text) pairs",
						    &pairs[k].key,
						    &pairs[k].json);

			/* The strings live as long as attrs does. */
			Py_XDECREF(t);
			if (!good)
				goto out;
		}
		desc.attributes = pairs;
		desc.nattributes = (size_t)nattrs;
	}
	if (sink != Py_None) {
		if (!PyCallable_Check(sink)) {
			PyErr_SetString(PyExc_TypeError, "sink must be "
					"callable as sink(coords, data)");
			goto out;
		}
		Py_INCREF(sink);
		self->sink = sink;
		self->index_start = desc.index_location == SHARDPIPE_INDEX_START;
		shardpipe_sink_init(&sk);
		sk.user = self;
		sk.shard = sink_shard;
	}
	/* The store's dimension names (a reopen that did not give them)
	 * live until the next shardpipe_desc_from_store() on this thread:
	 * none comes before the reopen. */
	if (region != Py_None) {
		PyObject *l = NULL, *h = NULL;

		if (!PyArg_ParseTuple(region, "OO;region: (lo, hi)", &l, &h))
			goto out;
		for (int d = 0; d < desc.rank; d++)
			if (seq_u64(l, d, &lo[d]) != 0 ||
			    seq_u64(h, d, &hi[d]) != 0)
				goto out;
	}
	if (publish != Py_None) {
		unsigned long long n = PyLong_AsUnsignedLongLong(publish);

		if (PyErr_Occurred())
			goto out;
		Py_BEGIN_ALLOW_THREADS
		rc = shardpipe_array_publish(path, &desc, n);
		Py_END_ALLOW_THREADS
		if (rc != SHARDPIPE_OK)
			raise_lib(rc, shardpipe_last_error_message());
		else
			ret = 0;
		goto out;
	}
	Py_BEGIN_ALLOW_THREADS
	if (region != Py_None)
		rc = shardpipe_stream_open_region(&s, path, &desc, lo, hi);
	else if (plate != Py_None) {
		PlateObject *po = (PlateObject *)plate;

		PyThread_acquire_lock(po->lock, WAIT_LOCK);
		rc = po->p == NULL ? SHARDPIPE_ERR_CLOSED
				   : shardpipe_plate_field(&s, po->p, row, col,
							   field_index,
							   acquisition, &desc);
		PyThread_release_lock(po->lock);
	} else if (reopen)
		rc = shardpipe_stream_reopen(&s, path, &desc);
	else if (group != Py_None)
		rc = shardpipe_group_stream(&s, ((GroupObject *)group)->g,
					    array, &desc);
	else if (self->sink != NULL)
		rc = shardpipe_stream_open_sink(&s, &sk, &desc);
	else
		rc = shardpipe_stream_open(&s, path, &desc);
	Py_END_ALLOW_THREADS
	if (rc != SHARDPIPE_OK) {
		if (plate != Py_None && rc == SHARDPIPE_ERR_CLOSED)
			raise_code(rc, "the plate is closed");
		else
			raise_lib(rc, shardpipe_last_error_message());
		goto out;
	}
	self->s = s;
	self->dtype = desc.dtype;
	self->itemsize = shardpipe_dtype_size(desc.dtype);
	/* What the stream was opened with (in a reopen, the store's array,
	 * dim 0 this run's bound), for the Python layer's checks. */
	self->rank = desc.rank;
	self->append_dim = 0;
	for (int d = 0; d < desc.rank; d++) {
		self->shape[d] = desc.dims[d].size;
		if (desc.storage_order[0] != 0 && desc.storage_order[d] == 0)
			self->append_dim = d;
	}
	/* A region writer takes the box's bytes (an unbounded dim 0 stays
	 * unbounded). */
	for (int d = 0; region != Py_None && d < desc.rank; d++)
		self->shape[d] = d == 0 && desc.dims[0].size == 0
					 ? 0 : hi[d] - lo[d];
	memcpy(self->fill, desc.fill_value, sizeof(self->fill));
	self->start_row = rows;
	self->nfields = (int)desc.n_frame_fields;
	/* The rows the reopened stream continues after, as it read them
	 * under its lock: its rows written before anything is appended. */
	if (reopen) {
		shardpipe_stats st;

		if (shardpipe_stream_stats(s, &st) == SHARDPIPE_OK)
			self->start_row = st.rows_written;
	}
	snprintf(self->backend, sizeof(self->backend), "%s",
		 shardpipe_stream_backend(s));
	ret = 0;
out:
	Py_XDECREF(path_bytes);
	for (int d = 0; d < SHARDPIPE_MAX_RANK; d++)
		Py_XDECREF(name_bytes[d]);
	PyMem_Free(pairs);
	return ret;
}

static PyObject *stream_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	StreamObject *self = (StreamObject *)type->tp_alloc(type, 0);

	(void)args;
	(void)kw;
	if (self == NULL)
		return NULL;
	self->lock = PyThread_allocate_lock();
	if (self->lock == NULL) {
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	return (PyObject *)self;
}

static void stream_dealloc(StreamObject *self)
{
	if (self->s != NULL) {
		/* An unclosed stream is still closed, so that its store is
		 * valid; an error here has nobody left to hear it. */
		PyObject *r = stream_close_locked(self);

		if (r == NULL)
			PyErr_WriteUnraisable((PyObject *)self);
		Py_XDECREF(r);
	}
	Py_CLEAR(self->sink);
	Py_CLEAR(self->sink_exc);
	if (self->lock != NULL)
		PyThread_free_lock(self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

/* The struct-module format characters of each dtype (any byte-order
 * prefix is read separately); NumPy writes 'l' or 'q' for int64. */
static int format_matches(shardpipe_dtype t, const char *fmt)
{
	static const char *const chars[SHARDPIPE_DTYPE_COUNT_] = {
		"?", "b", "h", "i", "lq", "B", "H", "I", "LQ", "e", "f", "d",
	};
	char c;

	if (*fmt == '@' || *fmt == '=' || *fmt == '<' || *fmt == '>' ||
	    *fmt == '!') {
		int little = *fmt == '<';
		int big = *fmt == '>' || *fmt == '!';
		const uint16_t one = 1;
		int host_little = *(const uint8_t *)&one == 1;

		if ((little && !host_little) || (big && host_little))
			return -1;
		fmt++;
	}
	c = fmt[0];
	if (c == '\0' || fmt[1] != '\0')
		return 0;
	/* 'i' and 'l' are 4 or 8 bytes by platform; itemsize decides. */
	if (t == SHARDPIPE_DTYPE_INT32 && c == 'l' && sizeof(long) == 4)
		return 1;
	if (t == SHARDPIPE_DTYPE_UINT32 && c == 'L' && sizeof(long) == 4)
		return 1;
	return strchr(chars[t], c) != NULL;
}

/* A signal's exception (Ctrl-C) between the spans of an append or skip:
 * the caller cannot know how much went in, so the stream cannot go on.
 * Close it, leaving a valid store of what was appended, and let the
 * exception through. */
static PyObject *stream_interrupted(StreamObject *self)
{
	PyObject *exc = exc_take();
	PyObject *r = stream_close_locked(self);

	Py_XDECREF(r);
	if (r == NULL)
		PyErr_Clear();
	stream_leave(self);
	exc_give(exc);
	return NULL;
}

/* The end of a call that entered the stream: None, or the failure as
 * stream_fail raises it. */
static PyObject *stream_done(StreamObject *self, int rc)
{
	PyObject *r = Py_None;

	if (rc != SHARDPIPE_OK)
		r = stream_fail(self, rc, shardpipe_stream_message(self->s));
	else
		Py_INCREF(r);
	stream_leave(self);
	return r;
}

static PyObject *stream_append(StreamObject *self, PyObject *obj)
{
	Py_buffer view;
	const char *p;
	size_t left;
	int rc = SHARDPIPE_OK, interrupted = 0;

	if (stream_enter(self) != 0)
		return NULL;
	if (PyObject_GetBuffer(obj, &view, PyBUF_STRIDES | PyBUF_FORMAT) != 0) {
		stream_leave(self);
		if (PyErr_ExceptionMatches(PyExc_TypeError) ||
		    PyErr_ExceptionMatches(PyExc_BufferError)) {
			PyErr_Clear();
			PyErr_Format(PyExc_TypeError, "append: a %.100s is not "
				     "a buffer (pass a NumPy array or bytes)",
				     Py_TYPE(obj)->tp_name);
		}
		return NULL;
	}
	if (!PyBuffer_IsContiguous(&view, 'C')) {
		PyErr_Format(PyExc_ValueError, "append: the %.100s is not "
			     "C-contiguous (row-major); pass "
			     "numpy.ascontiguousarray(a)",
			     Py_TYPE(obj)->tp_name);
		goto fail;
	}
	/* Bytes-like objects (format "B", no dtype of their own) are raw
	 * array bytes; anything typed must be the stream's dtype. */
	{
		int has_dtype = PyObject_HasAttrString(obj, "dtype");
		const char *fmt = view.format != NULL ? view.format : "B";
		int raw = !has_dtype && strcmp(fmt, "B") == 0;

		if (!raw && format_matches(self->dtype, fmt) != 1) {
			PyObject *dt = has_dtype
				? PyObject_GetAttrString(obj, "dtype") : NULL;
			PyObject *dts = dt ? PyObject_Str(dt) : NULL;
			const char *got = dts ? PyUnicode_AsUTF8(dts) : NULL;

			PyErr_Clear();
			PyErr_Format(PyExc_TypeError, "append: dtype mismatch: "
				     "the stream holds %s (native byte order), "
				     "the %.100s holds %s",
				     shardpipe_dtype_name(self->dtype),
				     Py_TYPE(obj)->tp_name,
				     got ? got : fmt);
			Py_XDECREF(dts);
			Py_XDECREF(dt);
			goto fail;
		}
	}
	p = view.buf;
	left = (size_t)view.len;
	while (left > 0 && rc == SHARDPIPE_OK) {
		size_t n = left < APPEND_SPAN ? left : APPEND_SPAN;

		Py_BEGIN_ALLOW_THREADS
		rc = shardpipe_stream_append(self->s, p, n);
		Py_END_ALLOW_THREADS
		p += n;
		left -= n;
		if (rc == SHARDPIPE_OK && left > 0 &&
		    PyErr_CheckSignals() != 0) {
			interrupted = 1;
			break;
		}
	}
	PyBuffer_Release(&view);
	if (interrupted)
		return stream_interrupted(self);
	return stream_done(self, rc);
fail:
	PyBuffer_Release(&view);
	stream_leave(self);
	return NULL;
}

/* Whole frames and their values (the Python layer packed them as
 * shardpipe_frame_value, row by row), in one call: a frame's values go
 * with its bytes. */
static PyObject *stream_append_meta(StreamObject *self, PyObject *args)
{
	Py_buffer view, vals;
	PyObject *obj, *vobj;
	int rc;

	if (!PyArg_ParseTuple(args, "OO", &obj, &vobj))
		return NULL;
	if (stream_enter(self) != 0)
		return NULL;
	if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS) != 0) {
		stream_leave(self);
		return NULL;
	}
	if (PyObject_GetBuffer(vobj, &vals, PyBUF_SIMPLE) != 0) {
		PyBuffer_Release(&view);
		stream_leave(self);
		return NULL;
	}
	{
		/* The values the library reads: the Python layer's count,
		 * checked so that a wrong one is no overread. */
		uint64_t row = self->itemsize, k;

		for (int d = 0; d < self->rank; d++)
			if (d != self->append_dim)
				row *= self->shape[d];
		k = row ? (uint64_t)view.len / row : 0;
		if ((uint64_t)vals.len != k * (uint64_t)self->nfields *
					  sizeof(shardpipe_frame_value)) {
			PyBuffer_Release(&vals);
			PyBuffer_Release(&view);
			stream_leave(self);
			PyErr_SetString(PyExc_ValueError, "append_meta: the "
					"values do not match the rows");
			return NULL;
		}
	}
	Py_BEGIN_ALLOW_THREADS
	rc = shardpipe_stream_append_meta(self->s, view.buf, (size_t)view.len,
					  vals.buf);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&vals);
	PyBuffer_Release(&view);
	return stream_done(self, rc);
}

/* Skips are cut into spans like appends, so that Ctrl-C ends a long one
 * (an unbounded stream takes any count). */
static PyObject *stream_skip(StreamObject *self, PyObject *arg)
{
	unsigned long long n = PyLong_AsUnsignedLongLong(arg);
	int rc = SHARDPIPE_OK;

	if (n == (unsigned long long)-1 && PyErr_Occurred())
		return NULL;
	if (stream_enter(self) != 0)
		return NULL;
	do {
		/* Spans of whole elements (APPEND_SPAN is a multiple of
		 * every element size); a count that is not whole elements
		 * goes to the library at once, which refuses it before
		 * skipping anything. */
		unsigned long long k = n % self->itemsize == 0 &&
				       n > APPEND_SPAN ? APPEND_SPAN : n;

		Py_BEGIN_ALLOW_THREADS
		rc = shardpipe_stream_skip(self->s, k);
		Py_END_ALLOW_THREADS
		n -= k;
		if (rc == SHARDPIPE_OK && n > 0 && PyErr_CheckSignals() != 0)
			return stream_interrupted(self);
	} while (rc == SHARDPIPE_OK && n > 0);
	return stream_done(self, rc);
}

static PyObject *stream_set_attribute(StreamObject *self, PyObject *args)
{
	const char *key, *json;

	if (!PyArg_ParseTuple(args, "sz", &key, &json))
		return NULL;
	if (stream_enter(self) != 0)
		return NULL;
	return stream_done(self, shardpipe_stream_set_attribute(self->s, key,
								json));
}

static PyObject *stream_flush(StreamObject *self, PyObject *unused)
{
	int rc;

	(void)unused;
	if (stream_enter(self) != 0)
		return NULL;
	Py_BEGIN_ALLOW_THREADS
	rc = shardpipe_stream_flush(self->s);
	Py_END_ALLOW_THREADS
	return stream_done(self, rc);
}

static PyObject *stream_close(StreamObject *self, PyObject *unused)
{
	PyObject *r;

	(void)unused;
	if (self->s == NULL) {
		/* Closing twice is harmless; a sink's exception not yet
		 * seen still surfaces. */
		if (self->sink_exc != NULL)
			return stream_fail(self, SHARDPIPE_ERR_SINK, NULL);
		Py_RETURN_NONE;
	}
	if (stream_enter(self) != 0)
		return NULL;
	r = stream_close_locked(self);
	stream_leave(self);
	return r;
}

static PyObject *stream_stats(StreamObject *self, PyObject *unused)
{
	shardpipe_stats st;
	int rc;

	(void)unused;
	if (self->s == NULL && self->have_last) {
		/* Closed: the library freed the stream; what it counted up to
		 * close is all there is. */
		st = self->last;
	} else {
		if (stream_enter(self) != 0)
			return NULL;
		rc = shardpipe_stream_stats(self->s, &st);
		stream_leave(self);
		if (rc != SHARDPIPE_OK)
			return raise_lib(rc, NULL);
	}
	return Py_BuildValue("(KKKKKdddddKKd)",
			     (unsigned long long)st.bytes_in,
			     (unsigned long long)st.bytes_out,
			     (unsigned long long)st.shards_written,
			     (unsigned long long)st.chunks_written,
			     (unsigned long long)st.rows_written,
			     st.seconds_stage, st.seconds_scatter,
			     st.seconds_compress, st.seconds_aggregate,
			     st.seconds_write,
			     (unsigned long long)st.pool_bytes,
			     (unsigned long long)st.appends_blocked,
			     st.seconds_blocked);
}

/* info() -> (shape, dtype name, fill bytes, start_row): what the stream
 * was opened with, open or closed. */
static PyObject *stream_info(StreamObject *self, PyObject *unused)
{
	(void)unused;
	return Py_BuildValue("(Nsy#K)", u64_tuple(self->shape, self->rank),
			     shardpipe_dtype_name(self->dtype),
			     (const char *)self->fill,
			     (Py_ssize_t)self->itemsize,
			     (unsigned long long)self->start_row);
}

static PyObject *stream_get_backend(StreamObject *self, void *closure)
{
	(void)closure;
	return PyUnicode_FromString(self->backend);
}

static PyObject *stream_get_closed(StreamObject *self, void *closure)
{
	(void)closure;
	return PyBool_FromLong(self->s == NULL);
}

static PyMethodDef stream_methods[] = {
	{ "append", (PyCFunction)stream_append, METH_O,
	  "append(buf) -> None: append C-contiguous array bytes." },
	{ "append_meta", (PyCFunction)stream_append_meta, METH_VARARGS,
	  "append_meta(buf, values) -> None: whole frames with their "
	  "frame_meta values (shardpipe_frame_value, row by row)." },
	{ "skip", (PyCFunction)stream_skip, METH_O,
	  "skip(nbytes) -> None: advance by nbytes of the fill value." },
	{ "set_attribute", (PyCFunction)stream_set_attribute, METH_VARARGS,
	  "set_attribute(key, json) -> None: a user attribute (json None "
	  "removes it)." },
	{ "flush", (PyCFunction)stream_flush, METH_NOARGS,
	  "flush() -> None: write every complete shard and zarr.json." },
	{ "close", (PyCFunction)stream_close, METH_NOARGS,
	  "close() -> None: write the last shards and zarr.json." },
	{ "stats", (PyCFunction)stream_stats, METH_NOARGS,
	  "stats() -> tuple: the library's counters." },
	{ "info", (PyCFunction)stream_info, METH_NOARGS,
	  "info() -> (shape, dtype, fill bytes, start_row): what the stream "
	  "was opened with (a reopen's: the store's array, dim 0 the bound)." },
	{ NULL, NULL, 0, NULL },
};

static PyGetSetDef stream_getset[] = {
	{ "backend", (getter)stream_get_backend, NULL,
	  "The backend the stream runs on.", NULL },
	{ "closed", (getter)stream_get_closed, NULL,
	  "True once the stream is closed.", NULL },
	{ NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject StreamType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "shardpipe._shardpipe.Stream",
	.tp_basicsize = sizeof(StreamObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The library's stream; see shardpipe.Stream.",
	.tp_new = stream_new,
	.tp_init = (initproc)stream_init,
	.tp_dealloc = (destructor)stream_dealloc,
	.tp_methods = stream_methods,
	.tp_getset = stream_getset,
};

/* ---------------------------------------------------------------- */
/* Readers                                                            */

typedef struct {
	PyObject_HEAD
	shardpipe_reader *r;
	PyThread_type_lock lock;
	shardpipe_array_info info;
} ReaderObject;

static PyObject *reader_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
	ReaderObject *self;
	PyObject *path_obj, *path_bytes = NULL;
	shardpipe_reader *r = NULL;
	int rc;

	(void)kw;
	if (!PyArg_ParseTuple(args, "O", &path_obj))
		return NULL;
	if (!PyUnicode_FSConverter(path_obj, &path_bytes))
		return NULL;
	self = (ReaderObject *)type->tp_alloc(type, 0);
	if (self == NULL) {
		Py_DECREF(path_bytes);
		return NULL;
	}
	self->lock = PyThread_allocate_lock();
	if (self->lock == NULL) {
		Py_DECREF(path_bytes);
		Py_DECREF(self);
		return PyErr_NoMemory();
	}
	Py_BEGIN_ALLOW_THREADS
	rc = shardpipe_reader_open(&r, PyBytes_AS_STRING(path_bytes));
	Py_END_ALLOW_THREADS
	Py_DECREF(path_bytes);
	if (rc != SHARDPIPE_OK) {
		Py_DECREF(self);
		return raise_lib(rc, shardpipe_last_error_message());
	}
	self->r = r;
	rc = shardpipe_reader_info(r, &self->info);
	if (rc != SHARDPIPE_OK) {
		Py_DECREF(self);
		return raise_lib(rc, NULL);
	}
	return (PyObject *)self;
}

static void reader_dealloc(ReaderObject *self)
{
	shardpipe_reader_close(self->r);
	if (self->lock != NULL)
		PyThread_free_lock(self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *u64_tuple(const uint64_t *v, int n)
{
	PyObject *t = PyTuple_New(n);

	if (t == NULL)
		return NULL;
	for (int d = 0; d < n; d++) {
		PyObject *x = PyLong_FromUnsignedLongLong(v[d]);

		if (x == NULL) {
			Py_DECREF(t);
			return NULL;
		}
		PyTuple_SET_ITEM(t, d, x);
	}
	return t;
}

static PyObject *reader_get_info(ReaderObject *self, PyObject *unused)
{
	const shardpipe_array_info *in = &self->info;
	PyObject *names = PyTuple_New(in->rank);

	(void)unused;
	if (names == NULL)
		return NULL;
	for (int d = 0; d < in->rank; d++) {
		PyObject *x;

		if (in->dim_names[d][0] == '\0') {
			x = Py_NewRef(Py_None);
		} else {
			x = PyUnicode_FromString(in->dim_names[d]);
			if (x == NULL) {
				Py_DECREF(names);
				return NULL;
			}
		}
		PyTuple_SET_ITEM(names, d, x);
	}
	return Py_BuildValue("(NNNsNi)", u64_tuple(in->shape, in->rank),
			     u64_tuple(in->chunk, in->rank),
			     u64_tuple(in->shard, in->rank),
			     shardpipe_dtype_name(in->dtype), names, in->levels);
}

/* read_into(start, count, out[, step]): fill the writable C-contiguous
 * buffer out, which must hold exactly prod(count) elements, with the
 * elements start + k * step (step: every 1 when None). */
static PyObject *reader_read_into(ReaderObject *self, PyObject *args)
{
	PyObject *start_obj, *count_obj, *out_obj, *step_obj = Py_None;
	uint64_t start[SHARDPIPE_MAX_RANK], count[SHARDPIPE_MAX_RANK];
	uint64_t step[SHARDPIPE_MAX_RANK];
	uint64_t want = shardpipe_dtype_size(self->info.dtype);
	Py_buffer view;
	int rank = self->info.rank, rc;

	if (!PyArg_ParseTuple(args, "OOO|O", &start_obj, &count_obj, &out_obj,
			      &step_obj))
		return NULL;
	for (int k = 0; k < 3; k++) {
		PyObject *seq = k == 0 ? start_obj
				: k == 1 ? count_obj : step_obj;
		uint64_t *v = k == 0 ? start : k == 1 ? count : step;
		static const char *const what[] = { "start", "count", "step" };

		if (k == 2 && seq == Py_None) {
			for (int d = 0; d < rank; d++)
				step[d] = 1;
			break;
		}
		if (PySequence_Size(seq) != rank) {
			if (!PyErr_Occurred())
				PyErr_Format(PyExc_ValueError, "%s must have "
					     "%d entries", what[k], rank);
			return NULL;
		}
		for (int d = 0; d < rank; d++) {
			PyObject *x = PySequence_GetItem(seq, d);

			if (x == NULL)
				return NULL;
			v[d] = PyLong_AsUnsignedLongLong(x);
			Py_DECREF(x);
			if (PyErr_Occurred())
				return NULL;
		}
		if (k == 1)
			for (int d = 0; d < rank; d++)
				if (__builtin_mul_overflow(want, count[d],
							   &want)) {
					return raise_code(
						SHARDPIPE_ERR_OVERFLOW,
						"the region's byte count "
						"overflows");
				}
	}
	if (PyObject_GetBuffer(out_obj, &view,
			       PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) != 0)
		return NULL;
	if ((uint64_t)view.len != want) {
		PyErr_Format(PyExc_ValueError, "out holds %zd bytes, the "
			     "region %llu", view.len,
			     (unsigned long long)want);
		PyBuffer_Release(&view);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(self->lock, WAIT_LOCK);
	rc = shardpipe_reader_read_strided(self->r, start, count, step,
					   view.buf, NULL, (size_t)view.len);
	PyThread_release_lock(self->lock);
	Py_END_ALLOW_THREADS
	PyBuffer_Release(&view);
	if (rc != SHARDPIPE_OK)
		return raise_lib(rc, shardpipe_reader_message(self->r));
	Py_RETURN_NONE;
}

static PyObject *reader_check(ReaderObject *self, PyObject *unused)
{
	int rc;

	(void)unused;
	Py_BEGIN_ALLOW_THREADS
	PyThread_acquire_lock(self->lock, WAIT_LOCK);
	rc = shardpipe_reader_check(self->r);
	PyThread_release_lock(self->lock);
	Py_END_ALLOW_THREADS
	if (rc != SHARDPIPE_OK)
		return raise_lib(rc, shardpipe_reader_message(self->r));
	Py_RETURN_NONE;
}

static PyObject *reader_set_threads(ReaderObject *self, PyObject *args)
{
	int n, rc;

	if (!PyArg_ParseTuple(args, "i", &n))
		return NULL;
	PyThread_acquire_lock(self->lock, WAIT_LOCK);
	rc = shardpipe_reader_set_threads(self->r, n);
	PyThread_release_lock(self->lock);
	if (rc != SHARDPIPE_OK)
		return raise_lib(rc, shardpipe_reader_message(self->r));
	Py_RETURN_NONE;
}

static PyObject *reader_stats(ReaderObject *self, PyObject *unused)
{
	shardpipe_read_stats st;

	(void)unused;
	shardpipe_reader_stats(self->r, &st);
	return Py_BuildValue("(KKK)", (unsigned long long)st.bytes_read,
			     (unsigned long long)st.requests,
			     (unsigned long long)st.chunks_decoded);
}

static PyMethodDef reader_methods[] = {
	{ "set_threads", (PyCFunction)reader_set_threads, METH_VARARGS,
	  "set_threads(n) -> None: decode on n threads, 0 for every core." },
	{ "stats", (PyCFunction)reader_stats, METH_NOARGS,
	  "stats() -> (bytes read, requests, chunks decoded)" },
	{ "info", (PyCFunction)reader_get_info, METH_NOARGS,
	  "info() -> (shape, chunks, shards, dtype name, dimension names, "
	  "levels)" },
	{ "read_into", (PyCFunction)reader_read_into, METH_VARARGS,
	  "read_into(start, count, out, step=None) -> None" },
	{ "check", (PyCFunction)reader_check, METH_NOARGS,
	  "check() -> None: verify every stored object." },
	{ NULL, NULL, 0, NULL },
};

static PyTypeObject ReaderType = {
	PyVarObject_HEAD_INIT(NULL, 0)
	.tp_name = "shardpipe._shardpipe.Reader",
	.tp_basicsize = sizeof(ReaderObject),
	.tp_flags = Py_TPFLAGS_DEFAULT,
	.tp_doc = "The library's reader; see shardpipe.open().",
	.tp_new = reader_new,
	.tp_dealloc = (destructor)reader_dealloc,
	.tp_methods = reader_methods,
};

/* ---------------------------------------------------------------- */
/* Module                                                             */

static PyObject *mod_backends(PyObject *m, PyObject *unused)
{
	int n = shardpipe_backend_count();
	PyObject *list = PyList_New(0);

	(void)m;
	(void)unused;
	if (list == NULL)
		return NULL;
	for (int i = 0; i < n; i++) {
		shardpipe_backend_info info;
		PyObject *t;
		int rc;

		memset(&info, 0, sizeof(info));
		Py_BEGIN_ALLOW_THREADS
		rc = shardpipe_backend_probe(i, &info);
		Py_END_ALLOW_THREADS
		if (rc != SHARDPIPE_OK) {
			Py_DECREF(list);
			return raise_lib(rc, NULL);
		}
		t = Py_BuildValue("(sOOs)", info.name,
				  info.usable ? Py_True : Py_False,
				  info.gpu ? Py_True : Py_False, info.detail);
		if (t == NULL || PyList_Append(list, t) != 0) {
			Py_XDECREF(t);
			Py_DECREF(list);
			return NULL;
		}
		Py_DECREF(t);
	}
	return list;
}

/* desc_from_store(path, order=None) -> (shape, chunks, shards, dtype,
 * dimension names, index_location, fill bytes, rows, fields): the array
 * at path as shardpipe_desc_from_store() reads it, the append dim's size
 * the rows its zarr.json advertises (the append dim where the storage
 * order puts it, design §3.3), shards in elements. */
static PyObject *mod_desc_from_store(PyObject *m, PyObject *args)
{
	uint64_t size[SHARDPIPE_MAX_RANK], chunk[SHARDPIPE_MAX_RANK];
	uint64_t shard[SHARDPIPE_MAX_RANK], rows = 0;
	PyObject *path, *path_bytes, *names, *fields, *order = Py_None;
	shardpipe_desc desc;
	int rc, a = 0;

	(void)m;
	if (!PyArg_ParseTuple(args, "O|O", &path, &order) ||
	    !PyUnicode_FSConverter(path, &path_bytes))
		return NULL;
	shardpipe_desc_init(&desc);
	if (order_before_store(order, &desc) != 0) {
		Py_DECREF(path_bytes);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS
	rc = shardpipe_desc_from_store(&desc, PyBytes_AS_STRING(path_bytes),
				       &rows);
	Py_END_ALLOW_THREADS
	Py_DECREF(path_bytes);
	if (rc != SHARDPIPE_OK)
		return raise_lib(rc, shardpipe_last_error_message());
	/* The rows run along the append dim the order put, where the
	 * library took it: an order of the store's rank. */
	for (int d = 0; order != Py_None && desc.storage_order[0] != 0 &&
			PySequence_Size(order) == desc.rank && d < desc.rank;
	     d++)
		if (desc.storage_order[d] == 0)
			a = d;
	/* The names live until the next call on this thread: copy them
	 * now. */
	names = PyTuple_New(desc.rank);
	if (names == NULL)
		return NULL;
	for (int d = 0; d < desc.rank; d++) {
		/* An unnamed dim is "" (as in Reader.info()): None. */
		const char *n = desc.dims[d].name;
		PyObject *x = n != NULL && *n != '\0' ? PyUnicode_FromString(n)
						       : Py_NewRef(Py_None);

		if (x == NULL) {
			Py_DECREF(names);
			return NULL;
		}
		PyTuple_SET_ITEM(names, d, x);
		size[d] = d == a ? rows : desc.dims[d].size;
		chunk[d] = desc.dims[d].chunk;
		shard[d] = desc.dims[d].chunk * desc.dims[d].chunks_per_shard;
	}
	/* An image's frame fields (name, dtype name), "skipped" left out. */
	fields = PyTuple_New((Py_ssize_t)desc.n_frame_fields);
	if (fields == NULL) {
		Py_DECREF(names);
		return NULL;
	}
	for (size_t k = 0; k < desc.n_frame_fields; k++) {
		PyObject *t = Py_BuildValue(
			"(ss)", desc.frame_fields[k].name,
			shardpipe_dtype_name(desc.frame_fields[k].dtype));

		if (t == NULL) {
			Py_DECREF(names);
			Py_DECREF(fields);
			return NULL;
		}
		PyTuple_SET_ITEM(fields, (Py_ssize_t)k, t);
	}
	return Py_BuildValue("(NNNsNsy#KN)", u64_tuple(size, desc.rank),
			     u64_tuple(chunk, desc.rank),
			     u64_tuple(shard, desc.rank),
			     shardpipe_dtype_name(desc.dtype), names,
			     desc.index_location == SHARDPIPE_INDEX_START
				     ? "start" : "end",
			     (const char *)desc.fill_value,
			     (Py_ssize_t)shardpipe_dtype_size(desc.dtype),
			     (unsigned long long)rows, fields);
}

static PyObject *mod_set_errors(PyObject *m, PyObject *tup)
{
	(void)m;
	if (!PyTuple_Check(tup) || PyTuple_GET_SIZE(tup) != SHARDPIPE_ERR_COUNT_)
		return PyErr_Format(PyExc_TypeError, "a tuple of %d classes",
				    (int)SHARDPIPE_ERR_COUNT_);
	Py_XSETREF(error_classes, Py_NewRef(tup));
	Py_RETURN_NONE;
}

static PyObject *mod_strerror(PyObject *m, PyObject *arg)
{
	long code = PyLong_AsLong(arg);

	(void)m;
	if (code == -1 && PyErr_Occurred())
		return NULL;
	return PyUnicode_FromString(shardpipe_strerror((int)code));
}

static PyMethodDef mod_methods[] = {
	{ "backends", mod_backends, METH_NOARGS,
	  "backends() -> [(name, usable, gpu, detail)]" },
	{ "_set_errors", mod_set_errors, METH_O, NULL },
	{ "desc_from_store", mod_desc_from_store, METH_VARARGS,
	  "desc_from_store(path, order=None) -> (shape, chunks, shards, "
	  "dtype, names, index_location, fill bytes, rows, fields): the "
	  "array at path." },
	{ "strerror", mod_strerror, METH_O,
	  "strerror(code) -> str: the library's sentence for a code." },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef moddef = {
	PyModuleDef_HEAD_INIT,
	.m_name = "shardpipe._shardpipe",
	.m_doc = "The C extension under shardpipe: use the shardpipe package.",
	.m_size = -1,
	.m_methods = mod_methods,
};

PyMODINIT_FUNC PyInit__shardpipe(void)
{
	PyObject *m;

	if (PyType_Ready(&StreamType) < 0 || PyType_Ready(&ReaderType) < 0 ||
	    PyType_Ready(&GroupType) < 0 || PyType_Ready(&PlateType) < 0)
		return NULL;
	m = PyModule_Create(&moddef);
	if (m == NULL)
		return NULL;
	if (PyModule_AddObjectRef(m, "Stream", (PyObject *)&StreamType) < 0 ||
	    PyModule_AddObjectRef(m, "Reader", (PyObject *)&ReaderType) < 0 ||
	    PyModule_AddObjectRef(m, "Group", (PyObject *)&GroupType) < 0 ||
	    PyModule_AddObjectRef(m, "Plate", (PyObject *)&PlateType) < 0 ||
	    PyModule_AddStringConstant(m, "library_version",
				       shardpipe_version()) < 0 ||
	    PyModule_AddIntConstant(m, "ERR_COUNT", SHARDPIPE_ERR_COUNT_) < 0 ||
	    PyModule_AddIntConstant(m, "MAX_THREADS",
				    SHARDPIPE_MAX_THREADS) < 0 ||
	    PyModule_AddIntConstant(m, "MAX_LEVELS",
				    SHARDPIPE_MAX_LEVELS) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
