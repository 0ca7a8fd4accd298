/* Arrow column buffers for the exporter's row groups, built in C.
 *
 * The Python builders in binlogscope.export.arrow (``_column``: ``pa.array`` over a transposed
 * column) and binlogscope.export.records (``image_columns``: the before/after text maps and
 * typed JSON) stay the definition. This module writes the same arrays' buffers straight from
 * the writer's buffered rows (a list of lists, one list per row in schema order): validity
 * bitmaps, int32 offsets and value bytes, which binlogscope.export.native wraps with
 * ``pa.Array.from_buffers``. No transposition, no Python object per value.
 *
 * Every function returns None for "not the fast case" (a value of a type it does not handle,
 * a string that is not valid UTF-8, a column too big for int32 offsets, a value out of the
 * column's range): the caller then builds that column the Python way, so whatever the Python
 * path does (including raising) happens unchanged. Values the C code has no text for in an
 * image (decimals' and temporals' objects, special ints such as BIT/YEAR, floats of a FLOAT
 * column, NaN...) are handed to the Python callbacks the caller passes in, one value at a time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define DECLINE 1 /* a helper's "not the fast case" (0: done, -1: Python error set) */

/* ---- growable byte buffers */

typedef struct {
    char *p;
    Py_ssize_t n, cap;
} Buf;

static int
grow(Buf *b, Py_ssize_t extra)
{
    if (b->n + extra <= b->cap)
        return 0;
    Py_ssize_t cap = b->cap ? b->cap : 1024;
    while (cap < b->n + extra)
        cap *= 2;
    char *p = PyMem_Realloc(b->p, (size_t)cap);
    if (p == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

static inline int
put(Buf *b, const void *s, Py_ssize_t k)
{
    if (grow(b, k) < 0)
        return -1;
    memcpy(b->p + b->n, s, (size_t)k);
    b->n += k;
    return 0;
}

static PyObject *
buf_bytes(const Buf *b)
{
    return PyBytes_FromStringAndSize(b->p ? b->p : "", b->n);
}

/* ---- validity bitmaps (Arrow: bit i set = slot i valid, LSB first) */

typedef struct {
    Buf bits;
    Py_ssize_t n, nulls;
} Valid;

static int
valid_add(Valid *v, int ok)
{
    if ((v->n & 7) == 0) {
        char zero = 0;
        if (put(&v->bits, &zero, 1) < 0)
            return -1;
    }
    if (ok)
        v->bits.p[v->n >> 3] |= (char)(1 << (v->n & 7));
    else
        v->nulls++;
    v->n++;
    return 0;
}

/* (null count, bitmap bytes or None when there is no null) */
static PyObject *
valid_pair(const Valid *v)
{
    if (!v->nulls)
        return Py_BuildValue("(nO)", v->nulls, Py_None);
    PyObject *bits = buf_bytes(&v->bits);
    if (bits == NULL)
        return NULL;
    return Py_BuildValue("(nN)", v->nulls, bits);
}

/* ---- string/binary arrays: validity, int32 offsets, data */

typedef struct {
    Valid valid;
    Buf off;
    Buf data;
} Strs;

static int
strs_init(Strs *s)
{
    memset(s, 0, sizeof(*s));
    int32_t zero = 0;
    return put(&s->off, &zero, 4);
}

static void
strs_free(Strs *s)
{
    PyMem_Free(s->valid.bits.p);
    PyMem_Free(s->off.p);
    PyMem_Free(s->data.p);
    memset(s, 0, sizeof(*s));
}

/* close the value written into s->data since the last offset (ok=0: a null) */
static int
strs_end(Strs *s, int ok)
{
    if (s->data.n > INT32_MAX)
        return DECLINE;
    int32_t o = (int32_t)s->data.n;
    if (put(&s->off, &o, 4) < 0)
        return -1;
    return valid_add(&s->valid, ok);
}

static int
strs_add(Strs *s, const char *p, Py_ssize_t k)
{
    if (put(&s->data, p, k) < 0)
        return -1;
    return strs_end(s, 1);
}

/* (nulls, validity, offsets, data) */
static PyObject *
strs_tuple(const Strs *s)
{
    PyObject *v = valid_pair(&s->valid);
    if (v == NULL)
        return NULL;
    PyObject *res = Py_BuildValue("(OOy#y#)", PyTuple_GET_ITEM(v, 0), PyTuple_GET_ITEM(v, 1),
                                  s->off.p, s->off.n, s->data.p ? s->data.p : "", s->data.n);
    Py_DECREF(v);
    return res;
}

/* a str's UTF-8 (borrowed, cached on the object); NULL = not the fast case (no error left) */
static const char *
utf8_of(PyObject *o, Py_ssize_t *k)
{
    const char *p = PyUnicode_AsUTF8AndSize(o, k);
    if (p == NULL)
        PyErr_Clear(); /* lone surrogates: the Python path decides what happens */
    return p;
}

/* ---- text pieces */

static const char HEX[] = "0123456789abcdef";

static int
put_hex(Buf *b, const char *s, Py_ssize_t k)
{
    if (grow(b, 2 * k) < 0)
        return -1;
    char *o = b->p + b->n;
    for (Py_ssize_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        o[2 * i] = HEX[c >> 4];
        o[2 * i + 1] = HEX[c & 15];
    }
    b->n += 2 * k;
    return 0;
}

/* the JSON string literal json.dumps(ensure_ascii=False) writes: quotes, backslash and the
 * control characters below 0x20 escaped, everything else (UTF-8) as it is */
static int
put_json_str(Buf *b, const char *s, Py_ssize_t k)
{
    if (grow(b, k + 2) < 0)
        return -1;
    b->p[b->n++] = '"';
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < k; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (put(b, s + run, i - run) < 0)
            return -1;
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        int n = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = HEX[c >> 4];
            esc[5] = HEX[c & 15];
            n = 6;
        }
        if (put(b, esc, n) < 0)
            return -1;
    }
    if (put(b, s + run, k - run) < 0)
        return -1;
    return put(b, "\"", 1);
}

/* decimal text of an exact int; DECLINE when it does not fit 64 bits (no error left) */
static int
int_text(PyObject *v, char *out, Py_ssize_t *k)
{
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (x == -1 && PyErr_Occurred())
        return -1;
    if (!overflow) {
        *k = snprintf(out, 24, "%lld", x);
        return 0;
    }
    if (overflow > 0) {
        unsigned long long u = PyLong_AsUnsignedLongLong(v);
        if (!(u == (unsigned long long)-1 && PyErr_Occurred())) {
            *k = snprintf(out, 24, "%llu", u);
            return 0;
        }
        PyErr_Clear();
    }
    return DECLINE;
}

/* rows[i][index], borrowed; NULL = not the fast case */
static inline PyObject *
cell(PyObject *rows, Py_ssize_t i, Py_ssize_t index)
{
    PyObject *row = PyList_GET_ITEM(rows, i);
    if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) <= index)
        return NULL;
    return PyList_GET_ITEM(row, index);
}

/* ---- maps: (nulls, validity, offsets, keys, items) */

typedef struct {
    Valid valid;
    Buf off;
    Strs keys, items;
    int32_t count;
} Map;

static int
map_init(Map *m)
{
    memset(m, 0, sizeof(*m));
    if (strs_init(&m->keys) < 0 || strs_init(&m->items) < 0)
        return -1;
    return put(&m->off, &m->count, 4);
}

static void
map_free(Map *m)
{
    PyMem_Free(m->valid.bits.p);
    PyMem_Free(m->off.p);
    strs_free(&m->keys);
    strs_free(&m->items);
}

/* close a row of k entries (ok=0: a null map) */
static int
map_end(Map *m, Py_ssize_t k, int ok)
{
    if (k > INT32_MAX - m->count)
        return DECLINE;
    m->count += (int32_t)k;
    if (put(&m->off, &m->count, 4) < 0)
        return -1;
    return valid_add(&m->valid, ok);
}

static PyObject *
map_tuple(const Map *m)
{
    PyObject *vp = valid_pair(&m->valid);
    PyObject *keys = strs_tuple(&m->keys);
    PyObject *items = strs_tuple(&m->items);
    PyObject *res = NULL;
    if (vp != NULL && keys != NULL && items != NULL)
        res = Py_BuildValue("(OOy#OO)", PyTuple_GET_ITEM(vp, 0), PyTuple_GET_ITEM(vp, 1),
                            m->off.p, m->off.n, keys, items);
    Py_XDECREF(vp);
    Py_XDECREF(keys);
    Py_XDECREF(items);
    return res;
}

/* one str (or None) into s; DECLINE for anything else */
static int
add_str_or_none(Strs *s, PyObject *v)
{
    if (v == Py_None)
        return strs_end(s, 0);
    if (!PyUnicode_CheckExact(v))
        return DECLINE;
    Py_ssize_t k;
    const char *p = utf8_of(v, &k);
    if (p == NULL)
        return DECLINE;
    return strs_add(s, p, k);
}

/* ---- plain columns, all of a row group's in one pass over its rows */

enum { K_SKIP = 0, K_INT16 = 1, K_INT32 = 2, K_INT64 = 3, K_BOOL = 4, K_STR = 5, K_BIN = 6,
       K_STRLIST = 7, K_PAIRS = 8 };

typedef struct {
    int kind;   /* K_SKIP: not asked for, or declined */
    Valid valid; /* ints, bools, lists */
    Buf data;   /* ints: the values */
    Valid bits; /* bools: the values' bitmap */
    Buf off;    /* lists: offsets */
    int32_t count;
    Strs s;     /* strings, binary; list items */
    Map m;      /* maps */
} Col;

static int
col_init(Col *c, int kind)
{
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    if (kind == K_STR || kind == K_BIN || kind == K_STRLIST) {
        if (strs_init(&c->s) < 0)
            return -1;
    }
    if (kind == K_STRLIST)
        return put(&c->off, &c->count, 4);
    if (kind == K_PAIRS)
        return map_init(&c->m);
    return 0;
}

static void
col_free(Col *c)
{
    PyMem_Free(c->valid.bits.p);
    PyMem_Free(c->data.p);
    PyMem_Free(c->bits.bits.p);
    PyMem_Free(c->off.p);
    strs_free(&c->s);
    if (c->kind == K_PAIRS)
        map_free(&c->m);
    memset(c, 0, sizeof(*c));
}

static int
add_int(Col *c, PyObject *v, int width)
{
    long long x = 0;
    if (v != Py_None) {
        if (!PyLong_CheckExact(v))
            return DECLINE;
        int overflow = 0;
        x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (x == -1 && PyErr_Occurred())
            return -1;
        long long lo = width == 2 ? INT16_MIN : width == 4 ? INT32_MIN : INT64_MIN;
        long long hi = width == 2 ? INT16_MAX : width == 4 ? INT32_MAX : INT64_MAX;
        if (overflow || x < lo || x > hi)
            return DECLINE;
    }
    if (valid_add(&c->valid, v != Py_None) < 0 || grow(&c->data, width) < 0)
        return -1;
    char *o = c->data.p + c->data.n;
    if (width == 2) {
        int16_t y = (int16_t)x;
        memcpy(o, &y, 2);
    } else if (width == 4) {
        int32_t y = (int32_t)x;
        memcpy(o, &y, 4);
    } else {
        int64_t y = (int64_t)x;
        memcpy(o, &y, 8);
    }
    c->data.n += width;
    return 0;
}

/* the length of a list cell (0 for None); -1 when it is neither */
static inline Py_ssize_t
list_len(PyObject *v)
{
    if (v == Py_None)
        return 0;
    return PyList_CheckExact(v) ? PyList_GET_SIZE(v) : -1;
}

static int
add_pairs(Map *m, PyObject *v)
{
    Py_ssize_t k = list_len(v);
    if (k < 0)
        return DECLINE;
    for (Py_ssize_t j = 0; j < k; j++) {
        PyObject *pair = PyList_GET_ITEM(v, j);
        if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
            PyTuple_GET_ITEM(pair, 0) == Py_None)
            return DECLINE;
        int rc = add_str_or_none(&m->keys, PyTuple_GET_ITEM(pair, 0));
        if (rc == 0)
            rc = add_str_or_none(&m->items, PyTuple_GET_ITEM(pair, 1));
        if (rc)
            return rc;
    }
    return map_end(m, k, v != Py_None);
}

static int
add_strlist(Col *c, PyObject *v)
{
    Py_ssize_t k = list_len(v);
    if (k < 0)
        return DECLINE;
    for (Py_ssize_t j = 0; j < k; j++) {
        int rc = add_str_or_none(&c->s, PyList_GET_ITEM(v, j));
        if (rc)
            return rc;
    }
    if (k > INT32_MAX - c->count)
        return DECLINE;
    c->count += (int32_t)k;
    if (put(&c->off, &c->count, 4) < 0)
        return -1;
    return valid_add(&c->valid, v != Py_None);
}

/* one value into its column */
static int
col_add(Col *c, PyObject *v)
{
    switch (c->kind) {
    case K_INT16: return add_int(c, v, 2);
    case K_INT32: return add_int(c, v, 4);
    case K_INT64: return add_int(c, v, 8);
    case K_BOOL:
        if (v != Py_None && v != Py_True && v != Py_False)
            return DECLINE;
        if (valid_add(&c->valid, v != Py_None) < 0)
            return -1;
        return valid_add(&c->bits, v == Py_True);
    case K_STR: return add_str_or_none(&c->s, v);
    case K_BIN:
        if (v == Py_None)
            return strs_end(&c->s, 0);
        if (!PyBytes_CheckExact(v))
            return DECLINE;
        return strs_add(&c->s, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v));
    case K_STRLIST: return add_strlist(c, v);
    case K_PAIRS: return add_pairs(&c->m, v);
    default: return 0;
    }
}

/* ints, bools: (nulls, validity, data); strings: (nulls, validity, offsets, data); lists:
 * (nulls, validity, offsets, item strings); maps: (nulls, validity, offsets, keys, items) */
static PyObject *
col_result(Col *c)
{
    if (c->kind == K_STR || c->kind == K_BIN)
        return strs_tuple(&c->s);
    if (c->kind == K_PAIRS)
        return map_tuple(&c->m);
    PyObject *vp = valid_pair(&c->valid);
    if (vp == NULL)
        return NULL;
    PyObject *res;
    if (c->kind == K_STRLIST) {
        PyObject *items = strs_tuple(&c->s);
        res = items == NULL ? NULL
                            : Py_BuildValue("(OOy#N)", PyTuple_GET_ITEM(vp, 0),
                                            PyTuple_GET_ITEM(vp, 1), c->off.p, c->off.n, items);
    } else {
        const Buf *d = c->kind == K_BOOL ? &c->bits.bits : &c->data;
        res = Py_BuildValue("(OOy#)", PyTuple_GET_ITEM(vp, 0), PyTuple_GET_ITEM(vp, 1),
                            d->p ? d->p : "", d->n);
    }
    Py_DECREF(vp);
    return res;
}

static PyObject *
columns(PyObject *module, PyObject *args)
{
    PyObject *rows, *kinds;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!:columns", &PyList_Type, &rows, &PyTuple_Type, &kinds))
        return NULL;
    Py_ssize_t ncols = PyTuple_GET_SIZE(kinds), n = PyList_GET_SIZE(rows);
    Col *cols = PyMem_Calloc((size_t)(ncols ? ncols : 1), sizeof(Col));
    if (cols == NULL)
        return PyErr_NoMemory();
    PyObject *res = NULL;
    for (Py_ssize_t j = 0; j < ncols; j++) {
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(kinds, j));
        if (kind == -1 && PyErr_Occurred())
            goto done;
        if (kind < K_SKIP || kind > K_PAIRS) {
            PyErr_Format(PyExc_ValueError, "unknown column kind %ld", kind);
            goto done;
        }
        if (col_init(&cols[j], (int)kind) < 0)
            goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) < ncols) {
            for (Py_ssize_t j = 0; j < ncols; j++)
                col_free(&cols[j]); /* every column declined */
            break;
        }
        PyObject **cells = ((PyListObject *)row)->ob_item;
        for (Py_ssize_t j = 0; j < ncols; j++) {
            if (cols[j].kind == K_SKIP)
                continue;
            int rc = col_add(&cols[j], cells[j]);
            if (rc < 0)
                goto done;
            if (rc == DECLINE)
                col_free(&cols[j]); /* kind K_SKIP from now on: the caller builds it */
        }
    }
    res = PyList_New(ncols);
    if (res == NULL)
        goto done;
    for (Py_ssize_t j = 0; j < ncols; j++) {
        PyObject *r = cols[j].kind == K_SKIP ? Py_NewRef(Py_None) : col_result(&cols[j]);
        if (r == NULL) {
            Py_CLEAR(res);
            goto done;
        }
        PyList_SET_ITEM(res, j, r);
    }
done:
    for (Py_ssize_t j = 0; j < ncols; j++)
        col_free(&cols[j]);
    PyMem_Free(cols);
    return res;
}

/* ---- row images: the text map and the typed JSON object of each (image, columns) pair */

typedef struct {
    PyObject *value_text; /* value_text(value, key, columns) -> str | None */
    PyObject *json_text;  /* json_text(value) -> str */
    PyObject *cols;       /* the columns object the sets below belong to (borrowed) */
    PyObject *special;    /* cols.special: labels whose ints need value_text */
    PyObject *doubles;    /* cols.doubles: labels of DOUBLE columns */
    PyObject *special_name, *doubles_name;
} Images;

static int
images_init(Images *im)
{
    im->special_name = PyUnicode_InternFromString("special");
    im->doubles_name = PyUnicode_InternFromString("doubles");
    return im->special_name != NULL && im->doubles_name != NULL ? 0 : -1;
}

static void
images_clear(Images *im)
{
    Py_CLEAR(im->special);
    Py_CLEAR(im->doubles);
    Py_CLEAR(im->special_name);
    Py_CLEAR(im->doubles_name);
}

static int
set_columns(Images *im, PyObject *cols)
{
    if (cols == im->cols)
        return 0;
    Py_CLEAR(im->special);
    Py_CLEAR(im->doubles);
    im->cols = cols;
    if (cols == Py_None)
        return 0;
    im->special = PyObject_GetAttr(cols, im->special_name);
    if (im->special == NULL)
        return -1;
    im->doubles = PyObject_GetAttr(cols, im->doubles_name);
    if (im->doubles == NULL)
        return -1;
    if (!PyAnySet_Check(im->special) || !PyAnySet_Check(im->doubles)) {
        PyErr_SetString(PyExc_TypeError, "images: columns.special/doubles must be sets");
        return -1;
    }
    return 0;
}

static inline int
in_set(PyObject *set, PyObject *key)
{
    return set == NULL || PySet_GET_SIZE(set) == 0 ? 0 : PySet_Contains(set, key);
}

/* the map text of a value from value_text(v, k, cols) */
static int
text_by_callback(Images *im, Strs *items, PyObject *v, PyObject *k)
{
    PyObject *t = PyObject_CallFunctionObjArgs(im->value_text, v, k, im->cols, NULL);
    if (t == NULL)
        return -1;
    int rc = add_str_or_none(items, t);
    Py_DECREF(t);
    return rc;
}

static int
json_by_callback(Images *im, Buf *json, PyObject *v)
{
    PyObject *t = PyObject_CallOneArg(im->json_text, v);
    if (t == NULL)
        return -1;
    int rc = DECLINE;
    if (PyUnicode_CheckExact(t)) {
        Py_ssize_t k;
        const char *p = utf8_of(t, &k);
        rc = p == NULL ? DECLINE : put(json, p, k);
    }
    Py_DECREF(t);
    return rc;
}

/* one value: its map text into items, its JSON literal onto json */
static int
image_value(Images *im, Strs *items, Buf *json, PyObject *k, PyObject *v)
{
    int rc;
    if (v == Py_None) {
        rc = strs_end(items, 0);
        return rc ? rc : put(json, "null", 4);
    }
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *p = utf8_of(v, &n);
        if (p == NULL)
            return DECLINE;
        rc = strs_add(items, p, n);
        return rc ? rc : put_json_str(json, p, n);
    }
    if (PyLong_CheckExact(v)) {
        char text[24];
        Py_ssize_t n;
        rc = int_text(v, text, &n);
        if (rc < 0)
            return rc;
        if (rc == DECLINE) { /* beyond 64 bits: the callbacks write it */
            rc = text_by_callback(im, items, v, k);
            return rc ? rc : json_by_callback(im, json, v);
        }
        int special = in_set(im->special, k);
        if (special < 0)
            return -1;
        rc = special ? text_by_callback(im, items, v, k) : strs_add(items, text, n);
        return rc ? rc : put(json, text, n);
    }
    if (PyBytes_CheckExact(v)) {
        const char *p = PyBytes_AS_STRING(v);
        Py_ssize_t n = PyBytes_GET_SIZE(v);
        if (put(&items->data, "0x", 2) < 0 || put_hex(&items->data, p, n) < 0)
            return -1;
        rc = strs_end(items, 1);
        if (rc)
            return rc;
        if (put(json, "\"", 1) < 0 || put_hex(json, p, n) < 0)
            return -1;
        return put(json, "\"", 1);
    }
    if (PyFloat_CheckExact(v)) {
        double d = PyFloat_AS_DOUBLE(v);
        char *r = NULL;
        if (isfinite(d)) { /* float.__repr__, what the JSON encoder writes */
            r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
            if (r == NULL)
                return -1;
        }
        double a = fabs(d);
        int dbl = r != NULL && a >= 1e-4 && a < 1e15 ? in_set(im->doubles, k) : 0;
        if (dbl < 0) {
            PyMem_Free(r);
            return -1;
        }
        if (dbl) { /* a DOUBLE in MySQL's fixed-notation range: repr without a ".0" */
            Py_ssize_t n = (Py_ssize_t)strlen(r);
            Py_ssize_t m = n >= 2 && r[n - 2] == '.' && r[n - 1] == '0' ? n - 2 : n;
            rc = strs_add(items, r, m);
        } else {
            rc = text_by_callback(im, items, v, k);
        }
        if (rc == 0)
            rc = r != NULL ? put(json, r, (Py_ssize_t)strlen(r)) : json_by_callback(im, json, v);
        PyMem_Free(r);
        return rc;
    }
    rc = text_by_callback(im, items, v, k);
    return rc ? rc : json_by_callback(im, json, v);
}

/* one (image, columns) pair, or None */
static int
image_row(Images *im, Map *m, Strs *js, PyObject *ref)
{
    int rc;
    if (ref == Py_None) {
        rc = map_end(m, 0, 0);
        return rc ? rc : strs_end(js, 0);
    }
    if (!PyTuple_CheckExact(ref) || PyTuple_GET_SIZE(ref) != 2 ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(ref, 0)))
        return DECLINE;
    PyObject *image = PyTuple_GET_ITEM(ref, 0);
    if (set_columns(im, PyTuple_GET_ITEM(ref, 1)) < 0)
        return -1;
    Buf *json = &js->data;
    Py_ssize_t pos = 0, count = 0;
    PyObject *k, *v;
    if (put(json, "{", 1) < 0)
        return -1;
    while (PyDict_Next(image, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            return DECLINE;
        Py_ssize_t n;
        const char *p = utf8_of(k, &n);
        if (p == NULL)
            return DECLINE;
        if ((count && put(json, ", ", 2) < 0) || put_json_str(json, p, n) < 0 ||
            put(json, ": ", 2) < 0)
            return -1;
        rc = strs_add(&m->keys, p, n);
        if (rc)
            return rc;
        /* the value may run Python code (a callback): keep k and v alive through it */
        Py_INCREF(k);
        Py_INCREF(v);
        rc = image_value(im, &m->items, json, k, v);
        Py_DECREF(k);
        Py_DECREF(v);
        if (rc)
            return rc;
        count++;
    }
    if (put(json, "}", 1) < 0)
        return -1;
    rc = map_end(m, count, 1);
    return rc ? rc : strs_end(js, 1);
}

static PyObject *
images(PyObject *module, PyObject *args)
{
    PyObject *rows;
    Py_ssize_t index;
    Images im = {0};
    (void)module;
    if (!PyArg_ParseTuple(args, "O!nOO:images", &PyList_Type, &rows, &index, &im.value_text,
                          &im.json_text))
        return NULL;
    Map m;
    Strs js;
    PyObject *res = NULL;
    int mi = images_init(&im) == 0 && map_init(&m) == 0, ji = mi && strs_init(&js) == 0;
    if (!ji)
        goto done;
    Py_ssize_t n = PyList_GET_SIZE(rows);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ref = cell(rows, i, index);
        if (ref == NULL)
            goto decline;
        /* the dict is iterated while callbacks run: hold the pair */
        Py_INCREF(ref);
        int rc = image_row(&im, &m, &js, ref);
        Py_DECREF(ref);
        if (rc < 0)
            goto done;
        if (rc == DECLINE)
            goto decline;
    }
    {
        PyObject *mt = map_tuple(&m);
        PyObject *jt = strs_tuple(&js);
        if (mt != NULL && jt != NULL)
            res = PyTuple_Pack(2, mt, jt);
        Py_XDECREF(mt);
        Py_XDECREF(jt);
    }
    goto done;
decline:
    res = Py_NewRef(Py_None);
done:
    if (mi)
        map_free(&m);
    if (ji)
        strs_free(&js);
    images_clear(&im);
    return res;
}

/* the ``pk`` map of each row: (key, text) of the primary key labels (columns.pk) present in
 * the after image, or the before image when there is no after; None when the columns name no
 * key or the image is empty or holds none of them (the mapper's ``... or None``) */
static int
pk_row(Images *im, Map *m, Buf *scratch, PyObject *before, PyObject *after, PyObject *pk_name)
{
    PyObject *ref = after != Py_None ? after : before;
    if (ref == Py_None)
        return map_end(m, 0, 0);
    if (!PyTuple_CheckExact(ref) || PyTuple_GET_SIZE(ref) != 2 ||
        !PyDict_CheckExact(PyTuple_GET_ITEM(ref, 0)))
        return DECLINE;
    PyObject *image = PyTuple_GET_ITEM(ref, 0), *cols = PyTuple_GET_ITEM(ref, 1);
    if (cols == Py_None || PyDict_GET_SIZE(image) == 0)
        return map_end(m, 0, 0);
    if (set_columns(im, cols) < 0)
        return -1;
    PyObject *labels = PyObject_GetAttr(cols, pk_name);
    if (labels == NULL)
        return -1;
    int rc = 0;
    Py_ssize_t count = 0;
    if (labels != Py_None && !PyList_CheckExact(labels))
        rc = DECLINE;
    for (Py_ssize_t j = 0; rc == 0 && labels != Py_None && j < PyList_GET_SIZE(labels); j++) {
        PyObject *k = PyList_GET_ITEM(labels, j);
        if (!PyUnicode_CheckExact(k)) {
            rc = DECLINE;
            break;
        }
        PyObject *v = PyDict_GetItemWithError(image, k);
        if (v == NULL) {
            rc = PyErr_Occurred() ? -1 : 0;
            continue;
        }
        Py_ssize_t n;
        const char *p = utf8_of(k, &n);
        if (p == NULL) {
            rc = DECLINE;
            break;
        }
        rc = strs_add(&m->keys, p, n);
        if (rc == 0) {
            Py_INCREF(v);
            scratch->n = 0; /* the JSON literal image_value writes too is not wanted here */
            rc = image_value(im, &m->items, scratch, k, v);
            Py_DECREF(v);
        }
        count++;
    }
    Py_DECREF(labels);
    if (rc)
        return rc;
    return map_end(m, count, count > 0);
}

static PyObject *
pk(PyObject *module, PyObject *args)
{
    PyObject *rows;
    Py_ssize_t bi, ai;
    Images im = {0};
    (void)module;
    if (!PyArg_ParseTuple(args, "O!nnOO:pk", &PyList_Type, &rows, &bi, &ai, &im.value_text,
                          &im.json_text))
        return NULL;
    Py_ssize_t top = bi > ai ? bi : ai;
    PyObject *pk_name = PyUnicode_InternFromString("pk");
    Map m;
    Buf scratch = {0};
    PyObject *res = NULL;
    int mi = images_init(&im) == 0 && pk_name != NULL && map_init(&m) == 0;
    if (!mi)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(rows); i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) <= top)
            goto decline;
        PyObject *b = PyList_GET_ITEM(row, bi), *a = PyList_GET_ITEM(row, ai);
        Py_INCREF(b);
        Py_INCREF(a);
        int rc = pk_row(&im, &m, &scratch, b, a, pk_name);
        Py_DECREF(b);
        Py_DECREF(a);
        if (rc < 0)
            goto done;
        if (rc == DECLINE)
            goto decline;
    }
    res = map_tuple(&m);
    goto done;
decline:
    res = Py_NewRef(Py_None);
done:
    if (mi)
        map_free(&m);
    PyMem_Free(scratch.p);
    images_clear(&im);
    Py_XDECREF(pk_name);
    return res;
}

static PyMethodDef methods[] = {
    {"pk", pk, METH_VARARGS,
     "pk(rows, before_index, after_index, value_text, json_text) -> map buffers, or None"},
    {"columns", columns, METH_VARARGS,
     "columns(rows, kinds) -> per column: its Arrow buffers, or None (skipped or declined)"},
    {"images", images, METH_VARARGS,
     "images(rows, index, value_text, json_text) -> (map buffers, JSON buffers), or None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_ccolumns",
    "Arrow column buffers for the exporter's row groups (see binlogscope.export.native)", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__ccolumns(void)
{
    return PyModule_Create(&module);
}
