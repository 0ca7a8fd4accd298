/*
 * The export's image and pk columns written straight from a rows event's kept bytes: the
 * mapper leaves (data, position, ImageReader, columns) in a row's before/after slot instead of
 * a dict it read the image into (export/mapper.py, _kernel.c image_positions), and
 * image_buffers / pk_buffers (_arrow.c) hand such refs here.
 *
 * The text and JSON literal of each value are those the dict path writes for the value the
 * plan's reader gives (the one definition: arrow_put_value, and through it images.value_text
 * and images.json_text): the kinds the kernel reads as C values - integers, UTF-8 text,
 * bytes - are written from the bytes (ints of the columns' ``special`` labels, BIT and YEAR,
 * excepted); every other column is read into its Python value by kernel_read_value (the
 * reader decode_rows uses) and written by arrow_put_value. Text that is not valid UTF-8
 * declines there as it does from a dict.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "_arrow.h"

static const char HEX[] = "0123456789abcdef";

/* one non-NULL column at *pp: its text and JSON literal (json_fn NULL: text only) */
static int
put_col(Out *o, PyObject *label, const Col *c, PyObject *bobj, const unsigned char *b,
        Py_ssize_t n, Py_ssize_t *pp, PyObject *cols, PyObject *special, PyObject *text_fn,
        PyObject *json_fn)
{
    Py_ssize_t p0 = *pp;
    Scalar v = {0};
    Buf *jd = &o->json_data, *td = &o->item_data;
    int tag = kernel_scalar(c, b, n, pp, &v);
    switch (tag) {
    case -1:
        return -1;
    case S_INT:
    case S_UINT: {
        int in_special = special == NULL ? 0 : PySet_Contains(special, label);
        if (in_special < 0)
            return -1;
        if (in_special)
            break;
        char tmp[24];
        int len;
        if (tag == S_UINT) {
            len = put_uint(tmp, v.u, 1);
        } else if (v.i < 0) {
            tmp[0] = '-';
            len = 1 + put_uint(tmp + 1, (unsigned long long)0 - (unsigned long long)v.i, 1);
        } else {
            len = put_uint(tmp, (unsigned long long)v.i, 1);
        }
        if (json_fn == NULL)
            jd->len = 0;
        if (bits_add(&o->item_valid, 1) < 0 || buf_put(td, tmp, len) < 0 ||
            buf_put(jd, tmp, len) < 0)
            return -1;
        return 0;
    }
    case S_BYTES: {
        Py_ssize_t all = v.len + v.pad;
        if (json_fn == NULL)
            jd->len = 0;
        if (bits_add(&o->item_valid, 1) < 0 || buf_grow(td, 2 + 2 * all) < 0 ||
            buf_grow(jd, 2 + 2 * all) < 0)
            return -1;
        char *t = td->buf + td->len, *j = jd->buf + jd->len;
        t[0] = '0';
        t[1] = 'x';
        j[0] = '"';
        for (Py_ssize_t i = 0; i < v.len; i++) {
            t[2 + 2 * i] = j[1 + 2 * i] = HEX[v.s[i] >> 4];
            t[3 + 2 * i] = j[2 + 2 * i] = HEX[v.s[i] & 15];
        }
        memset(t + 2 + 2 * v.len, '0', (size_t)(2 * v.pad));
        memset(j + 1 + 2 * v.len, '0', (size_t)(2 * v.pad));
        j[1 + 2 * all] = '"';
        td->len += 2 + 2 * all;
        jd->len += 2 + 2 * all;
        return 0;
    }
    case S_TEXT:
        if (!c->utf8 || !kernel_valid_utf8(v.s, v.len))
            break;  /* another codec, or not UTF-8: the reader's str, as from a dict */
        if (json_fn == NULL)
            jd->len = 0;
        if (bits_add(&o->item_valid, 1) < 0 || buf_put(td, v.s, v.len) < 0 ||
            arrow_put_json_string(jd, (const char *)v.s, v.len) < 0)
            return -1;
        return 0;
    default:
        break;
    }
    *pp = p0;
    PyObject *obj = kernel_read_value(c, bobj, b, n, pp);
    if (obj == NULL)
        return -1;
    int rc = arrow_put_value(o, label, obj, cols, special, text_fn, json_fn);
    Py_DECREF(obj);
    return rc;
}

/* an image ref (data, position, ImageReader, columns), taken apart: its bytes, the reader,
 * the null bitmap and the position of its first value */
typedef struct {
    PyObject *data, *cols;
    const unsigned char *b, *nulls;
    Py_ssize_t n, p;
    ImageReader *r;
} Ref;

/* 0, DECLINE when it is not such a ref, -1 with an exception (an image past the data) */
static int
ref_parts(PyObject *ref, Ref *x)
{
    if (!PyTuple_CheckExact(ref) || PyTuple_GET_SIZE(ref) != 4)
        return DECLINE;
    x->data = PyTuple_GET_ITEM(ref, 0);
    PyObject *at = PyTuple_GET_ITEM(ref, 1), *reader = PyTuple_GET_ITEM(ref, 2);
    if (!PyBytes_CheckExact(x->data) || !PyLong_CheckExact(at) ||
        !PyObject_TypeCheck(reader, &ImageReaderType))
        return DECLINE;
    Py_ssize_t p = PyLong_AsSsize_t(at);
    if (p == -1 && PyErr_Occurred())
        return -1;
    x->r = (ImageReader *)reader;
    x->cols = PyTuple_GET_ITEM(ref, 3);
    x->b = (const unsigned char *)PyBytes_AS_STRING(x->data);
    x->n = PyBytes_GET_SIZE(x->data);
    if (p < 0 || x->n - p < (x->r->n + 7) / 8)
        return kernel_past_end();
    x->nulls = x->b + p;
    x->p = p + (x->r->n + 7) / 8;
    return 0;
}

int
arrow_put_image_bytes(Out *o, PyObject *ref, PyObject *special, PyObject *text_fn,
                      PyObject *json_fn)
{
    Ref x;
    int rc = ref_parts(ref, &x);
    if (rc)
        return rc;
    PyObject *data = x.data, *cols = x.cols;
    const unsigned char *b = x.b, *nulls = x.nulls;
    Py_ssize_t n = x.n, p = x.p;
    ImageReader *r = x.r;
    if (buf_put(&o->json_data, "{", 1) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < r->n; i++) {
        PyObject *k = PyTuple_GET_ITEM(r->labels, i);
        Py_ssize_t kn;
        const char *ku = PyUnicode_CheckExact(k) ? utf8_of(k, &kn) : NULL;
        if (ku == NULL)
            return DECLINE;
        if (buf_put(&o->key_data, ku, kn) < 0 || buf_i32(&o->key_off, o->key_data.len) < 0 ||
            (i && buf_put(&o->json_data, ", ", 2) < 0) ||
            arrow_put_json_string(&o->json_data, ku, kn) < 0 ||
            buf_put(&o->json_data, ": ", 2) < 0)
            return -1;
        if (nulls[i >> 3] & (1 << (i & 7))) {
            if (bits_add(&o->item_valid, 0) < 0 || buf_put(&o->json_data, "null", 4) < 0)
                return -1;
        } else if ((rc = put_col(o, k, &r->cols[i], data, b, n, &p, cols, special, text_fn,
                                 json_fn)) != 0) {
            return rc;
        }
        if (buf_i32(&o->item_off, o->item_data.len) < 0)
            return -1;
        o->items++;
    }
    return buf_put(&o->json_data, "}", 1);
}

int
arrow_pk_bytes(Out *o, PyObject *ref, PyObject *pk, PyObject *special, PyObject *text_fn)
{
    Ref x;
    int rc = ref_parts(ref, &x);
    if (rc)
        return rc;
    if (pk == NULL || pk == Py_None || x.r->n == 0)
        return 0;
    PyObject *data = x.data, *cols = x.cols;
    const unsigned char *b = x.b, *nulls = x.nulls;
    Py_ssize_t n = x.n, p = x.p, npk = PyList_GET_SIZE(pk), last = -1;
    ImageReader *r = x.r;
    Py_ssize_t *at = PyMem_New(Py_ssize_t, r->n);  /* each column's start, up to the last key */
    Py_ssize_t *idx = PyMem_New(Py_ssize_t, npk > 0 ? npk : 1);
    if (at == NULL || idx == NULL) {
        PyMem_Free(at);
        PyMem_Free(idx);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t j = 0; j < npk && rc == 0; j++) {
        PyObject *k = PyList_GET_ITEM(pk, j);
        idx[j] = -1;
        if (!PyUnicode_CheckExact(k)) {
            rc = DECLINE;
            break;
        }
        for (Py_ssize_t i = 0; i < r->n; i++) {
            int eq = PyUnicode_Compare(k, PyTuple_GET_ITEM(r->labels, i)) == 0;
            if (PyErr_Occurred()) {
                rc = -1;
                break;
            }
            if (eq) {
                idx[j] = i;
                if (i > last)
                    last = i;
                break;
            }
        }
    }
    for (Py_ssize_t i = 0; rc == 0 && i <= last; i++) {
        at[i] = p;
        if (!(nulls[i >> 3] & (1 << (i & 7))) && kernel_skip_value(&r->cols[i], data, b, n, &p) < 0)
            rc = -1;
    }
    for (Py_ssize_t j = 0; rc == 0 && j < npk; j++) {
        Py_ssize_t i = idx[j];
        if (i < 0)
            continue;  /* not in this image: left out, as from a dict */
        PyObject *k = PyList_GET_ITEM(pk, j);
        Py_ssize_t kn;
        const char *ku = utf8_of(k, &kn);
        if (ku == NULL) {
            rc = DECLINE;
            break;
        }
        if (buf_put(&o->key_data, ku, kn) < 0 || buf_i32(&o->key_off, o->key_data.len) < 0) {
            rc = -1;
            break;
        }
        if (nulls[i >> 3] & (1 << (i & 7))) {
            if (bits_add(&o->item_valid, 0) < 0)
                rc = -1;
        } else {
            Py_ssize_t q = at[i];
            rc = put_col(o, k, &r->cols[i], data, b, n, &q, cols, special, text_fn, NULL);
        }
        if (rc == 0 && buf_i32(&o->item_off, o->item_data.len) < 0)
            rc = -1;
        o->items++;
    }
    PyMem_Free(at);
    PyMem_Free(idx);
    return rc;
}
