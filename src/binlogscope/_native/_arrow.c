/*
 * binlogscope._native._kernel.image_buffers: one image column of an export row group (the
 * ``(image, columns)`` pairs the mapper leaves in a row's ``before``/``after`` slot, or None)
 * -> the Arrow buffers of its two table columns: the text map (map<string,string>: validity,
 * offsets, the keys' offsets and data, the items' validity, offsets and data) and the typed
 * JSON text (offsets and data; null where the map is null). export/images.py assembles them
 * with pa.Array.from_buffers.
 *
 * The text of a value is what images.image_map writes and its JSON literal what images.json_text
 * writes inside the object: None -> null / null; str -> itself / the JSON string
 * (json.dumps(ensure_ascii=False) escapes); an int of a column not in ``columns.special`` ->
 * decimal / decimal; bytes -> "0x" + hex / the hex, quoted. Every other value (floats, DECIMAL,
 * temporal values, BIT/YEAR ints, ...) takes the two Python functions passed in, which are
 * that definition (value_text(v, label, columns), json_text(v)). Anything else declines (the
 * call returns None and the caller builds the columns in Python): text that is not valid
 * UTF-8 (the Python path writes its bytes as hex), a callback that raises or returns another
 * type, an image that is not a dict, a label that is not a str.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_arrow.h"

/* the JSON string of UTF-8 text s[0:n] as json.dumps(ensure_ascii=False) writes it */
int
arrow_put_json_string(Buf *o, const char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (buf_grow(o, n + 2) < 0)
        return -1;
    o->buf[o->len++] = '"';
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (buf_put(o, s + run, i - run) < 0)
            return -1;
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        int len = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\n': esc[1] = 'n'; break;
        case '\r': esc[1] = 'r'; break;
        case '\t': esc[1] = 't'; break;
        case '\b': esc[1] = 'b'; break;
        case '\f': esc[1] = 'f'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            len = 6;
        }
        if (buf_put(o, esc, len) < 0)
            return -1;
    }
    if (buf_put(o, s + run, n - run) < 0)
        return -1;
    return buf_put(o, "\"", 1);
}

static void
out_free(Out *o)
{
    PyMem_Free(o->offsets.buf);
    PyMem_Free(o->key_off.buf);
    PyMem_Free(o->key_data.buf);
    PyMem_Free(o->item_off.buf);
    PyMem_Free(o->item_data.buf);
    PyMem_Free(o->json_off.buf);
    PyMem_Free(o->json_data.buf);
    PyMem_Free(o->valid.b.buf);
    PyMem_Free(o->item_valid.b.buf);
    Py_CLEAR(o->doubles);
}

/* the DOUBLE labels of new columns into o->doubles; -1: exception, DECLINE: not a set */
static int
set_doubles(Out *o, PyObject *cols)
{
    Py_CLEAR(o->doubles);
    if (cols == Py_None)
        return 0;
    o->doubles = PyObject_GetAttrString(cols, "doubles");
    if (o->doubles == NULL)
        return -1;
    return PyAnySet_Check(o->doubles) ? 0 : DECLINE;
}

/* the text and JSON literal of one value; DECLINE, -1 (exception) or 0 */
int
arrow_put_value(Out *o, PyObject *k, PyObject *v, PyObject *cols, PyObject *special,
          PyObject *text_fn, PyObject *json_fn)
{
    static const char hex[] = "0123456789abcdef";
    /* json_fn NULL: the text only (the pk map), JSON written to a scratch buffer */
    Buf *jd = &o->json_data, *td = &o->item_data;
    if (json_fn == NULL)
        jd->len = 0;
    if (v == Py_None) {
        if (bits_add(&o->item_valid, 0) < 0 || buf_put(jd, "null", 4) < 0)
            return -1;
        return 0;
    }
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *u = utf8_of(v, &n);
        if (u == NULL)
            return DECLINE;
        if (bits_add(&o->item_valid, 1) < 0 || buf_put(td, u, n) < 0 ||
            arrow_put_json_string(jd, u, n) < 0)
            return -1;
        return 0;
    }
    if (PyLong_CheckExact(v)) {
        int in_special = special == NULL ? 0 : PySet_Contains(special, k);
        if (in_special < 0)
            return -1;
        if (!in_special) {
            int overflow = 0;
            long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
            if (x == -1 && PyErr_Occurred())
                return -1;
            char tmp[24];
            int len;
            if (!overflow) {
                len = x < 0 ? 1 + put_uint(tmp + 1, (unsigned long long)0 - (unsigned long long)x, 1)
                            : put_uint(tmp, (unsigned long long)x, 1);
                if (x < 0)
                    tmp[0] = '-';
                if (bits_add(&o->item_valid, 1) < 0 || buf_put(td, tmp, len) < 0 ||
                    buf_put(jd, tmp, len) < 0)
                    return -1;
                return 0;
            }
            PyObject *s = PyObject_Str(v);  /* beyond 64 bits: int's own decimal */
            if (s == NULL)
                return -1;
            Py_ssize_t n;
            const char *u = utf8_of(s, &n);
            int rc = u == NULL ? DECLINE
                : (bits_add(&o->item_valid, 1) < 0 || buf_put(td, u, n) < 0 ||
                   buf_put(jd, u, n) < 0) ? -1 : 0;
            Py_DECREF(s);
            return rc;
        }
    } else if (PyFloat_CheckExact(v) && o->doubles != NULL) {
        /* a DOUBLE in MySQL's fixed-notation range: repr, and the text without a trailing
         * ".0" (images._float_text); other floats and magnitudes: the definition below */
        double d = PyFloat_AS_DOUBLE(v), a = fabs(d);
        int is_double = a >= 1e-4 && a < 1e15 ? PySet_Contains(o->doubles, k) : 0;
        if (is_double < 0)
            return -1;
        if (is_double) {
            char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
            if (r == NULL)
                return -1;
            Py_ssize_t rn = (Py_ssize_t)strlen(r);
            int rc = 1;
            if (strchr(r, 'e') == NULL) {
                Py_ssize_t tn = rn >= 2 && r[rn - 2] == '.' && r[rn - 1] == '0' ? rn - 2 : rn;
                rc = (bits_add(&o->item_valid, 1) < 0 || buf_put(td, r, tn) < 0 ||
                      buf_put(jd, r, rn) < 0) ? -1 : 0;
            }
            PyMem_Free(r);
            if (rc <= 0)
                return rc;
        }
    } else if (PyBytes_CheckExact(v)) {
        Py_ssize_t n = PyBytes_GET_SIZE(v);
        const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(v);
        if (bits_add(&o->item_valid, 1) < 0 || buf_grow(td, 2 + 2 * n) < 0 ||
            buf_grow(jd, 2 + 2 * n) < 0)
            return -1;
        char *t = td->buf + td->len, *j = jd->buf + jd->len;
        t[0] = '0'; t[1] = 'x';
        j[0] = '"';
        for (Py_ssize_t i = 0; i < n; i++) {
            t[2 + 2 * i] = j[1 + 2 * i] = hex[b[i] >> 4];
            t[3 + 2 * i] = j[2 + 2 * i] = hex[b[i] & 15];
        }
        j[1 + 2 * n] = '"';
        td->len += 2 + 2 * n;
        jd->len += 2 + 2 * n;
        return 0;
    }
    /* the definition, in Python */
    PyObject *t = PyObject_CallFunctionObjArgs(text_fn, v, k, cols, NULL);
    if (t == NULL) {
        PyErr_Clear();
        return DECLINE;
    }
    PyObject *lit = json_fn != NULL ? PyObject_CallOneArg(json_fn, v)
                                    : Py_NewRef(Py_None);
    if (lit == NULL) {
        PyErr_Clear();
        Py_DECREF(t);
        return DECLINE;
    }
    int rc = DECLINE;
    Py_ssize_t tn = 0, ln;
    const char *tu = NULL, *lu;
    if (json_fn == NULL) {
        lu = "";
        ln = 0;
    } else if (!PyUnicode_CheckExact(lit) || (lu = utf8_of(lit, &ln)) == NULL) {
        lu = NULL;
    }
    if ((t == Py_None || (PyUnicode_CheckExact(t) && (tu = utf8_of(t, &tn)) != NULL)) &&
        lu != NULL) {
        rc = (bits_add(&o->item_valid, t != Py_None) < 0 ||
              (tu != NULL && buf_put(td, tu, tn) < 0) || buf_put(jd, lu, ln) < 0) ? -1 : 0;
    }
    Py_DECREF(t);
    Py_DECREF(lit);
    return rc;
}

/* one image (a dict) of a non-null ref; DECLINE, -1 or 0 */
static int
put_image(Out *o, PyObject *image, PyObject *cols, PyObject *special, PyObject *text_fn,
          PyObject *json_fn)
{
    if (!PyDict_CheckExact(image))
        return DECLINE;
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    int first = 1;
    if (buf_put(&o->json_data, "{", 1) < 0)
        return -1;
    while (PyDict_Next(image, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k))
            return DECLINE;
        Py_ssize_t kn;
        const char *ku = utf8_of(k, &kn);
        if (ku == NULL)
            return DECLINE;
        if (buf_put(&o->key_data, ku, kn) < 0 || buf_i32(&o->key_off, o->key_data.len) < 0)
            return -1;
        if ((!first && buf_put(&o->json_data, ", ", 2) < 0) ||
            arrow_put_json_string(&o->json_data, ku, kn) < 0 || buf_put(&o->json_data, ": ", 2) < 0)
            return -1;
        first = 0;
        Py_INCREF(v);  /* a callback may run Python code */
        int rc = arrow_put_value(o, k, v, cols, special, text_fn, json_fn);
        Py_DECREF(v);
        if (rc)
            return rc;
        if (buf_i32(&o->item_off, o->item_data.len) < 0)
            return -1;
        o->items++;
    }
    return buf_put(&o->json_data, "}", 1);
}

/* image_buffers(refs, value_text, json_text) -> (n, null_count, validity, offsets, key
 * offsets, key data, item null_count, item validity, item offsets, item data, JSON offsets,
 * JSON data) as bytes, or None (declined) */
PyObject *
kernel_image_buffers(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *refs, *text_fn, *json_fn;
    if (!PyArg_ParseTuple(args, "O!OO", &PyList_Type, &refs, &text_fn, &json_fn))
        return NULL;
    Out o;
    memset(&o, 0, sizeof o);
    Py_ssize_t n = PyList_GET_SIZE(refs);
    PyObject *last_cols = NULL, *special = NULL, *result = NULL;
    int rc = 0;
    if (buf_i32(&o.offsets, 0) < 0 || buf_i32(&o.key_off, 0) < 0 ||
        buf_i32(&o.item_off, 0) < 0 || buf_i32(&o.json_off, 0) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *ref = PyList_GET_ITEM(refs, i);
        if (ref == Py_None) {
            if (bits_add(&o.valid, 0) < 0)
                goto done;
        } else {
            /* (image dict, columns), or (data, position, ImageReader, columns): the image
             * still in its event's bytes (_imagebytes.c) */
            Py_ssize_t size = PyTuple_CheckExact(ref) ? PyTuple_GET_SIZE(ref) : 0;
            if (size != 2 && size != 4) {
                rc = DECLINE;
                break;
            }
            PyObject *image = PyTuple_GET_ITEM(ref, 0), *cols = PyTuple_GET_ITEM(ref, size - 1);
            if (cols != last_cols) {  /* the columns' special (BIT, YEAR) and DOUBLE labels */
                Py_CLEAR(special);
                last_cols = cols;
                if ((rc = set_doubles(&o, cols)) != 0) {
                    if (rc < 0)
                        goto done;
                    break;
                }
                if (cols != Py_None) {
                    special = PyObject_GetAttrString(cols, "special");
                    if (special == NULL)
                        goto done;
                    if (!PyAnySet_Check(special)) {
                        rc = DECLINE;
                        break;
                    }
                }
            }
            Py_INCREF(ref);
            rc = bits_add(&o.valid, 1) < 0 ? -1
                : size == 4 ? arrow_put_image_bytes(&o, ref, special, text_fn, json_fn)
                : put_image(&o, image, cols, special, text_fn, json_fn);
            Py_DECREF(ref);
            if (rc)
                break;
        }
        if (buf_i32(&o.offsets, o.items) < 0 || buf_i32(&o.json_off, o.json_data.len) < 0)
            goto done;
    }
    if (rc < 0)
        goto done;
    if (rc == DECLINE) {
        result = Py_NewRef(Py_None);
        goto done;
    }
#define BYTES(b) PyBytes_FromStringAndSize((b).buf ? (b).buf : "", (b).len)
    result = Py_BuildValue("(nnNNNNnNNNNN)", n, o.valid.nulls, BYTES(o.valid.b),
                           BYTES(o.offsets), BYTES(o.key_off), BYTES(o.key_data),
                           o.item_valid.nulls, BYTES(o.item_valid.b), BYTES(o.item_off),
                           BYTES(o.item_data), BYTES(o.json_off), BYTES(o.json_data));
#undef BYTES
done:
    Py_XDECREF(special);
    out_free(&o);
    return result;
}

/* pk_buffers(rows, after_slot, before_slot, value_text) -> the ``pk`` map column's buffers
 * (n, null_count, validity, offsets, key offsets, key data, item null_count, item validity,
 * item offsets, item data) or None (declined): per row the key columns' text (columns.pk, in
 * its order, those in the image) of the after image, else the before image, as
 * images.pk_column_of writes it; no image, no key or none of its columns: null */
PyObject *
kernel_pk_buffers(PyObject *module, PyObject *args)
{
    (void)module;
    PyObject *rows, *text_fn;
    Py_ssize_t after_slot, before_slot;
    if (!PyArg_ParseTuple(args, "O!nnO", &PyList_Type, &rows, &after_slot, &before_slot,
                          &text_fn))
        return NULL;
    Out o;
    memset(&o, 0, sizeof o);
    Py_ssize_t n = PyList_GET_SIZE(rows);
    PyObject *last_cols = NULL, *special = NULL, *pk = NULL, *result = NULL;
    int rc = 0;
    if (buf_i32(&o.offsets, 0) < 0 || buf_i32(&o.key_off, 0) < 0 ||
        buf_i32(&o.item_off, 0) < 0)
        goto done;
    for (Py_ssize_t i = 0; i < n && !rc; i++) {
        PyObject *row = PyList_GET_ITEM(rows, i);
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) <= after_slot ||
            PyList_GET_SIZE(row) <= before_slot || after_slot < 0 || before_slot < 0) {
            rc = DECLINE;
            break;
        }
        PyObject *ref = PyList_GET_ITEM(row, after_slot);
        if (ref == Py_None)
            ref = PyList_GET_ITEM(row, before_slot);
        Py_ssize_t before = o.items;
        if (ref != Py_None) {
            Py_ssize_t size = PyTuple_CheckExact(ref) ? PyTuple_GET_SIZE(ref) : 0;
            if (!(size == 4 || (size == 2 && PyDict_CheckExact(PyTuple_GET_ITEM(ref, 0))))) {
                rc = DECLINE;
                break;
            }
            PyObject *src = PyTuple_GET_ITEM(ref, 0), *cols = PyTuple_GET_ITEM(ref, size - 1);
            if (cols != last_cols) {
                Py_CLEAR(special);
                Py_CLEAR(pk);
                last_cols = cols;
                if ((rc = set_doubles(&o, cols)) != 0) {
                    if (rc < 0)
                        goto done;
                    break;
                }
                if (cols != Py_None) {
                    special = PyObject_GetAttrString(cols, "special");
                    pk = special == NULL ? NULL : PyObject_GetAttrString(cols, "pk");
                    if (pk == NULL)
                        goto done;
                    if (!PyAnySet_Check(special) || (pk != Py_None && !PyList_CheckExact(pk))) {
                        rc = DECLINE;
                        break;
                    }
                }
            }
            Py_INCREF(ref);
            if (size == 4)  /* the image in its event's bytes (_imagebytes.c) */
                rc = arrow_pk_bytes(&o, ref, pk, special, text_fn);
            for (Py_ssize_t j = 0; size == 2 && pk != NULL && pk != Py_None && PyDict_GET_SIZE(src) &&
                 j < PyList_GET_SIZE(pk) && !rc; j++) {
                PyObject *k = PyList_GET_ITEM(pk, j);
                if (!PyUnicode_CheckExact(k)) {
                    rc = DECLINE;
                    break;
                }
                PyObject *v = PyDict_GetItemWithError(src, k);
                if (v == NULL) {
                    if (PyErr_Occurred())
                        rc = -1;
                    continue;
                }
                Py_ssize_t kn;
                const char *ku = utf8_of(k, &kn);
                if (ku == NULL) {
                    rc = DECLINE;
                    break;
                }
                Py_INCREF(v);
                rc = (buf_put(&o.key_data, ku, kn) < 0 || buf_i32(&o.key_off, o.key_data.len) < 0)
                    ? -1 : arrow_put_value(&o, k, v, cols, special, text_fn, NULL);
                Py_DECREF(v);
                if (!rc && buf_i32(&o.item_off, o.item_data.len) < 0)
                    rc = -1;
                o.items++;
            }
            Py_DECREF(ref);
            if (rc)
                break;
        }
        if (bits_add(&o.valid, o.items > before) < 0 || buf_i32(&o.offsets, o.items) < 0)
            goto done;
    }
    if (rc < 0)
        goto done;
    if (rc == DECLINE) {
        result = Py_NewRef(Py_None);
        goto done;
    }
#define BYTES(b) PyBytes_FromStringAndSize((b).buf ? (b).buf : "", (b).len)
    result = Py_BuildValue("(nnNNNNnNNN)", n, o.valid.nulls, BYTES(o.valid.b), BYTES(o.offsets),
                           BYTES(o.key_off), BYTES(o.key_data), o.item_valid.nulls,
                           BYTES(o.item_valid.b), BYTES(o.item_off), BYTES(o.item_data));
#undef BYTES
done:
    Py_XDECREF(special);
    Py_XDECREF(pk);
    out_free(&o);
    return result;
}
