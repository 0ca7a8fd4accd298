/*
 * binlogscope._native._kernel: the native kernel - row images to plain values, in C.
 *
 * One boundary (see binlogscope/_native/__init__.py, the only loader): bytes and plain
 * parameters in, plain values out. The kernel knows no session, driver, pipeline, output or
 * dataclass layout; it reads rows for wire/binlog/rows.py, whose Python column readers
 * (values.make_reader) stay the definition. Tests compare both on every fixture through the
 * one switch (BINLOGSCOPE_PURE_PYTHON=1, or binlogscope._native.kernel = None).
 *
 * ImageReader(specs, labels): one reader per (TABLE_MAP, columns-present bitmap); each spec is
 * a column plan of wire/binlog/_rowcode.py as a tuple (kind, a, b, c, d, e, f, obj), kinds
 * below. reader(b, p) reads the NULL bitmap and the values of one image from bytes ``b`` at
 * ``p`` and returns ({label: value}, new p).
 * decode_rows(data, kind, reader_b, reader_a, start, end): every row of data[start:end] as
 * {"before": image or None, "after": image or None}.
 * count_rows(...): the same walk without building the values (the rows are then read on
 * demand); it raises where decode_rows raises.
 * rows_json(...): the rows' JSON text as the serializer writes it (_rowjson.c), or None.
 * EventLines(template, end, names, bodies): an event's file --json line from declared layouts,
 * or a decline (_line.c).
 * Any read past the end raises ValueError (the caller then runs the per-field Python path,
 * which names the exact offset).
 */
#include "_kernel.h"

static PyObject *s_before, *s_after;

/* one image at *pp -> new dict */
static PyObject *
read_image(ImageReader *self, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
           Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    Py_ssize_t ncols = self->n;
    Py_ssize_t nb = (ncols + 7) / 8;
    if (n - p < nb) {
        kernel_past_end();
        return NULL;
    }
    const unsigned char *nulls = b + p;
    p += nb;
    PyObject *row = _PyDict_NewPresized(ncols);
    if (row == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *v;
        if (nulls[i >> 3] & (1 << (i & 7))) {
            v = Py_None;
            Py_INCREF(v);
        } else {
            v = kernel_read_value(&self->cols[i], bobj, b, n, &p);
            if (v == NULL) {
                Py_DECREF(row);
                return NULL;
            }
        }
        int rc = PyDict_SetItem(row, PyTuple_GET_ITEM(self->labels, i), v);
        Py_DECREF(v);
        if (rc < 0) {
            Py_DECREF(row);
            return NULL;
        }
    }
    *pp = p;
    return row;
}

static void
ImageReader_dealloc(ImageReader *self)
{
    PyMem_Free(self->cols);
    Py_XDECREF(self->specs);
    Py_XDECREF(self->labels);
    Py_XDECREF(self->json_keys);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int
parse_spec(Col *c, PyObject *spec)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 8) {
        PyErr_SetString(PyExc_TypeError, "a column spec is an 8-tuple");
        return -1;
    }
    long long v[7];
    for (int i = 0; i < 7; i++) {
        v[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, i));
        if (v[i] == -1 && PyErr_Occurred())
            return -1;
    }
    memset(c, 0, sizeof *c);
    c->kind = (int)v[0];
    c->a = v[1]; c->b = v[2]; c->c = v[3]; c->d = v[4]; c->e = v[5]; c->f = v[6];
    c->obj = PyTuple_GET_ITEM(spec, 7);
    switch (c->kind) {
    case K_PREFIXED:
        if (c->a < 1 || c->a > 4) {
            PyErr_SetString(PyExc_ValueError, "length prefix must be 1-4 bytes");
            return -1;
        }
        if (c->obj != Py_None) {
            c->codec = PyUnicode_AsUTF8(c->obj);
            if (c->codec == NULL)
                return -1;
            c->utf8 = strcmp(c->codec, "utf-8") == 0 || strcmp(c->codec, "utf8") == 0;
        }
        break;
    case K_ENUM1:
        if (!PyTuple_Check(c->obj) || PyTuple_GET_SIZE(c->obj) != 256) {
            PyErr_SetString(PyExc_TypeError, "an ENUM table is a 256-tuple");
            return -1;
        }
        break;
    case K_DT2:
    case K_TS2: {
        Py_ssize_t want = c->kind == K_DT2 ? 3 : 4;
        if (!PyTuple_Check(c->obj) || PyTuple_GET_SIZE(c->obj) != want || c->a < 0 || c->a > 6) {
            PyErr_SetString(PyExc_TypeError, "bad temporal spec");
            return -1;
        }
        c->t1 = PyTuple_GET_ITEM(c->obj, 0);
        c->t2 = PyTuple_GET_ITEM(c->obj, 1);
        c->t3 = PyTuple_GET_ITEM(c->obj, 2);
        if (want == 4)
            c->t4 = PyTuple_GET_ITEM(c->obj, 3);
        break;
    }
    case K_DEC:
        if (c->a < 1 || c->a > 8) {
            PyErr_SetString(PyExc_ValueError, "small DECIMAL size must be 1-8 bytes");
            return -1;
        }
        break;
    case K_TIME2:
        if (c->a < 0 || c->a > 6) {
            PyErr_SetString(PyExc_ValueError, "TIME2 fsp must be 0-6");
            return -1;
        }
        break;
    case K_SET:
        if (c->a < 2 || c->a > 8 || !PyTuple_Check(c->obj) || PyTuple_GET_SIZE(c->obj) > 64) {
            PyErr_SetString(PyExc_TypeError, "a SET spec is 2-8 bytes and at most 64 names");
            return -1;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(c->obj); i++) {
            if (!PyUnicode_Check(PyTuple_GET_ITEM(c->obj, i))) {
                PyErr_SetString(PyExc_TypeError, "SET member names must be str");
                return -1;
            }
        }
        break;
    case K_UINT_BE:
    case K_UINT_LE:
        if (c->a < 1 || c->a > 8) {
            PyErr_SetString(PyExc_ValueError, "an integer of 1-8 bytes");
            return -1;
        }
        break;
    case K_ENUM:
        if (c->a < 1 || c->a > 8 || !PyTuple_Check(c->obj)) {
            PyErr_SetString(PyExc_TypeError, "an ENUM spec is 1-8 bytes and a tuple of names");
            return -1;
        }
        break;
    case K_DECN:
        if (c->a < 1 || c->a > 64 || c->b < 0 || c->c < 0 || c->b > 81 || c->c > 81 ||
            !PyCallable_Check(c->obj)) {
            PyErr_SetString(PyExc_ValueError, "bad DECIMAL spec");
            return -1;
        }
        break;
    case K_BINARY:
        if (c->a < 1 || c->a > 2 || c->b < 0) {
            PyErr_SetString(PyExc_ValueError, "a BINARY spec is a 1-2 byte prefix and a length");
            return -1;
        }
        break;
    case K_PY:
        if (!PyCallable_Check(c->obj)) {
            PyErr_SetString(PyExc_TypeError, "K_PY needs a callable reader");
            return -1;
        }
        break;
    default:
        if (c->kind < K_PY || c->kind > K_LAST_KIND) {
            PyErr_Format(PyExc_ValueError, "unknown column kind %d", c->kind);
            return -1;
        }
    }
    return 0;
}

static PyObject *
ImageReader_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *specs, *labels;
    static char *kwlist[] = {"specs", "labels", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!:ImageReader", kwlist, &PyTuple_Type,
                                     &specs, &PyTuple_Type, &labels))
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    if (PyTuple_GET_SIZE(labels) != n) {
        PyErr_SetString(PyExc_ValueError, "specs and labels differ in length");
        return NULL;
    }
    ImageReader *self = (ImageReader *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->n = n;
    self->cols = PyMem_Calloc((size_t)(n ? n : 1), sizeof(Col));
    if (self->cols == NULL) {
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    Py_INCREF(specs);
    self->specs = specs;
    Py_INCREF(labels);
    self->labels = labels;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (parse_spec(&self->cols[i], PyTuple_GET_ITEM(specs, i)) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    }
    return (PyObject *)self;
}

/* reader(b, p) -> (row dict, new p) */
static PyObject *
ImageReader_call(ImageReader *self, PyObject *args, PyObject *kwds)
{
    PyObject *bobj;
    Py_ssize_t p;
    if (kwds != NULL && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "ImageReader takes no keyword arguments");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!n:ImageReader", &PyBytes_Type, &bobj, &p))
        return NULL;
    Py_ssize_t n = PyBytes_GET_SIZE(bobj);
    if (p < 0 || p > n) {
        kernel_past_end();
        return NULL;
    }
    PyObject *row = read_image(self, bobj, (const unsigned char *)PyBytes_AS_STRING(bobj), n, &p);
    if (row == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(Nn)", row, p);
    return out;
}

PyTypeObject ImageReaderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlogscope._native._kernel.ImageReader",
    .tp_basicsize = sizeof(ImageReader),
    .tp_dealloc = (destructor)ImageReader_dealloc,
    .tp_call = (ternaryfunc)ImageReader_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "ImageReader(specs, labels): reads one row image: reader(b, p) -> (dict, p)",
    .tp_new = ImageReader_new,
};

/* all rows of bobj[start:end] (absolute positions); kind: 0 INSERT, 1 UPDATE, 2 DELETE */
static PyObject *
rows_between(PyObject *bobj, Py_ssize_t start, Py_ssize_t end, int kind, ImageReader *rb,
             ImageReader *ra)
{
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    Py_ssize_t p = start;
    PyObject *rows = PyList_New(0);
    if (rows == NULL)
        return NULL;
    while (p < end) {
        Py_ssize_t start_p = p;
        PyObject *before = Py_None, *after = Py_None;
        Py_INCREF(Py_None);
        Py_INCREF(Py_None);
        if (kind == 0) {
            Py_DECREF(after);
            after = read_image(rb, bobj, b, end, &p);
        } else {
            Py_DECREF(before);
            before = read_image(rb, bobj, b, end, &p);
            if (before != NULL && kind == 1) {
                Py_DECREF(after);
                after = read_image(ra, bobj, b, end, &p);
            }
        }
        if (before == NULL || after == NULL) {
            Py_XDECREF(before);
            Py_XDECREF(after);
            Py_DECREF(rows);
            return NULL;
        }
        PyObject *row = _PyDict_NewPresized(2);
        if (row == NULL || PyDict_SetItem(row, s_before, before) < 0 ||
            PyDict_SetItem(row, s_after, after) < 0 || PyList_Append(rows, row) < 0) {
            Py_XDECREF(row);
            Py_DECREF(before);
            Py_DECREF(after);
            Py_DECREF(rows);
            return NULL;
        }
        Py_DECREF(row);
        Py_DECREF(before);
        Py_DECREF(after);
        if (p == start_p) {
            kernel_no_progress();
            Py_DECREF(rows);
            return NULL;
        }
    }
    return rows;
}

/* the start and end arguments of decode_rows/count_rows, checked against the data */
int
kernel_rows_args(PyObject *args, const char *fmt, PyObject **bobj, int *kind, PyObject **rb,
                PyObject **ra, Py_ssize_t *start, Py_ssize_t *end)
{
    *start = 0;
    *end = -1;
    if (!PyArg_ParseTuple(args, fmt, &PyBytes_Type, bobj, kind, &ImageReaderType, rb, ra,
                          start, end))
        return -1;
    Py_ssize_t n = PyBytes_GET_SIZE(*bobj);
    if (*end < 0)
        *end = n;
    if (*start < 0 || *start > *end || *end > n) {
        PyErr_SetString(PyExc_ValueError, "start/end outside the data");
        return -1;
    }
    if (*kind == 1 && !PyObject_TypeCheck(*ra, &ImageReaderType)) {
        PyErr_SetString(PyExc_TypeError, "UPDATE needs an after-image reader");
        return -1;
    }
    return 0;
}

/* decode_rows(data, kind, reader_b, reader_a, start=0, end=len(data))
 *   -> [{"before": ..., "after": ...}, ...]
 * kind: 0 INSERT (images are after images), 1 UPDATE (before, after pairs), 2 DELETE */
static PyObject *
decode_rows(PyObject *module, PyObject *args)
{
    PyObject *bobj, *rb, *ra;
    int kind;
    Py_ssize_t start, end;
    (void)module;
    if (kernel_rows_args(args, "O!iO!O|nn:decode_rows", &bobj, &kind, &rb, &ra, &start,
                        &end) < 0)
        return NULL;
    return rows_between(bobj, start, end, kind, (ImageReader *)rb, (ImageReader *)ra);
}

/* one non-NULL column at *pp skipped without building its value where its size follows from
 * the bytes alone; the kinds whose reading can fail otherwise are read (value dropped) */
int
kernel_skip_value(const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n, Py_ssize_t *pp)
{
    Scalar sv = {0};
    int tag = kernel_scalar(c, b, n, pp, &sv);
    if (tag != S_NONE)
        return tag < 0 ? -1 : 0;
    Py_ssize_t p = *pp, left = n - p, size;
    switch (c->kind) {
    case K_ENUM1:
        size = 1;
        break;
    case K_TIME2:
        size = 3 + (c->a + 1) / 2;
        break;
    case K_SET: case K_DEC: case K_DECN: case K_ENUM:
        size = (Py_ssize_t)c->a;
        break;
    case K_DATE: case K_TIME_OLD:
        size = 3;
        break;
    case K_TIMESTAMP_OLD:
        size = 4;
        break;
    case K_DATETIME_OLD:
        size = 8;
        break;
    case K_NULL:
        size = 0;
        break;
    case K_DT2:
        if (c->b == F_NONE || c->b == F_SIX) {
            size = 5 + (c->a + 1) / 2;
            if (left >= size && be_uint(b + p, 5) >= 0x8000000000ULL)
                break;
        }
        goto read;
    case K_TS2:
        if (c->b == F_NONE || c->b == F_SIX) {
            size = 4 + (c->a + 1) / 2;
            break;
        }
        goto read;
    default:
        goto read;
    }
    if (size > left)
        return kernel_past_end();
    *pp = p + size;
    return 0;
read: {
        PyObject *v = kernel_read_value(c, bobj, b, n, pp);
        if (v == NULL)
            return -1;
        Py_DECREF(v);
        return 0;
    }
}

static int
skip_image(ImageReader *self, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
           Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    Py_ssize_t nb = (self->n + 7) / 8;
    if (n - p < nb)
        return kernel_past_end();
    const unsigned char *nulls = b + p;
    p += nb;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (!(nulls[i >> 3] & (1 << (i & 7))) && kernel_skip_value(&self->cols[i], bobj, b, n, &p) < 0)
            return -1;
    }
    *pp = p;
    return 0;
}

/* count_rows(data, kind, reader_b, reader_a, start=0, end=len(data)) -> number of rows:
 * walks the images as decode_rows reads them (raising where it raises) without building the
 * values, so that a caller can read them later, on demand */
Py_ssize_t
kernel_count_images(PyObject *bobj, Py_ssize_t start, Py_ssize_t end, int kind,
                    ImageReader *rb, ImageReader *ra)
{
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    Py_ssize_t p = start, count = 0;
    while (p < end) {
        Py_ssize_t start_p = p;
        if (skip_image(rb, bobj, b, end, &p) < 0)
            return -1;
        if (kind == 1 && skip_image(ra, bobj, b, end, &p) < 0)
            return -1;
        if (p == start_p)
            return kernel_no_progress();
        count++;
    }
    return count;
}

static PyObject *
count_rows(PyObject *module, PyObject *args)
{
    PyObject *bobj, *rb, *ra;
    int kind;
    Py_ssize_t start, end, count = 0;
    (void)module;
    if (kernel_rows_args(args, "O!iO!O|nn:count_rows", &bobj, &kind, &rb, &ra, &start,
                        &end) < 0)
        return NULL;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    Py_ssize_t p = start;
    while (p < end) {
        Py_ssize_t start_p = p;
        if (skip_image((ImageReader *)rb, bobj, b, end, &p) < 0)
            return NULL;
        if (kind == 1 && skip_image((ImageReader *)ra, bobj, b, end, &p) < 0)
            return NULL;
        if (p == start_p) {
            kernel_no_progress();
            return NULL;
        }
        count++;
    }
    return PyLong_FromSsize_t(count);
}

/* where each image of a rows event's images (data[start:end], read by the readers of its
 * plans) starts, in order (an UPDATE's before and after images alternate), by the walk
 * count_rows makes: the export keeps (data, position, reader) per image and writes its
 * columns from the bytes (_arrow.c) instead of reading each image into a dict first; NULL
 * with an exception when the images do not read */
PyObject *
kernel_image_positions(PyObject *bobj, int kind, PyObject *rb, PyObject *ra, Py_ssize_t start,
                       Py_ssize_t end)
{
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    Py_ssize_t p = start;
    while (p < end) {
        Py_ssize_t start_p = p;
        for (int img = 0; img < (kind == 1 ? 2 : 1); img++) {
            PyObject *at = PyLong_FromSsize_t(p);
            if (at == NULL || PyList_Append(out, at) < 0) {
                Py_XDECREF(at);
                Py_DECREF(out);
                return NULL;
            }
            Py_DECREF(at);
            if (skip_image((ImageReader *)(img ? ra : rb), bobj, b, end, &p) < 0) {
                Py_DECREF(out);
                return NULL;
            }
        }
        if (p == start_p) {
            Py_DECREF(out);
            kernel_no_progress();
            return NULL;
        }
    }
    return out;
}

/* image_positions(data, kind, reader_b, reader_a, start=0, end=len(data)) -> [int, ...] */
static PyObject *
image_positions(PyObject *module, PyObject *args)
{
    PyObject *bobj, *rb, *ra;
    int kind;
    Py_ssize_t start, end;
    (void)module;
    if (kernel_rows_args(args, "O!iO!O|nn:image_positions", &bobj, &kind, &rb, &ra, &start,
                         &end) < 0)
        return NULL;
    return kernel_image_positions(bobj, kind, rb, ra, start, end);
}

static PyMethodDef module_methods[] = {
    {"count_rows", count_rows, METH_VARARGS,
     "count_rows(data, kind, reader_b, reader_a, start=0, end=len(data)) -> number of rows"},
    {"rows_json", kernel_rows_json, METH_VARARGS,
     "rows_json(data, kind, reader_b, reader_a, start=0, end=len(data)) -> JSON bytes or None"},
    {"decode_rows", decode_rows, METH_VARARGS,
     "decode_rows(data, kind, reader_b, reader_a) -> list of {'before', 'after'} dicts"},
    {"image_buffers", kernel_image_buffers, METH_VARARGS,
     "image_buffers(refs, value_text, json_text) -> an image column's Arrow buffers or None"},
    {"pk_buffers", kernel_pk_buffers, METH_VARARGS,
     "pk_buffers(rows, after_slot, before_slot, value_text) -> the pk column's buffers or None"},
    {"columns", kernel_columns, METH_VARARGS,
     "columns(rows, wanted) -> [[row[j] for row in rows] for j in wanted], one pass"},
    {"image_positions", image_positions, METH_VARARGS,
     "image_positions(data, kind, reader_b, reader_a, start=0, end=len(data)) -> [pos, ...]"},
    {"column_buffers", kernel_column_buffers, METH_VARARGS,
     "column_buffers(values, kind) -> (nulls, validity, data, offsets) or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "binlogscope._native._kernel",
    .m_doc = "binlogscope's native kernel: row images to plain values (see binlogscope._native)",
    .m_size = -1,
    .m_methods = module_methods,
};

extern PyTypeObject IndexRowsType;  /* _pktindex.c: the TUI index's rows of event packets */

PyMODINIT_FUNC
PyInit__kernel(void)
{
    if (PyType_Ready(&ImageReaderType) < 0 || kernel_line_ready() < 0 ||
        PyType_Ready(&IndexRowsType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&kernel_module);
    if (m == NULL)
        return NULL;
    s_before = PyUnicode_InternFromString("before");
    s_after = PyUnicode_InternFromString("after");
    if (s_before == NULL || s_after == NULL)
        return NULL;
    Py_INCREF(&ImageReaderType);
    if (PyModule_AddObject(m, "ImageReader", (PyObject *)&ImageReaderType) < 0)
        return NULL;
    Py_INCREF(&EventLinesType);
    if (PyModule_AddObject(m, "EventLines", (PyObject *)&EventLinesType) < 0)
        return NULL;
    Py_INCREF(&IndexRowsType);
    if (PyModule_AddObject(m, "IndexRows", (PyObject *)&IndexRowsType) < 0)
        return NULL;
    /* binlogscope._native.PLAN_VERSION: the plan kinds and functions of this file */
    if (PyModule_AddIntConstant(m, "PLAN_VERSION", 11) < 0)
        return NULL;
    return m;
}
