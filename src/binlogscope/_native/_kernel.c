/*
 * binlogscope.wire.binlog._crows: the decoder's hot paths, in C.
 *
 * Why C (the architecture's exception, see also _rowcode.py and _cfast.py): CPython's cost per
 * bytecode and per object kept the pure-Python decoder at ~19 us per event without a tree and
 * ~240 us with one, far from the issue's targets (mariadb-binlog's speed; 5x
 * python-mysql-replication with the full tree). This module is an accelerator of the same
 * sans-IO decoder, not a second one:
 *   - bytes in, the same Python values and Node trees out; no sockets, no files;
 *   - it computes nothing the Python decoders do not also compute: every name, doc, wire type
 *     and display text is handed over from the Python modules at import (configure_*), rare
 *     column types call the Python column readers, and anything outside the common shapes
 *     returns None so that the caller runs the Python path (which also makes every error
 *     message);
 *   - the pure-Python path stays the reference: tests compare the two on every fixture binlog,
 *     on the shipped captures (whole and chunked, with and without the tree), on damaged copies
 *     and on random row images; BINLOGSCOPE_PURE_PYTHON=1 turns this module off, and the
 *     install works without a compiler (the extension is optional).
 *
 * Parts:
 *   ImageReader / decode_rows      row images without a tree (the fast path)
 *   fast_event                     a whole hot event without a tree (XID, MariaDB GTID,
 *                                  ANNOTATE_ROWS, repeated TABLE_MAP, row events v1/v2)
 *   make_node / make_event         Node and DecodedEvent without their dataclass __init__
 *   record_image / record_rows     row images with their Nodes
 *   record_header / record_event   the event header / a whole hot event with its tree
 *   shift_nodes                    a repeated TABLE_MAP's nodes at the new offsets
 *   crc32                          CRC-32 as zlib computes it, without slicing the buffer
 *
 * ImageReader(specs, labels): one reader per (TABLE_MAP, columns-present bitmap). Each spec is
 * a tuple (kind, a, b, c, d, e, f, obj) describing one present column (kinds below). Calling
 * reader(b, p) reads the NULL bitmap and the values of one image from bytes ``b`` at ``p`` and
 * returns ({label: value}, new p). Any read past the end raises ValueError (the caller then
 * takes the recording path, which reports the exact offset).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>

enum {
    K_PY = 0,      /* obj: a reader closure rd(b, p) -> (value, p) */
    K_I8, K_U8, K_I16, K_U16, K_I32, K_U32, K_I64, K_U64, K_F32, K_F64,
    K_PREFIXED,    /* a: length prefix bytes (1-4), obj: codec name or None (bytes) */
    K_ENUM1,       /* obj: a 256-tuple byte -> value */
    K_DT2,         /* a: fsp, b: frac mode, obj: (ymd cache, hms cache, frac obj) */
    K_TS2,         /* a: fsp, b: frac mode, obj: (day cache, tod cache, frac obj, zero text) */
    K_DEC,         /* a: size, b: ishift, c: imask, d: fshift, e: fmask, f: fdigits (-1: none) */
    K_TIME2,       /* a: fsp (0-6) */
    K_SET,         /* a: size (2-8 bytes), obj: the member names (a tuple of str, at most 64) */
};

/* fraction modes of K_DT2/K_TS2 */
enum { F_NONE = 0, F_SIX = 1, F_ITEM = 2, F_CALL = 3 };

typedef struct {
    int kind;
    long long a, b, c, d, e, f;
    PyObject *obj;   /* borrowed from the specs tuple, which the reader keeps */
    PyObject *t1, *t2, *t3, *t4;  /* unpacked obj parts (borrowed) */
    int utf8;        /* K_PREFIXED: codec is utf-8 */
    const char *codec;
} Col;

typedef struct {
    PyObject_HEAD
    Py_ssize_t n;
    Col *cols;
    PyObject *specs;
    PyObject *labels;  /* tuple of str */
    unsigned long long mask_last;
} ImageReader;

static PyObject *s_before, *s_after;

static int
past_end(void)
{
    PyErr_SetString(PyExc_ValueError, "row image runs past the end of the rows data");
    return -1;
}

/* a row whose images hold no columns reads no bytes: more rows data after it would loop
 * forever (a damaged columns-present bitmap); the Python path names the offset */
static int
no_progress(void)
{
    PyErr_SetString(PyExc_ValueError, "a row of no columns: the rows data cannot advance");
    return -1;
}

static inline unsigned long long
be_uint(const unsigned char *s, int n)
{
    unsigned long long v = 0;
    for (int i = 0; i < n; i++)
        v = (v << 8) | s[i];
    return v;
}

static inline unsigned long long
le_uint(const unsigned char *s, int n)
{
    unsigned long long v = 0;
    for (int i = n - 1; i >= 0; i--)
        v = (v << 8) | s[i];
    return v;
}


/* ---------------------------------------------------------------------- ASCII text builders */
/* write v in decimal, zero-padded to at least `width` digits; returns chars written */
static inline int
put_uint(char *out, unsigned long long v, int width)
{
    char tmp[24];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n < width)
        tmp[n++] = '0';
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

static PyObject *
ascii_str(const char *buf, Py_ssize_t len)
{
    PyObject *u = PyUnicode_New(len, 127);
    if (u == NULL)
        return NULL;
    memcpy(PyUnicode_1BYTE_DATA(u), buf, (size_t)len);
    return u;
}

/* ".ffffff" of a DATETIME2/TIMESTAMP2 fraction as values.frac_texts(fsp) gives it */
static int
put_frac(char *out, int fsp, unsigned long long raw)
{
    if (fsp <= 0)
        return 0;
    out[0] = '.';
    if (fsp == 6)
        return 1 + put_uint(out + 1, raw, 6);
    static const unsigned long long scale[3] = {10000, 100, 1};
    unsigned long long us = fsp == 5 ? raw : raw * scale[(fsp + 1) / 2 - 1];
    char tmp[24];
    int n = put_uint(tmp, us, 6);
    if (n > fsp)
        n = fsp;
    memcpy(out + 1, tmp, (size_t)n);
    return 1 + n;
}

/* days since 1970-01-01 -> civil date (proleptic Gregorian, as time.gmtime) */
static void
civil_from_days(long long z, long long *y, unsigned *m, unsigned *d)
{
    z += 719468;
    long long era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    long long yy = (long long)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = yy + (*m <= 2);
}

/* text of a fraction by mode; new reference ("" -> NULL-free empty handled by caller) */
static PyObject *
frac_text(const Col *c, unsigned long long raw)
{
    char tmp[32];
    PyObject *k, *v;
    switch ((int)c->b) {
    case F_SIX:
        snprintf(tmp, sizeof tmp, ".%06llu", raw);
        return PyUnicode_FromString(tmp);
    case F_ITEM:
        k = PyLong_FromUnsignedLongLong(raw);
        if (k == NULL)
            return NULL;
        v = PyObject_GetItem(c->t3, k);
        Py_DECREF(k);
        return v;
    case F_CALL:
        k = PyLong_FromUnsignedLongLong(raw);
        if (k == NULL)
            return NULL;
        v = PyObject_CallOneArg(c->t3, k);
        Py_DECREF(k);
        return v;
    default:
        return PyUnicode_FromStringAndSize("", 0);
    }
}

/* "<a> <b><frac>" from two cached str pieces and the fraction text */
static PyObject *
join3(PyObject *a, PyObject *b, PyObject *fr)
{
    Py_ssize_t la, lb, lf;
    const char *pa = PyUnicode_AsUTF8AndSize(a, &la);
    if (pa == NULL)
        return NULL;
    const char *pb = PyUnicode_AsUTF8AndSize(b, &lb);
    if (pb == NULL)
        return NULL;
    const char *pf = PyUnicode_AsUTF8AndSize(fr, &lf);
    if (pf == NULL)
        return NULL;
    char stack[128];
    Py_ssize_t total = la + 1 + lb + lf;
    char *buf = total <= (Py_ssize_t)sizeof stack ? stack : PyMem_Malloc((size_t)total);
    if (buf == NULL)
        return PyErr_NoMemory();
    memcpy(buf, pa, (size_t)la);
    buf[la] = ' ';
    memcpy(buf + la + 1, pb, (size_t)lb);
    memcpy(buf + la + 1 + lb, pf, (size_t)lf);
    PyObject *out = PyUnicode_DecodeUTF8(buf, total, "strict");
    if (buf != stack)
        PyMem_Free(buf);
    return out;
}

static PyObject *
cached_piece(PyObject *cache, long long key)
{
    PyObject *k = PyLong_FromLongLong(key);
    if (k == NULL)
        return NULL;
    PyObject *v = PyObject_GetItem(cache, k);
    Py_DECREF(k);
    return v;
}

/* one non-NULL column at *pp; new reference to the value, *pp advanced */
static PyObject *
read_value(const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    const unsigned char *s = b + p;
    Py_ssize_t left = n - p;
    switch (c->kind) {
    case K_I8:
        if (left < 1) goto short_read;
        *pp = p + 1;
        return PyLong_FromLong((signed char)s[0]);
    case K_U8:
        if (left < 1) goto short_read;
        *pp = p + 1;
        return PyLong_FromLong(s[0]);
    case K_I16:
        if (left < 2) goto short_read;
        *pp = p + 2;
        return PyLong_FromLong((int16_t)(s[0] | s[1] << 8));
    case K_U16:
        if (left < 2) goto short_read;
        *pp = p + 2;
        return PyLong_FromLong((uint16_t)(s[0] | s[1] << 8));
    case K_I32:
        if (left < 4) goto short_read;
        *pp = p + 4;
        return PyLong_FromLong((int32_t)(uint32_t)le_uint(s, 4));
    case K_U32:
        if (left < 4) goto short_read;
        *pp = p + 4;
        return PyLong_FromUnsignedLong((unsigned long)le_uint(s, 4));
    case K_I64:
        if (left < 8) goto short_read;
        *pp = p + 8;
        return PyLong_FromLongLong((long long)le_uint(s, 8));
    case K_U64:
        if (left < 8) goto short_read;
        *pp = p + 8;
        return PyLong_FromUnsignedLongLong(le_uint(s, 8));
    case K_F32: {
        if (left < 4) goto short_read;
        float f;
        uint32_t u = (uint32_t)le_uint(s, 4);
        memcpy(&f, &u, 4);
        *pp = p + 4;
        return PyFloat_FromDouble((double)f);
    }
    case K_F64: {
        if (left < 8) goto short_read;
        double d;
        uint64_t u = le_uint(s, 8);
        memcpy(&d, &u, 8);
        *pp = p + 8;
        return PyFloat_FromDouble(d);
    }
    case K_PREFIXED: {
        int w = (int)c->a;
        if (left < w) goto short_read;
        Py_ssize_t len = (Py_ssize_t)le_uint(s, w);
        if (len > left - w) goto short_read;
        *pp = p + w + len;
        const char *v = (const char *)s + w;
        if (c->codec == NULL)
            return PyBytes_FromStringAndSize(v, len);
        if (c->utf8)
            return PyUnicode_DecodeUTF8(v, len, "surrogateescape");
        return PyUnicode_Decode(v, len, c->codec, "surrogateescape");
    }
    case K_ENUM1: {
        if (left < 1) goto short_read;
        *pp = p + 1;
        PyObject *v = PyTuple_GET_ITEM(c->obj, s[0]);
        Py_INCREF(v);
        return v;
    }
    case K_TIME2: { /* values._time2_reader and _format_time_packed */
        int fsp = (int)c->a, nf = (fsp + 1) / 2;
        if (left < 3 + nf) goto short_read;
        long long packed;
        if (nf == 3) {
            packed = (long long)be_uint(s, 6) - 0x800000000000LL;
        } else {
            long long ip = (long long)be_uint(s, 3) - 0x800000LL;
            long long fr = nf ? (long long)be_uint(s + 3, nf) : 0;
            if (nf && ip < 0 && fr) {
                ip += 1;
                fr -= nf == 1 ? 0x100 : 0x10000;
            }
            packed = ip * (1LL << 24) + fr * (nf == 1 ? 10000 : nf == 2 ? 100 : 0);
        }
        *pp = p + 3 + nf;
        int neg = packed < 0;
        unsigned long long u = neg ? (unsigned long long)(-packed) : (unsigned long long)packed;
        unsigned long long hms = u >> 24, us = u & 0xFFFFFF;
        char out[48];
        int k = snprintf(out, 32, "%s%02llu:%02llu:%02llu", neg ? "-" : "", (hms >> 12) % 1024,
                         (hms >> 6) % 64, hms % 64);
        if (fsp) {
            char digits[16];
            snprintf(digits, sizeof digits, "%06llu", us);
            out[k++] = '.';
            memcpy(out + k, digits, (size_t)fsp);
            k += fsp;
        }
        return ascii_str(out, k);
    }
    case K_SET: { /* values._string_reader's SET: member names joined by ",", or the mask */
        int size = (int)c->a;
        if (left < size) goto short_read;
        *pp = p + size;
        unsigned long long mask = le_uint(s, size);
        Py_ssize_t nm = PyTuple_GET_SIZE(c->obj);
        if (nm < 64 && mask >> nm)
            return PyLong_FromUnsignedLongLong(mask);
        char buf[1024];
        Py_ssize_t k = 0;
        PyObject *joined = NULL;
        for (Py_ssize_t i = 0; i < nm && i < 64; i++) {
            if (!(mask >> i & 1))
                continue;
            Py_ssize_t len;
            const char *m = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(c->obj, i), &len);
            if (m == NULL)
                return NULL;
            if (k + len + 1 > (Py_ssize_t)sizeof buf) { /* long names: Python joins them */
                PyObject *names = PyList_New(0);
                if (names == NULL)
                    return NULL;
                for (Py_ssize_t j = 0; j < nm && j < 64; j++) {
                    if ((mask >> j & 1) &&
                        PyList_Append(names, PyTuple_GET_ITEM(c->obj, j)) < 0) {
                        Py_DECREF(names);
                        return NULL;
                    }
                }
                PyObject *comma = PyUnicode_FromString(",");
                joined = comma ? PyUnicode_Join(comma, names) : NULL;
                Py_XDECREF(comma);
                Py_DECREF(names);
                return joined;
            }
            if (k)
                buf[k++] = ',';
            memcpy(buf + k, m, (size_t)len);
            k += len;
        }
        return PyUnicode_DecodeUTF8(buf, k, NULL);
    }
    case K_DT2: {
        int nf = (int)(c->a + 1) / 2;
        if (left < 5 + nf) goto short_read;
        long long x = (long long)be_uint(s, 5) - 0x8000000000LL;
        unsigned long long fr = be_uint(s + 5, nf);
        *pp = p + 5 + nf;
        if (x >= 0) {
            /* values._ymd_text / _hms_text / frac_texts, written directly */
            char out[64];
            long long ymd = x >> 17, hms = x & 0x1FFFF, ym = ymd >> 5;
            int k = put_uint(out, (unsigned long long)(ym / 13), 4);
            out[k++] = '-';
            k += put_uint(out + k, (unsigned long long)(ym % 13), 2);
            out[k++] = '-';
            k += put_uint(out + k, (unsigned long long)(ymd & 31), 2);
            out[k++] = ' ';
            k += put_uint(out + k, (unsigned long long)(hms >> 12), 2);
            out[k++] = ':';
            k += put_uint(out + k, (unsigned long long)((hms >> 6) & 63), 2);
            out[k++] = ':';
            k += put_uint(out + k, (unsigned long long)(hms & 63), 2);
            k += put_frac(out + k, (int)c->a, fr);
            return ascii_str(out, k);
        }
        /* a negative packed value (not a valid DATETIME): the Python pieces */
        PyObject *ymd = cached_piece(c->t1, x >> 17);
        if (ymd == NULL)
            return NULL;
        PyObject *hms = cached_piece(c->t2, x & 0x1FFFF);
        if (hms == NULL) {
            Py_DECREF(ymd);
            return NULL;
        }
        PyObject *ft = frac_text(c, fr);
        PyObject *out = ft == NULL ? NULL : join3(ymd, hms, ft);
        Py_DECREF(ymd);
        Py_DECREF(hms);
        Py_XDECREF(ft);
        return out;
    }
    case K_TS2: {
        int nf = (int)(c->a + 1) / 2;
        if (left < 4 + nf) goto short_read;
        unsigned long long x = be_uint(s, 4);
        unsigned long long fr = be_uint(s + 4, nf);
        *pp = p + 4 + nf;
        if (x == 0 && fr == 0) {
            Py_INCREF(c->t4);
            return c->t4;
        }
        /* values._day_text (time.gmtime) / _tod_text / frac_texts, written directly */
        char out[64];
        long long y;
        unsigned mo, d;
        civil_from_days((long long)(x / 86400), &y, &mo, &d);
        unsigned long long tod = x % 86400;
        int k = put_uint(out, (unsigned long long)y, 4);
        out[k++] = '-';
        k += put_uint(out + k, mo, 2);
        out[k++] = '-';
        k += put_uint(out + k, d, 2);
        out[k++] = ' ';
        k += put_uint(out + k, tod / 3600, 2);
        out[k++] = ':';
        k += put_uint(out + k, tod / 60 % 60, 2);
        out[k++] = ':';
        k += put_uint(out + k, tod % 60, 2);
        k += put_frac(out + k, (int)c->a, fr);
        return ascii_str(out, k);
    }
    case K_DEC: {
        int size = (int)c->a;
        if (left < size) goto short_read;
        unsigned long long x = be_uint(s, size);
        unsigned long long sign = 1ULL << (size * 8 - 1);
        unsigned long long full = size >= 8 ? ~0ULL : (1ULL << (size * 8)) - 1;
        int neg = 0;
        if (x & sign) {
            x ^= sign;
        } else {
            x ^= full ^ sign;
            neg = 1;
        }
        *pp = p + size;
        unsigned long long ip = c->c ? (x >> c->b) & (unsigned long long)c->c : 0;
        char out[64];
        int k = 0;
        if (neg)
            out[k++] = '-';
        k += put_uint(out + k, ip, 1);
        if (c->f >= 0) {
            out[k++] = '.';
            k += put_uint(out + k, (x >> c->d) & (unsigned long long)c->e, (int)c->f);
        }
        return ascii_str(out, k);
    }
    case K_PY: {
        PyObject *pos = PyLong_FromSsize_t(p);
        if (pos == NULL)
            return NULL;
        PyObject *res = PyObject_CallFunctionObjArgs(c->obj, bobj, pos, NULL);
        Py_DECREF(pos);
        if (res == NULL)
            return NULL;
        if (!PyTuple_Check(res) || PyTuple_GET_SIZE(res) != 2) {
            Py_DECREF(res);
            PyErr_SetString(PyExc_TypeError, "a column reader must return (value, position)");
            return NULL;
        }
        Py_ssize_t np = PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 1));
        if (np == -1 && PyErr_Occurred()) {
            Py_DECREF(res);
            return NULL;
        }
        if (np > n || np < p) {
            Py_DECREF(res);
            goto short_read;
        }
        PyObject *v = PyTuple_GET_ITEM(res, 0);
        Py_INCREF(v);
        Py_DECREF(res);
        *pp = np;
        return v;
    }
    default:
        PyErr_Format(PyExc_ValueError, "unknown column kind %d", c->kind);
        return NULL;
    }
short_read:
    past_end();
    return NULL;
}

/* one image at *pp -> new dict */
static PyObject *
read_image(ImageReader *self, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
           Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    Py_ssize_t ncols = self->n;
    Py_ssize_t nb = (ncols + 7) / 8;
    if (n - p < nb) {
        past_end();
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
            v = read_value(&self->cols[i], bobj, b, n, &p);
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
    case K_PY:
        if (!PyCallable_Check(c->obj)) {
            PyErr_SetString(PyExc_TypeError, "K_PY needs a callable reader");
            return -1;
        }
        break;
    default:
        if (c->kind < K_PY || c->kind > K_SET) {
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
        past_end();
        return NULL;
    }
    PyObject *row = read_image(self, bobj, (const unsigned char *)PyBytes_AS_STRING(bobj), n, &p);
    if (row == NULL)
        return NULL;
    PyObject *out = Py_BuildValue("(Nn)", row, p);
    return out;
}

static PyTypeObject ImageReaderType = {
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
            no_progress();
            Py_DECREF(rows);
            return NULL;
        }
    }
    return rows;
}

/* the start and end arguments of decode_rows/count_rows, checked against the data */
static int
parse_rows_args(PyObject *args, const char *fmt, PyObject **bobj, int *kind, PyObject **rb,
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
    if (parse_rows_args(args, "O!iO!O|nn:decode_rows", &bobj, &kind, &rb, &ra, &start,
                        &end) < 0)
        return NULL;
    return rows_between(bobj, start, end, kind, (ImageReader *)rb, (ImageReader *)ra);
}

/* one non-NULL column at *pp skipped without building its value where its size follows from
 * the bytes alone; the kinds whose reading can fail otherwise are read (value dropped) */
static int
skip_value(const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp, left = n - p, size;
    switch (c->kind) {
    case K_I8: case K_U8: case K_ENUM1:
        size = 1;
        break;
    case K_I16: case K_U16:
        size = 2;
        break;
    case K_I32: case K_U32: case K_F32:
        size = 4;
        break;
    case K_I64: case K_U64: case K_F64:
        size = 8;
        break;
    case K_PREFIXED: {
        int w = (int)c->a;
        if (left < w)
            return past_end();
        size = w + (Py_ssize_t)le_uint(b + p, w);
        if (size < w)
            return past_end();
        break;
    }
    case K_TIME2:
        size = 3 + (c->a + 1) / 2;
        break;
    case K_SET: case K_DEC:
        size = (Py_ssize_t)c->a;
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
        return past_end();
    *pp = p + size;
    return 0;
read: {
        PyObject *v = read_value(c, bobj, b, n, pp);
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
        return past_end();
    const unsigned char *nulls = b + p;
    p += nb;
    for (Py_ssize_t i = 0; i < self->n; i++) {
        if (!(nulls[i >> 3] & (1 << (i & 7))) && skip_value(&self->cols[i], bobj, b, n, &p) < 0)
            return -1;
    }
    *pp = p;
    return 0;
}

/* count_rows(data, kind, reader_b, reader_a, start=0, end=len(data)) -> number of rows:
 * walks the images as decode_rows reads them (raising where it raises) without building the
 * values, so that a caller can read them later, on demand */
static PyObject *
count_rows(PyObject *module, PyObject *args)
{
    PyObject *bobj, *rb, *ra;
    int kind;
    Py_ssize_t start, end, count = 0;
    (void)module;
    if (parse_rows_args(args, "O!iO!O|nn:count_rows", &bobj, &kind, &rb, &ra, &start,
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
            no_progress();
            return NULL;
        }
        count++;
    }
    return PyLong_FromSsize_t(count);
}

/* ====================================================================== whole events
 * fast_event(buf, pos, base, ctx): the no-tree decode of one complete event of the hot types
 * (XID, MariaDB GTID, ANNOTATE_ROWS, a repeated TABLE_MAP, WRITE/UPDATE/DELETE_ROWS v1/v2),
 * returning the same DecodedEvent the Python fast path (decode.decode_event_fast) returns, or
 * None whenever anything is not the common case (another type, a type map, no compiled row
 * plan yet, damage, a checksum mismatch...): the caller then runs the Python path, which also
 * produces every error message. It has no side effects, so falling back is always safe.
 *
 * The result objects are instances of the Python dataclasses (slots=True); they are created
 * with tp_alloc and their slots filled directly (offsets and defaults read from the dataclass
 * fields by _cfast.py), which is what their generated __init__ does, without running it.
 */
#include <structmember.h>

typedef struct {
    PyTypeObject *type;
    Py_ssize_t n;
    Py_ssize_t off[24];
    PyObject *defaults[24];   /* NULL: required; list_marker: a new empty list */
} Layout;

enum { L_DEC, L_HDR, L_XID, L_ANN, L_GTID, L_TMEV, L_ROWS, L_COUNT, L_NODE = L_COUNT, L_PKT,
       L_BPKT, L_ITEM, L_RP, L_ACK, L_ALL };
static Layout layouts[L_ALL];
static int node_ready;
static PyObject *empty_tuple;
static PyObject *list_marker;
static PyObject *kind_names[3];
static unsigned long gtid_slow_flags;
static int events_ready;

static PyObject *n_type_map, *n_checksum_alg, *n_verify_checksums, *n_tables, *n_decode_rows,
    *n_server_version, *n_post_header_len, *n_raw, *n_columns, *n_schema, *n_table,
    *n_table_id, *n_flags, *n_hires_resolved, *n_compiled, *n_image, *n_labels;

static int
intern_names(void)
{
#define IN(v, s) if ((v = PyUnicode_InternFromString(s)) == NULL) return -1
    IN(n_type_map, "type_map");
    IN(n_checksum_alg, "checksum_alg");
    IN(n_verify_checksums, "verify_checksums");
    IN(n_tables, "tables");
    IN(n_decode_rows, "decode_rows");
    IN(n_server_version, "server_version");
    IN(n_post_header_len, "post_header_len");
    IN(n_raw, "raw");
    IN(n_columns, "columns");
    IN(n_schema, "schema");
    IN(n_table, "table");
    IN(n_table_id, "table_id");
    IN(n_flags, "flags");
    IN(n_hires_resolved, "hires_resolved");
    IN(n_compiled, "compiled");
    IN(n_image, "image");
    IN(n_labels, "labels");
#undef IN
    return 0;
}

/* ---- CRC-32 (IEEE 802.3, reflected, as zlib.crc32), slicing by 8 */
static uint32_t crc_tab[8][256];

static void
crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_tab[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_tab[t][i] = (crc_tab[t - 1][i] >> 8) ^ crc_tab[0][crc_tab[t - 1][i] & 0xFF];
}

static uint32_t
crc32_of(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                           (uint32_t)p[3] << 24);
        uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
                      (uint32_t)p[7] << 24;
        c = crc_tab[7][lo & 0xFF] ^ crc_tab[6][(lo >> 8) & 0xFF] ^
            crc_tab[5][(lo >> 16) & 0xFF] ^ crc_tab[4][lo >> 24] ^
            crc_tab[3][hi & 0xFF] ^ crc_tab[2][(hi >> 8) & 0xFF] ^
            crc_tab[1][(hi >> 16) & 0xFF] ^ crc_tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_tab[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

static PyObject *
crc32_py(PyObject *module, PyObject *args)
{
    PyObject *bobj;
    Py_ssize_t start, end;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!nn:crc32", &PyBytes_Type, &bobj, &start, &end))
        return NULL;
    if (start < 0 || end > PyBytes_GET_SIZE(bobj) || start > end) {
        PyErr_SetString(PyExc_ValueError, "crc32: range outside the bytes");
        return NULL;
    }
    return PyLong_FromUnsignedLong(
        crc32_of((const unsigned char *)PyBytes_AS_STRING(bobj) + start, end - start));
}

/* ---- configuration */
static PyObject *
slot_offset(PyObject *module, PyObject *d)
{
    (void)module;
    if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_SetString(PyExc_TypeError, "not a slot (member descriptor)");
        return NULL;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) {
        PyErr_SetString(PyExc_TypeError, "not a writable object slot");
        return NULL;
    }
    return PyLong_FromSsize_t(m->offset);
}

/* layouts[which] from (class, (offset, ...), (default or ``required``, ...)): ``want`` fields
 * exactly (any number up to 24 when negative) */
static int
layout_from(PyObject *spec, int which, Py_ssize_t want, PyObject *required)
{
    PyObject *cls, *offs, *defs;
    if (!PyArg_ParseTuple(spec, "O!O!O!", &PyType_Type, &cls, &PyTuple_Type, &offs,
                          &PyTuple_Type, &defs))
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(offs);
    if ((want >= 0 ? n != want : n > 24) || PyTuple_GET_SIZE(defs) != n) {
        PyErr_SetString(PyExc_ValueError, "configure: unexpected fields");
        return -1;
    }
    Layout *L = &layouts[which];
    for (Py_ssize_t k = 0; k < n; k++) {
        L->off[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(offs, k));
        if (L->off[k] < (Py_ssize_t)sizeof(PyObject) ||
            L->off[k] + (Py_ssize_t)sizeof(PyObject *) > ((PyTypeObject *)cls)->tp_basicsize) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "configure: bad slot offset");
            return -1;
        }
        PyObject *d = PyTuple_GET_ITEM(defs, k);
        L->defaults[k] = d == required ? NULL : d;
        Py_XINCREF(L->defaults[k]);
    }
    Py_INCREF(cls);
    L->type = (PyTypeObject *)cls;
    L->n = n;
    return 0;
}

/* configure_events((layout, ...) in L_* order, list_marker, (INSERT, UPDATE, DELETE), flags)
 * where layout = (class, (offset, ...), (default or required_marker, ...)) */
static PyObject *
configure_events(PyObject *module, PyObject *args)
{
    PyObject *ls, *marker, *kinds, *required;
    unsigned long flags;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!OO!kO:configure_events", &PyTuple_Type, &ls, &marker,
                          &PyTuple_Type, &kinds, &flags, &required))
        return NULL;
    if (PyTuple_GET_SIZE(ls) != L_COUNT || PyTuple_GET_SIZE(kinds) != 3) {
        PyErr_SetString(PyExc_ValueError, "configure_events: wrong number of layouts/kinds");
        return NULL;
    }
    for (int i = 0; i < L_COUNT; i++) {
        if (layout_from(PyTuple_GET_ITEM(ls, i), i, -1, required) < 0)
            return NULL;
    }
    Py_INCREF(marker);
    list_marker = marker;
    for (int i = 0; i < 3; i++) {
        kind_names[i] = PyTuple_GET_ITEM(kinds, i);
        Py_INCREF(kind_names[i]);
    }
    gtid_slow_flags = flags;
    events_ready = 1;
    Py_RETURN_NONE;
}

/* a new instance of layout L: vals[0..nv) (borrowed) for the first fields, defaults after */
static PyObject *
make(int which, PyObject **vals, Py_ssize_t nv)
{
    Layout *L = &layouts[which];
    PyObject *o = L->type->tp_alloc(L->type, 0);
    if (o == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < L->n; k++) {
        PyObject *v;
        if (k < nv) {
            v = vals[k];
            Py_INCREF(v);
        } else if (L->defaults[k] == list_marker) {
            v = PyList_New(0);
            if (v == NULL) {
                Py_DECREF(o);
                return NULL;
            }
        } else if (L->defaults[k] != NULL) {
            v = L->defaults[k];
            Py_INCREF(v);
        } else {
            Py_DECREF(o);
            PyErr_SetString(PyExc_TypeError, "fast_event: a required field has no value");
            return NULL;
        }
        *(PyObject **)((char *)o + L->off[k]) = v;
    }
    return o;
}

/* ---- helpers returning a new reference, or NULL with no error set = "not the fast case" */
static int
attr_int(PyObject *o, PyObject *name, long long *out)
{
    PyObject *v = PyObject_GetAttr(o, name);
    if (v == NULL)
        return -1;
    *out = PyLong_AsLongLong(v);
    Py_DECREF(v);
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static inline uint32_t
u32le(const unsigned char *s)
{
    return (uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24;
}

/* TABLE_MAP: the map ctx already holds when the body bytes equal its raw bytes (_cached) */
static PyObject *
fast_table_map(PyObject *ctx, const unsigned char *b, Py_ssize_t p, Py_ssize_t end)
{
    if (end - p < 6)
        return NULL;
    unsigned long long table_id = u32le(b + p);
    PyObject *phl = PyObject_GetAttr(ctx, n_post_header_len);
    if (phl == NULL)
        return NULL;
    int six = 1;
    if (PyTuple_Check(phl) && PyTuple_GET_SIZE(phl) >= 19) {
        PyObject *x = PyTuple_GET_ITEM(phl, 18);
        six = !(PyLong_Check(x) && PyLong_AsLong(x) == 6);
    }
    Py_DECREF(phl);
    if (six)
        table_id |= (unsigned long long)b[p + 4] << 32 | (unsigned long long)b[p + 5] << 40;
    PyObject *tables = PyObject_GetAttr(ctx, n_tables);
    if (tables == NULL)
        return NULL;
    PyObject *key = PyLong_FromUnsignedLongLong(table_id);
    PyObject *tm = key == NULL ? NULL : PyDict_GetItemWithError(tables, key);
    Py_XDECREF(key);
    Py_XINCREF(tm);
    Py_DECREF(tables);
    if (tm == NULL)
        return NULL;
    PyObject *raw = PyObject_GetAttr(tm, n_raw);
    PyObject *out = NULL;
    if (raw != NULL && PyBytes_Check(raw) && PyBytes_GET_SIZE(raw) == end - p &&
        memcmp(PyBytes_AS_STRING(raw), b + p, (size_t)(end - p)) == 0) {
        PyObject *v[6] = {NULL, NULL, NULL, NULL, NULL, tm};
        v[0] = PyObject_GetAttr(tm, n_table_id);
        v[1] = v[0] ? PyObject_GetAttr(tm, n_schema) : NULL;
        v[2] = v[1] ? PyObject_GetAttr(tm, n_table) : NULL;
        v[3] = v[2] ? PyObject_GetAttr(tm, n_columns) : NULL;
        v[4] = v[3] ? PyObject_GetAttr(tm, n_flags) : NULL;
        if (v[4] != NULL)
            out = make(L_TMEV, v, 6);
        for (int i = 0; i < 5; i++)
            Py_XDECREF(v[i]);
    }
    Py_XDECREF(raw);
    Py_DECREF(tm);
    return out;
}

/* the compiled plan for `present` and its ImageReader and labels (new refs), 1; 0 when there
 * is none yet or its reader is not the C one; -1 on error */
static int
plan_for(PyObject *tm, const unsigned char *bits, int nb, PyObject **plan_out,
         PyObject **reader, PyObject **labels)
{
    *plan_out = *reader = *labels = NULL;
    PyObject *compiled = PyObject_GetAttr(tm, n_compiled);
    if (compiled == NULL)
        return -1;
    if (!PyDict_Check(compiled)) {
        Py_DECREF(compiled);
        return 0;
    }
    PyObject *key = _PyLong_FromByteArray(bits, (size_t)nb, 1, 0);
    PyObject *plan = key == NULL ? NULL : PyDict_GetItemWithError(compiled, key);
    Py_XDECREF(key);
    Py_XINCREF(plan);
    Py_DECREF(compiled);
    if (plan == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *img = PyObject_GetAttr(plan, n_image);
    PyObject *lab = img ? PyObject_GetAttr(plan, n_labels) : NULL;
    if (lab == NULL) {
        Py_XDECREF(img);
        Py_DECREF(plan);
        return -1;
    }
    if (!Py_IS_TYPE(img, &ImageReaderType)) {
        Py_DECREF(img);
        Py_DECREF(lab);
        Py_DECREF(plan);
        return 0;
    }
    *plan_out = plan;
    *reader = img;
    *labels = lab;
    return 1;
}

static int
is_mariadb(PyObject *ctx)
{
    PyObject *sv = PyObject_GetAttr(ctx, n_server_version);
    if (sv == NULL)
        return -1;
    PyObject *low = PyObject_CallMethod(sv, "lower", NULL);
    Py_DECREF(sv);
    if (low == NULL)
        return -1;
    PyObject *m = PyUnicode_FromString("mariadb");
    int r = m == NULL ? -1 : PySequence_Contains(low, m);
    Py_XDECREF(m);
    Py_DECREF(low);
    return r;
}

/* ---- the post-header of a WRITE/UPDATE/DELETE_ROWS v1/v2 event and what it refers to */
typedef struct {
    int kind, version, ncols, nb;   /* kind: 0 INSERT, 1 UPDATE, 2 DELETE */
    unsigned long long table_id;
    long flags;
    const unsigned char *present, *present_after;
    Py_ssize_t rows_at;             /* first byte of the row images */
    PyObject *tm, *plan_b, *rb, *lb, *plan_a, *ra, *la;  /* new refs (the _a ones: UPDATE) */
} RowsHead;

static void
rows_head_clear(RowsHead *r)
{
    Py_CLEAR(r->tm);
    Py_CLEAR(r->plan_b);
    Py_CLEAR(r->rb);
    Py_CLEAR(r->lb);
    Py_CLEAR(r->plan_a);
    Py_CLEAR(r->ra);
    Py_CLEAR(r->la);
}

/* The common shape rows.decode_rows_event / rows._fast_event take without Nodes: rows
 * decoded, a 8/10-byte post-header (6-byte table id), no extra data, < 251 columns, the
 * table map known with that many columns and its hi-res temporals resolved, compiled C plans
 * for the bitmaps. 1: r filled (rows_head_clear it); 0: not that shape (no error set). */
static int
rows_head(PyObject *ctx, const unsigned char *b, Py_ssize_t p, Py_ssize_t end, int code,
          RowsHead *r)
{
    memset(r, 0, sizeof *r);
    r->version = code >= 30 ? 2 : 1;
    r->kind = (code == 23 || code == 30) ? 0 : (code == 24 || code == 31) ? 1 : 2;
    long long v;
    if (attr_int(ctx, n_decode_rows, &v) < 0 || !v)
        goto no;
    PyObject *phl = PyObject_GetAttr(ctx, n_post_header_len);
    if (phl == NULL)
        goto no;
    long plen = -1;
    if (PyTuple_Check(phl) && code - 1 < PyTuple_GET_SIZE(phl))
        plen = PyLong_AsLong(PyTuple_GET_ITEM(phl, code - 1));
    Py_DECREF(phl);
    if (plen != 8 && plen != 10)
        goto no;
    if (end - p < 6 + 2 + (r->version == 2 ? 2 : 0) + 1)
        goto no;
    for (int i = 5; i >= 0; i--)
        r->table_id = r->table_id << 8 | b[p + i];
    p += 6;
    r->flags = b[p] | b[p + 1] << 8;
    p += 2;
    if (r->version == 2) {
        if (b[p] != 2 || b[p + 1] != 0)
            goto no;
        p += 2;
    }
    r->ncols = b[p];
    p += 1;
    if (r->ncols >= 251)
        goto no;
    r->nb = (r->ncols + 7) / 8;
    r->present = r->present_after = b + p;
    p += r->nb;
    if (r->kind == 1) {
        r->present_after = b + p;
        p += r->nb;
    }
    if (p > end)
        goto no;
    r->rows_at = p;
    PyObject *tables = PyObject_GetAttr(ctx, n_tables);
    if (tables == NULL)
        goto no;
    PyObject *key = PyLong_FromUnsignedLongLong(r->table_id);
    r->tm = key == NULL ? NULL : PyDict_GetItemWithError(tables, key);
    Py_XDECREF(key);
    Py_XINCREF(r->tm);
    Py_DECREF(tables);
    if (r->tm == NULL)
        goto no;
    PyObject *cols = PyObject_GetAttr(r->tm, n_columns);
    int ok = cols != NULL && PyList_Check(cols) && PyList_GET_SIZE(cols) == r->ncols;
    Py_XDECREF(cols);
    if (!ok)
        goto no;
    PyObject *hr = PyObject_GetAttr(r->tm, n_hires_resolved);
    if (hr == NULL)
        goto no;
    int unresolved = hr == Py_None;
    Py_DECREF(hr);
    if (unresolved && is_mariadb(ctx) != 0)
        goto no;  /* MariaDB's old hi-res temporals are resolved by the Python path */
    if (plan_for(r->tm, r->present, r->nb, &r->plan_b, &r->rb, &r->lb) <= 0)
        goto no;
    if (r->kind == 1 &&
        plan_for(r->tm, r->present_after, r->nb, &r->plan_a, &r->ra, &r->la) <= 0)
        goto no;
    return 1;
no:
    PyErr_Clear();
    rows_head_clear(r);
    return 0;
}

/* WRITE/UPDATE/DELETE_ROWS v1/v2: rows._fast_event in C */
static PyObject *
fast_rows(PyObject *ctx, PyObject *bobj, const unsigned char *b, Py_ssize_t p, Py_ssize_t end,
          int code)
{
    RowsHead r;
    if (!rows_head(ctx, b, p, end, code, &r))
        return NULL;
    PyObject *out = NULL, *schema = NULL, *table = NULL;
    PyObject *rows = rows_between(bobj, r.rows_at, end, r.kind, (ImageReader *)r.rb,
                                  (ImageReader *)r.ra);
    if (rows == NULL) {
        PyErr_Clear();  /* damaged: the Python path finds the exact offset */
        goto done;
    }
    schema = PyObject_GetAttr(r.tm, n_schema);
    table = schema ? PyObject_GetAttr(r.tm, n_table) : NULL;
    if (table == NULL)
        goto done;
    {
        PyObject *tid = PyLong_FromUnsignedLongLong(r.table_id);
        PyObject *fl = PyLong_FromLong(r.flags);
        PyObject *ver = PyLong_FromLong(r.version);
        if (tid && fl && ver) {
            PyObject *vals[9] = {tid, schema, table, kind_names[r.kind], rows, fl, ver, r.lb,
                                 r.la ? r.la : Py_None};
            out = make(L_ROWS, vals, 9);
        }
        Py_XDECREF(tid);
        Py_XDECREF(fl);
        Py_XDECREF(ver);
    }
done:
    Py_XDECREF(rows);
    Py_XDECREF(schema);
    Py_XDECREF(table);
    rows_head_clear(&r);
    return out;
}

/* configure_node(Node, (offset of name, offset, length, value, wire, display, doc, children,
 * error)): make_node then builds wire.node.Node instances (a frozen slots dataclass) */
static PyObject *
configure_node(PyObject *module, PyObject *args)
{
    PyObject *cls, *offs;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!:configure_node", &PyType_Type, &cls, &PyTuple_Type, &offs))
        return NULL;
    if (PyTuple_GET_SIZE(offs) != 9) {
        PyErr_SetString(PyExc_ValueError, "configure_node: Node has 9 fields");
        return NULL;
    }
    Layout *L = &layouts[L_NODE];
    for (Py_ssize_t k = 0; k < 9; k++) {
        Py_ssize_t o = PyLong_AsSsize_t(PyTuple_GET_ITEM(offs, k));
        if (o < (Py_ssize_t)sizeof(PyObject) ||
            o + (Py_ssize_t)sizeof(PyObject *) > ((PyTypeObject *)cls)->tp_basicsize) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "configure_node: bad slot offset");
            return NULL;
        }
        L->off[k] = o;
        L->defaults[k] = NULL;
    }
    Py_INCREF(cls);
    L->type = (PyTypeObject *)cls;
    L->n = 9;
    node_ready = 1;
    Py_RETURN_NONE;
}

/* make_node(name, offset, length, value, wire, display, doc, children, error) -> Node */
static PyObject *
make_node(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (!node_ready || nargs != 9) {
        PyErr_SetString(PyExc_TypeError, "make_node takes the 9 fields of a configured Node");
        return NULL;
    }
    return make(L_NODE, (PyObject **)args, 9);
}

/* ====================================================================== recorded images
 * record_image(reader, info, buf, pos, end, base, name, doc) -> (row, image Node, new pos):
 * rows._image_recorded in C for the common case (no JSON diff columns): the same values (the
 * ImageReader's column specs), the same Nodes (a null_bitmap leaf, then one leaf per present
 * column with its wire type, display text and doc) and the same group Node around them.
 * info holds per column (wire, doc, null doc, quoted, int_plain, ColumnInfo); displays other
 * than NULL / int / bytes / str come from values.display_value. Raises on a short image: the
 * caller then runs the Python path, which names the exact offset.
 * shift_nodes(nodes, delta): the nodes (recursively) with every offset moved by delta. */
static PyObject *display_value_fn, *null_bitmap_doc, *s_NULL, *s_empty_quotes, *s_empty,
    *s_null_bitmap, *s_ellipsis;

static PyObject *
configure_record(PyObject *module, PyObject *args)
{
    PyObject *fn, *doc;
    (void)module;
    if (!PyArg_ParseTuple(args, "OU:configure_record", &fn, &doc))
        return NULL;
    Py_INCREF(fn);
    display_value_fn = fn;
    Py_INCREF(doc);
    null_bitmap_doc = doc;
    s_NULL = PyUnicode_InternFromString("NULL");
    s_empty_quotes = PyUnicode_InternFromString("''");
    s_empty = PyUnicode_InternFromString("");
    s_null_bitmap = PyUnicode_InternFromString("null_bitmap");
    s_ellipsis = PyUnicode_InternFromString("...");
    if (!s_NULL || !s_empty_quotes || !s_empty || !s_null_bitmap || !s_ellipsis)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
hex_spaced(const unsigned char *p, Py_ssize_t n)
{
    static const char digits[] = "0123456789abcdef";
    if (n == 0)
        return PyUnicode_New(0, 127);
    PyObject *u = PyUnicode_New(3 * n - 1, 127);
    if (u == NULL)
        return NULL;
    Py_UCS1 *o = PyUnicode_1BYTE_DATA(u);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i)
            *o++ = ' ';
        *o++ = (Py_UCS1)digits[p[i] >> 4];
        *o++ = (Py_UCS1)digits[p[i] & 15];
    }
    return u;
}

/* values.double_text: DOUBLE as the server prints it (shortest round-trip digits; fixed
 * notation for decimal exponents -15..14, else 1.5e-16 / 1e15) */
static PyObject *
double_display(double d, PyObject *v)
{
    if (d != d || d == HUGE_VAL || d == -HUGE_VAL)
        return PyObject_Str(v);
    if (d == 0)
        return PyUnicode_FromString(signbit(d) ? "-0" : "0");
    char *r = PyOS_double_to_string(d, 'r', 0, 0, NULL);
    if (r == NULL)
        return NULL;
    const char *s = r;
    int neg = 0;
    if (*s == '-') {
        neg = 1;
        s++;
    }
    char digs[64];
    int nd = 0, ip_len = 0, seen_point = 0;
    long exp10 = 0;
    for (; *s; s++) {
        if (*s == '.') {
            seen_point = 1;
        } else if (*s == 'e' || *s == 'E') {
            exp10 = strtol(s + 1, NULL, 10);
            break;
        } else if (nd < 60) {
            digs[nd++] = *s;
            if (!seen_point)
                ip_len++;
        }
    }
    PyMem_Free(r);
    int lead = 0;
    while (lead < nd && digs[lead] == '0')
        lead++;
    long e = ip_len - 1 - lead + exp10;
    int last = nd;
    while (last > lead + 1 && digs[last - 1] == '0')
        last--;
    const char *dg = digs + lead;
    int n = last - lead;
    char out[128];
    int k = 0;
    if (neg)
        out[k++] = '-';
    if (e >= -15 && e < 15) {
        if (e < 0) {
            out[k++] = '0';
            out[k++] = '.';
            for (long z = 0; z < -e - 1; z++)
                out[k++] = '0';
            memcpy(out + k, dg, (size_t)n);
            k += n;
        } else if (n <= e + 1) {
            memcpy(out + k, dg, (size_t)n);
            k += n;
            for (long z = 0; z < e + 1 - n; z++)
                out[k++] = '0';
        } else {
            memcpy(out + k, dg, (size_t)(e + 1));
            k += (int)(e + 1);
            out[k++] = '.';
            memcpy(out + k, dg + e + 1, (size_t)(n - e - 1));
            k += (int)(n - e - 1);
        }
    } else {
        out[k++] = dg[0];
        if (n > 1) {
            out[k++] = '.';
            memcpy(out + k, dg + 1, (size_t)(n - 1));
            k += n - 1;
        }
        k += snprintf(out + k, sizeof out - (size_t)k, "e%ld", e);
    }
    return ascii_str(out, k);
}

/* values.display_value for one decoded value */
static PyObject *
display_of(PyObject *v, PyObject *info)
{
    if (v == Py_None) {
        Py_INCREF(s_NULL);
        return s_NULL;
    }
    int quoted = PyObject_IsTrue(PyTuple_GET_ITEM(info, 3));
    int int_plain = PyObject_IsTrue(PyTuple_GET_ITEM(info, 4));
    if (PyLong_CheckExact(v) && int_plain)
        return PyObject_Str(v);
    if (PyBytes_Check(v)) {
        Py_ssize_t n = PyBytes_GET_SIZE(v);
        const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(v);
        if (n > 48) {
            PyObject *h = hex_spaced(p, 48);
            if (h == NULL)
                return NULL;
            PyObject *out = PyUnicode_FromFormat("%U ... (%zd bytes)", h, n);
            Py_DECREF(h);
            return out;
        }
        if (n == 0) {
            Py_INCREF(s_empty_quotes);
            return s_empty_quotes;
        }
        return hex_spaced(p, n);
    }
    if (PyUnicode_Check(v)) {
        Py_ssize_t n = PyUnicode_GET_LENGTH(v);
        if (n <= 200) {
            if (quoted)
                return PyObject_Repr(v);
            Py_INCREF(v);
            return v;
        }
        PyObject *cut = PyUnicode_Substring(v, 0, 200);
        if (cut == NULL)
            return NULL;
        PyObject *head = quoted ? PyObject_Repr(cut) : (Py_INCREF(cut), cut);
        Py_DECREF(cut);
        if (head == NULL)
            return NULL;
        PyObject *out = PyUnicode_Concat(head, s_ellipsis);
        Py_DECREF(head);
        return out;
    }
    if (PyFloat_CheckExact(v) && PyTuple_GET_SIZE(info) > 6 &&
        PyObject_IsTrue(PyTuple_GET_ITEM(info, 6)))
        return double_display(PyFloat_AS_DOUBLE(v), v);
    return PyObject_CallFunctionObjArgs(display_value_fn, v, PyTuple_GET_ITEM(info, 5), NULL);
}

static PyObject *
leaf_node(PyObject *name, Py_ssize_t offset, Py_ssize_t length, PyObject *value,
          PyObject *wire, PyObject *display, PyObject *doc)
{
    PyObject *off = PyLong_FromSsize_t(offset);
    PyObject *len = PyLong_FromSsize_t(length);
    PyObject *out = NULL;
    if (off && len) {
        PyObject *a[9] = {name, off, len, value, wire, display, doc, empty_tuple, Py_None};
        out = make(L_NODE, a, 9);
    }
    Py_XDECREF(off);
    Py_XDECREF(len);
    return out;
}

/* one recorded image at pos: returns the image Node, sets *row_out (new ref) and *newpos */
static PyObject *
image_core(ImageReader *R, PyObject *info, PyObject *bobj, Py_ssize_t pos, Py_ssize_t end,
           Py_ssize_t base, PyObject *name, PyObject *doc, PyObject **row_out,
           Py_ssize_t *newpos)
{
    Py_ssize_t ncols = R->n;
    if (PyTuple_GET_SIZE(info) != ncols) {
        PyErr_SetString(PyExc_ValueError, "record_image: info and reader differ");
        return NULL;
    }
    if (end > PyBytes_GET_SIZE(bobj) || pos < 0 || pos > end) {
        past_end();
        return NULL;
    }
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    Py_ssize_t nb = (ncols + 7) / 8;
    if (end - pos < nb) {
        past_end();
        return NULL;
    }
    const unsigned char *nulls = b + pos;
    Py_ssize_t p = pos + nb;
    PyObject *row = _PyDict_NewPresized(ncols);
    PyObject *kids = PyTuple_New(ncols + 1);
    if (row == NULL || kids == NULL)
        goto fail;
    {   /* the null_bitmap leaf */
        PyObject *bits = _PyLong_FromByteArray(nulls, (size_t)nb, 1, 0);
        PyObject *wire = PyUnicode_FromFormat("bitmap<%zd>", nb);
        PyObject *disp = NULL;
        if (bits && wire) {
            char stack[128];
            Py_ssize_t dl = ncols + 29;
            char *d = dl <= (Py_ssize_t)sizeof stack ? stack : PyMem_Malloc((size_t)dl);
            if (d != NULL) {
                for (Py_ssize_t i = 0; i < ncols; i++)
                    d[i] = nulls[i >> 3] & (1 << (i & 7)) ? '1' : '0';
                memcpy(d + ncols, " (first present column first)", 29);
                disp = ascii_str(d, dl);
                if (d != stack)
                    PyMem_Free(d);
            } else {
                PyErr_NoMemory();
            }
        }
        PyObject *leaf = disp ? leaf_node(s_null_bitmap, base + pos, nb, bits, wire, disp,
                                          null_bitmap_doc) : NULL;
        Py_XDECREF(bits);
        Py_XDECREF(wire);
        Py_XDECREF(disp);
        if (leaf == NULL)
            goto fail;
        PyTuple_SET_ITEM(kids, 0, leaf);
    }
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *ci = PyTuple_GET_ITEM(info, i);
        PyObject *label = PyTuple_GET_ITEM(R->labels, i);
        Py_ssize_t start = p;
        PyObject *v, *leaf;
        if (nulls[i >> 3] & (1 << (i & 7))) {
            v = Py_None;
            Py_INCREF(v);
            leaf = leaf_node(label, base + start, 0, v, PyTuple_GET_ITEM(ci, 0), s_NULL,
                             PyTuple_GET_ITEM(ci, 2));
        } else {
            v = read_value(&R->cols[i], bobj, b, end, &p);
            if (v == NULL)
                goto fail;
            PyObject *disp = display_of(v, ci);
            leaf = disp ? leaf_node(label, base + start, p - start, v, PyTuple_GET_ITEM(ci, 0),
                                    disp, PyTuple_GET_ITEM(ci, 1)) : NULL;
            Py_XDECREF(disp);
        }
        if (leaf == NULL || PyDict_SetItem(row, label, v) < 0) {
            Py_XDECREF(leaf);
            Py_DECREF(v);
            goto fail;
        }
        Py_DECREF(v);
        PyTuple_SET_ITEM(kids, i + 1, leaf);
    }
    {
        PyObject *off = PyLong_FromSsize_t(base + pos);
        PyObject *len = PyLong_FromSsize_t(p - pos);
        PyObject *node = NULL;
        if (off && len) {
            PyObject *a[9] = {name, off, len, Py_None, s_empty, s_empty, doc, kids, Py_None};
            node = make(L_NODE, a, 9);
        }
        Py_XDECREF(off);
        Py_XDECREF(len);
        if (node == NULL)
            goto fail;
        Py_DECREF(kids);
        *row_out = row;
        *newpos = p;
        return node;
    }
fail:
    Py_XDECREF(row);
    Py_XDECREF(kids);
    return NULL;
}


static PyObject *
record_image(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (!node_ready || display_value_fn == NULL || nargs != 8 ||
        !Py_IS_TYPE(args[0], &ImageReaderType) || !PyTuple_Check(args[1]) ||
        !PyBytes_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "record_image(reader, info, bytes, pos, end, base, "
                        "name, doc) after configure_node/configure_record");
        return NULL;
    }
    ImageReader *R = (ImageReader *)args[0];
    PyObject *info = args[1], *bobj = args[2], *name = args[6], *doc = args[7];
    Py_ssize_t pos = PyLong_AsSsize_t(args[3]);
    Py_ssize_t end = PyLong_AsSsize_t(args[4]);
    Py_ssize_t base = PyLong_AsSsize_t(args[5]);
    if (PyErr_Occurred())
        return NULL;
    PyObject *row;
    Py_ssize_t np;
    PyObject *node = image_core(R, info, bobj, pos, end, base, name, doc, &row, &np);
    if (node == NULL)
        return NULL;
    return Py_BuildValue("(NNn)", row, node, np);
}

/* record_rows(kind, reader_b, info_b, reader_a, info_a, buf, pos, end, base, names)
 * -> (rows, row Nodes, new pos): rows._rows_recorded for non-partial events. names =
 * (before name, before doc, after name, after doc) of the images for this kind. */
static PyObject *
record_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (!node_ready || display_value_fn == NULL || nargs != 10 ||
        !Py_IS_TYPE(args[1], &ImageReaderType) || !PyTuple_Check(args[2]) ||
        !PyBytes_Check(args[5]) || !PyTuple_Check(args[9]) || PyTuple_GET_SIZE(args[9]) != 4) {
        PyErr_SetString(PyExc_TypeError, "record_rows: bad arguments");
        return NULL;
    }
    int kind = (int)PyLong_AsLong(args[0]);
    ImageReader *rb = (ImageReader *)args[1], *ra = NULL;
    PyObject *ib = args[2], *ia = args[4], *bobj = args[5], *names = args[9];
    if (kind == 1) {
        if (!Py_IS_TYPE(args[3], &ImageReaderType) || !PyTuple_Check(ia)) {
            PyErr_SetString(PyExc_TypeError, "record_rows: UPDATE needs the after reader");
            return NULL;
        }
        ra = (ImageReader *)args[3];
    }
    Py_ssize_t p = PyLong_AsSsize_t(args[6]);
    Py_ssize_t end = PyLong_AsSsize_t(args[7]);
    Py_ssize_t base = PyLong_AsSsize_t(args[8]);
    if (PyErr_Occurred())
        return NULL;
    if (end > PyBytes_GET_SIZE(bobj) || p < 0 || p > end) {
        past_end();
        return NULL;
    }
    PyObject *rows = PyList_New(0), *nodes = PyList_New(0);
    if (rows == NULL || nodes == NULL)
        goto fail;
    for (Py_ssize_t i = 0; p < end; i++) {
        Py_ssize_t start = p;
        PyObject *before = NULL, *after = NULL, *n1 = NULL, *n2 = NULL;
        if (kind == 0) {
            n2 = image_core(rb, ib, bobj, p, end, base, PyTuple_GET_ITEM(names, 2),
                            PyTuple_GET_ITEM(names, 3), &after, &p);
        } else {
            n1 = image_core(rb, ib, bobj, p, end, base, PyTuple_GET_ITEM(names, 0),
                            PyTuple_GET_ITEM(names, 1), &before, &p);
            if (n1 != NULL && kind == 1)
                n2 = image_core(ra, ia, bobj, p, end, base, PyTuple_GET_ITEM(names, 2),
                                PyTuple_GET_ITEM(names, 3), &after, &p);
        }
        int ok = kind == 0 ? n2 != NULL : kind == 1 ? (n1 != NULL && n2 != NULL) : n1 != NULL;
        PyObject *kids = NULL, *row = NULL, *rname = NULL, *rdoc = NULL, *off = NULL,
                 *len = NULL, *node = NULL;
        if (ok) {
            kids = kind == 1 ? PyTuple_Pack(2, n1, n2) : PyTuple_Pack(1, kind == 0 ? n2 : n1);
            row = _PyDict_NewPresized(2);
            rname = PyUnicode_FromFormat("row[%zd]", i);
            rdoc = PyUnicode_FromFormat("row %zd of the event", i + 1);
            off = PyLong_FromSsize_t(base + start);
            len = PyLong_FromSsize_t(p - start);
        }
        if (kids && row && rname && rdoc && off && len &&
            PyDict_SetItem(row, s_before, before ? before : Py_None) == 0 &&
            PyDict_SetItem(row, s_after, after ? after : Py_None) == 0 &&
            PyList_Append(rows, row) == 0) {
            PyObject *a[9] = {rname, off, len, Py_None, s_empty, s_empty, rdoc, kids, Py_None};
            node = make(L_NODE, a, 9);
            if (node != NULL && PyList_Append(nodes, node) < 0)
                Py_CLEAR(node);
        }
        Py_XDECREF(before);
        Py_XDECREF(after);
        Py_XDECREF(n1);
        Py_XDECREF(n2);
        Py_XDECREF(kids);
        Py_XDECREF(row);
        Py_XDECREF(rname);
        Py_XDECREF(rdoc);
        Py_XDECREF(off);
        Py_XDECREF(len);
        if (node == NULL) {
            if (!PyErr_Occurred())
                past_end();
            goto fail;
        }
        Py_DECREF(node);
        if (p == start) {
            no_progress();
            goto fail;
        }
    }
    return Py_BuildValue("(NNn)", rows, nodes, p);
fail:
    Py_XDECREF(rows);
    Py_XDECREF(nodes);
    return NULL;
}

static PyObject *
shift_one(PyObject *node, PyObject *delta)
{
    Layout *L = &layouts[L_NODE];
    if (!Py_IS_TYPE(node, L->type)) {
        PyErr_SetString(PyExc_TypeError, "shift_nodes: not a Node");
        return NULL;
    }
    PyObject *a[9];
    for (int k = 0; k < 9; k++)
        a[k] = *(PyObject **)((char *)node + L->off[k]);
    PyObject *off = PyNumber_Add(a[1], delta);
    if (off == NULL)
        return NULL;
    PyObject *kids = a[7];
    PyObject *nk;
    Py_ssize_t n = PyTuple_GET_SIZE(kids);
    if (n == 0) {
        nk = kids;
        Py_INCREF(nk);
    } else {
        nk = PyTuple_New(n);
        if (nk == NULL) {
            Py_DECREF(off);
            return NULL;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *c = shift_one(PyTuple_GET_ITEM(kids, i), delta);
            if (c == NULL) {
                Py_DECREF(off);
                Py_DECREF(nk);
                return NULL;
            }
            PyTuple_SET_ITEM(nk, i, c);
        }
    }
    a[1] = off;
    a[7] = nk;
    PyObject *out = make(L_NODE, a, 9);
    Py_DECREF(off);
    Py_DECREF(nk);
    return out;
}

static PyObject *
shift_nodes(PyObject *module, PyObject *args)
{
    PyObject *nodes, *delta;
    (void)module;
    if (!node_ready || !PyArg_ParseTuple(args, "O!O!:shift_nodes", &PyTuple_Type, &nodes,
                                         &PyLong_Type, &delta)) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_TypeError, "shift_nodes before configure_node");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(nodes);
    PyObject *out = PyTuple_New(n);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *c = shift_one(PyTuple_GET_ITEM(nodes, i), delta);
        if (c == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyTuple_SET_ITEM(out, i, c);
    }
    return out;
}

/* ====================================================================== recorded header
 * record_header(buf, pos, base) -> (header group Node, EventHeader), or None when the display
 * caches lack this event's type or flags (the caller fills them and decodes in Python):
 * header.decode_header in record mode, for a buffer that holds the 19 header bytes. */
static PyObject *hdr_docs, *hdr_type_disp, *hdr_flag_disp, *s_header, *hdr_names[6],
    *hdr_wires[3];

static PyObject *
configure_header(PyObject *module, PyObject *args)
{
    PyObject *docs, *tdisp, *fdisp;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!O!:configure_header", &PyTuple_Type, &docs, &PyDict_Type,
                          &tdisp, &PyDict_Type, &fdisp))
        return NULL;
    if (PyTuple_GET_SIZE(docs) != 7) {
        PyErr_SetString(PyExc_ValueError, "configure_header: 7 docs (group + 6 fields)");
        return NULL;
    }
    static const char *names[6] = {"timestamp", "event_type", "server_id", "event_size",
                                   "log_pos", "flags"};
    for (int i = 0; i < 6; i++)
        if ((hdr_names[i] = PyUnicode_InternFromString(names[i])) == NULL)
            return NULL;
    hdr_wires[0] = PyUnicode_InternFromString("int<1>");
    hdr_wires[1] = PyUnicode_InternFromString("int<2>");
    hdr_wires[2] = PyUnicode_InternFromString("int<4>");
    s_header = PyUnicode_InternFromString("header");
    if (!hdr_wires[0] || !hdr_wires[1] || !hdr_wires[2] || !s_header)
        return NULL;
    Py_INCREF(docs);
    Py_INCREF(tdisp);
    Py_INCREF(fdisp);
    hdr_docs = docs;
    hdr_type_disp = tdisp;
    hdr_flag_disp = fdisp;
    Py_RETURN_NONE;
}

static PyObject *
record_header(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyBytes_Check(args[0]) || hdr_docs == NULL || !node_ready ||
        !events_ready) {
        PyErr_SetString(PyExc_TypeError, "record_header(bytes, pos, base) after configuring");
        return NULL;
    }
    PyObject *bobj = args[0];
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    Py_ssize_t base = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return NULL;
    if (pos < 0 || PyBytes_GET_SIZE(bobj) - pos < 19)
        Py_RETURN_NONE;
    const unsigned char *h = (const unsigned char *)PyBytes_AS_STRING(bobj) + pos;
    PyObject *v[6] = {PyLong_FromUnsignedLong(u32le(h)), PyLong_FromLong(h[4]),
                      PyLong_FromUnsignedLong(u32le(h + 5)), PyLong_FromUnsignedLong(u32le(h + 9)),
                      PyLong_FromUnsignedLong(u32le(h + 13)),
                      PyLong_FromLong(h[17] | h[18] << 8)};
    PyObject *out = NULL, *kids = NULL, *hdr = NULL, *group = NULL;
    for (int i = 0; i < 6; i++)
        if (v[i] == NULL)
            goto done;
    PyObject *tdisp = PyDict_GetItemWithError(hdr_type_disp, v[1]);
    PyObject *fdisp = tdisp ? PyDict_GetItemWithError(hdr_flag_disp, v[5]) : NULL;
    if (fdisp == NULL) {
        if (!PyErr_Occurred()) {
            Py_INCREF(Py_None);
            out = Py_None;
        }
        goto done;
    }
    static const int offs[6] = {0, 4, 5, 9, 13, 17}, lens[6] = {4, 1, 4, 4, 4, 2};
    kids = PyTuple_New(6);
    if (kids == NULL)
        goto done;
    for (int i = 0; i < 6; i++) {
        PyObject *wire = lens[i] == 1 ? hdr_wires[0] : lens[i] == 2 ? hdr_wires[1] : hdr_wires[2];
        PyObject *disp = i == 1 ? tdisp : i == 5 ? fdisp : s_empty;
        PyObject *leaf = leaf_node(hdr_names[i], base + pos + offs[i], lens[i], v[i], wire, disp,
                                   PyTuple_GET_ITEM(hdr_docs, i + 1));
        if (leaf == NULL)
            goto done;
        PyTuple_SET_ITEM(kids, i, leaf);
    }
    {
        PyObject *off = PyLong_FromSsize_t(base + pos);
        PyObject *len = PyLong_FromLong(19);
        if (off && len) {
            PyObject *a[9] = {s_header, off, len, Py_None, s_empty, s_empty,
                              PyTuple_GET_ITEM(hdr_docs, 0), kids, Py_None};
            group = make(L_NODE, a, 9);
        }
        Py_XDECREF(off);
        Py_XDECREF(len);
    }
    if (group == NULL)
        goto done;
    hdr = make(L_HDR, v, 6);
    if (hdr != NULL)
        out = PyTuple_Pack(2, group, hdr);
done:
    for (int i = 0; i < 6; i++)
        Py_XDECREF(v[i]);
    Py_XDECREF(kids);
    Py_XDECREF(group);
    Py_XDECREF(hdr);
    return out;
}

/* make_event(offset, header, body, node, checksum_ok, stored, computed, error, size, raw)
 * -> DecodedEvent, without its dataclass __init__ */
static PyObject *
make_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (!events_ready || nargs != 10 || layouts[L_DEC].n != 10) {
        PyErr_SetString(PyExc_TypeError, "make_event takes the 10 fields of DecodedEvent");
        return NULL;
    }
    return make(L_DEC, (PyObject **)args, 10);
}

/* ---- what fast_event and record_event check first */
typedef struct {
    PyObject *bobj;
    const unsigned char *b;
    Py_ssize_t pos, base, body, body_end;
    uint32_t size, stored;
    int code, trailer, verify;
} HotEvent;

/* 1: a complete event of a hot type, no type map, checksum verified if it is to be (e filled);
 * 0: not for the C path (None); -1: an error is set */
static int
hot_event(PyObject *const *args, Py_ssize_t nargs, const char *usage, HotEvent *e)
{
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, usage);
        return -1;
    }
    PyObject *ctx = args[3];
    e->bobj = args[0];
    if (!events_ready || !PyBytes_Check(e->bobj))
        return 0;
    e->pos = PyLong_AsSsize_t(args[1]);
    e->base = PyLong_AsSsize_t(args[2]);
    if (PyErr_Occurred())
        return -1;
    e->b = (const unsigned char *)PyBytes_AS_STRING(e->bobj);
    Py_ssize_t n = PyBytes_GET_SIZE(e->bobj);
    if (e->pos < 0 || n - e->pos < 19)
        return 0;
    const unsigned char *h = e->b + e->pos;
    e->size = u32le(h + 9);
    e->code = h[4];
    if (e->size < 23 || (Py_ssize_t)e->size > n - e->pos)
        return 0;
    switch (e->code) {
    case 16: case 19: case 23: case 24: case 25: case 30: case 31: case 32: case 160: case 162:
        break;
    default:
        return 0;
    }
    PyObject *tmap = PyObject_GetAttr(ctx, n_type_map);
    if (tmap == NULL)
        return -1;
    int has_map = PyObject_IsTrue(tmap);
    Py_DECREF(tmap);
    if (has_map != 0)
        return has_map < 0 ? -1 : 0;
    long long alg, verify = 0;
    if (attr_int(ctx, n_checksum_alg, &alg) < 0)
        return -1;
    e->trailer = alg == 1;
    if (e->trailer && attr_int(ctx, n_verify_checksums, &verify) < 0)
        return -1;
    e->verify = (int)verify;
    e->body = e->pos + 19;
    e->body_end = e->pos + e->size - (e->trailer ? 4 : 0);
    e->stored = 0;
    if (e->trailer) {
        e->stored = u32le(e->b + e->body_end);
        if (e->verify && crc32_of(h, e->body_end - e->pos) != e->stored)
            return 0;  /* the Python path reports the mismatch */
    }
    return 1;
}

/* ====================================================================== recorded events
 * record_event(buf, pos, base, ctx) -> DecodedEvent with its full tree, or None: decode_event
 * in record mode, in C, for the hot types in their common shapes (XID, ANNOTATE_ROWS, the
 * MariaDB GTID without commit id / XA / extra flags, a repeated TABLE_MAP whose nodes the
 * context keeps, WRITE/UPDATE/DELETE_ROWS v1/v2 without extra data) with a verified CRC32 or
 * no checksum. Every name, doc, wire type and display comes from the Python decoders (handed
 * over by configure_record_event); tests compare the trees with the Python ones. */
static PyObject *re_meta, *re_body_doc, *re_crc_doc_fn, *re_xid_doc, *re_ann_doc, *re_gtid_docs,
    *re_gtid_f2, *re_rows_docs, *re_flags_text_fn, *re_image_names, *re_unparsed_doc;
static PyObject *n_nodes, *n_nodes_offset, *n_checksum_source, *s_event, *s_body, *s_checksum,
    *w_int8, *w_int6, *w_int4, *w_int2, *w_int1, *w_eof, *w_packed;
static int record_event_ready;

static PyObject *
configure_record_event(PyObject *module, PyObject *args)
{
    (void)module;
    if (!PyArg_ParseTuple(args, "O!UOUUO!O!O!OO!U:configure_record_event", &PyDict_Type,
                          &re_meta, &re_body_doc, &re_crc_doc_fn, &re_xid_doc, &re_ann_doc,
                          &PyTuple_Type, &re_gtid_docs, &PyTuple_Type, &re_gtid_f2,
                          &PyTuple_Type, &re_rows_docs, &re_flags_text_fn, &PyTuple_Type,
                          &re_image_names, &re_unparsed_doc))
        return NULL;
    if (PyTuple_GET_SIZE(re_gtid_docs) != 4 || PyTuple_GET_SIZE(re_gtid_f2) != 256 ||
        PyTuple_GET_SIZE(re_rows_docs) != 6 || PyTuple_GET_SIZE(re_image_names) != 3) {
        PyErr_SetString(PyExc_ValueError, "configure_record_event: bad tables");
        return NULL;
    }
    PyObject *objs[] = {re_meta, re_body_doc, re_crc_doc_fn, re_xid_doc, re_ann_doc,
                        re_gtid_docs, re_gtid_f2, re_rows_docs, re_flags_text_fn,
                        re_image_names, re_unparsed_doc};
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++)
        Py_INCREF(objs[i]);
#define IN(v, s) if ((v = PyUnicode_InternFromString(s)) == NULL) return NULL
    IN(n_nodes, "nodes");
    IN(n_nodes_offset, "nodes_offset");
    IN(n_checksum_source, "checksum_source");
    IN(s_event, "event");
    IN(s_body, "body");
    IN(s_checksum, "checksum");
    IN(w_int8, "int<8>");
    IN(w_int6, "int<6>");
    IN(w_int4, "int<4>");
    IN(w_int2, "int<2>");
    IN(w_int1, "int<1>");
    IN(w_eof, "string<EOF>");
    IN(w_packed, "packed_int");
#undef IN
    record_event_ready = 1;
    Py_RETURN_NONE;
}

/* append a new leaf to list kids (steals nothing; value borrowed) */
static int
add_leaf(PyObject *kids, const char *name, Py_ssize_t off, Py_ssize_t len, PyObject *value,
         PyObject *wire, PyObject *display, PyObject *doc)
{
    PyObject *nm = PyUnicode_InternFromString(name);
    if (nm == NULL)
        return -1;
    PyObject *leaf = leaf_node(nm, off, len, value, wire, display, doc);
    Py_DECREF(nm);
    if (leaf == NULL)
        return -1;
    int rc = PyList_Append(kids, leaf);
    Py_DECREF(leaf);
    return rc;
}

static int
add_int_leaf(PyObject *kids, const char *name, Py_ssize_t off, Py_ssize_t len,
             unsigned long long v, PyObject *wire, PyObject *display, PyObject *doc)
{
    PyObject *val = PyLong_FromUnsignedLongLong(v);
    if (val == NULL)
        return -1;
    int rc = add_leaf(kids, name, off, len, val, wire, display, doc);
    Py_DECREF(val);
    return rc;
}

static PyObject *
bits_display(const unsigned char *bits, int ncols, const char *suffix)
{
    char stack[512];
    size_t sl = strlen(suffix);
    size_t dl = (size_t)ncols + sl;
    if (dl > sizeof stack)
        return NULL;
    for (int i = 0; i < ncols; i++)
        stack[i] = bits[i >> 3] & (1 << (i & 7)) ? '1' : '0';
    memcpy(stack + ncols, suffix, sl);
    return ascii_str(stack, (Py_ssize_t)dl);
}

/* the rows-event body: leaves into kids, the RowsEvent as *out; 1 done, 0 not the common
 * case, -2 error */
static int
record_rows_body(PyObject *ctx, PyObject *bobj, const unsigned char *b, Py_ssize_t p,
                 Py_ssize_t end, Py_ssize_t base, int code, PyObject *kids, PyObject **out)
{
    RowsHead r;
    if (!rows_head(ctx, b, p, end, code, &r))
        return 0;
    int kind = r.kind, version = r.version, ncols = r.ncols, nb = r.nb;
    unsigned long long table_id = r.table_id;
    long flags = r.flags;
    const unsigned char *present = r.present, *present_after = r.present_after;
    Py_ssize_t q = r.rows_at;
    PyObject *tm = r.tm, *rb = r.rb, *lb = r.lb, *ra = r.ra, *la = r.la;
    int rc = -1;
    PyObject *ib = NULL, *ia = NULL, *res = NULL, *schema = NULL, *table = NULL,
             *ftext = NULL, *disp = NULL, *disp2 = NULL, *bits = NULL, *bits2 = NULL,
             *wire = NULL, *colsb = NULL, *colsa = NULL;
    /* what record_image needs per column: plan.recorded_c */
    ib = PyObject_GetAttrString(r.plan_b, "recorded_c");
    if (ib != NULL && kind == 1)
        ia = PyObject_GetAttrString(r.plan_a, "recorded_c");
    if (ib == NULL || (kind == 1 && ia == NULL))
        goto done;
    {
        PyObject *a[10];
        PyObject *kcode = PyLong_FromLong(kind), *ppos = PyLong_FromSsize_t(q),
                 *pend = PyLong_FromSsize_t(end), *pbase = PyLong_FromSsize_t(base);
        if (kcode && ppos && pend && pbase) {
            a[0] = kcode; a[1] = rb; a[2] = ib; a[3] = ra ? ra : Py_None;
            a[4] = ia ? ia : Py_None; a[5] = bobj; a[6] = ppos; a[7] = pend; a[8] = pbase;
            a[9] = PyTuple_GET_ITEM(re_image_names, kind);
            res = record_rows(NULL, a, 10);
        }
        Py_XDECREF(kcode);
        Py_XDECREF(ppos);
        Py_XDECREF(pend);
        Py_XDECREF(pbase);
        if (res == NULL) {
            PyErr_Clear();
            goto done;
        }
        if (PyLong_AsSsize_t(PyTuple_GET_ITEM(res, 2)) != end)
            goto done;
    }
    /* the post-header leaves */
    PyObject *rd = re_rows_docs;
    if (add_int_leaf(kids, "table_id", base + p, 6, table_id, w_int6, s_empty,
                     PyTuple_GET_ITEM(rd, 0)) < 0)
        goto fail;
    {
        PyObject *fl = PyLong_FromLong(flags);
        ftext = fl ? PyObject_CallOneArg(re_flags_text_fn, fl) : NULL;
        int r2 = ftext ? add_leaf(kids, "flags", base + p + 6, 2, fl, w_int2, ftext,
                                  PyTuple_GET_ITEM(rd, 1)) : -1;
        Py_XDECREF(fl);
        if (r2 < 0)
            goto fail;
    }
    Py_ssize_t at = p + 8;
    if (version == 2) {
        if (add_int_leaf(kids, "extra_data_length", base + at, 2, 2, w_int2, s_empty,
                         PyTuple_GET_ITEM(rd, 2)) < 0)
            goto fail;
        at += 2;
    }
    if (add_int_leaf(kids, "column_count", base + at, 1, (unsigned long long)ncols, w_packed,
                     s_empty, PyTuple_GET_ITEM(rd, 3)) < 0)
        goto fail;
    at += 1;
    wire = PyUnicode_FromFormat("bitmap<%d>", nb);
    bits = _PyLong_FromByteArray(present, (size_t)nb, 1, 0);
    disp = bits_display(present, ncols, " (column 1 first)");
    if (!wire || !bits || !disp ||
        add_leaf(kids, "columns_present_bitmap", base + at, nb, bits, wire, disp,
                 PyTuple_GET_ITEM(rd, 4)) < 0)
        goto fail;
    at += nb;
    if (kind == 1) {
        bits2 = _PyLong_FromByteArray(present_after, (size_t)nb, 1, 0);
        disp2 = bits_display(present_after, ncols, " (column 1 first)");
        if (!bits2 || !disp2 ||
            add_leaf(kids, "columns_present_bitmap_after", base + at, nb, bits2, wire, disp2,
                     PyTuple_GET_ITEM(rd, 5)) < 0)
            goto fail;
    }
    {
        PyObject *nodes = PyTuple_GET_ITEM(res, 1);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(nodes); i++)
            if (PyList_Append(kids, PyList_GET_ITEM(nodes, i)) < 0)
                goto fail;
    }
    schema = PyObject_GetAttr(tm, n_schema);
    table = schema ? PyObject_GetAttr(tm, n_table) : NULL;
    colsb = PyList_GetSlice(lb, 0, PyList_GET_SIZE(lb));
    colsa = kind == 1 ? PyList_GetSlice(la, 0, PyList_GET_SIZE(la)) : (Py_INCREF(Py_None), Py_None);
    if (!table || !colsb || !colsa)
        goto fail;
    {
        PyObject *tid = PyLong_FromUnsignedLongLong(table_id);
        PyObject *fl = PyLong_FromLong(flags);
        PyObject *ver = PyLong_FromLong(version);
        if (tid && fl && ver) {
            PyObject *vals[9] = {tid, schema, table, kind_names[kind], PyTuple_GET_ITEM(res, 0),
                                 fl, ver, colsb, colsa};
            *out = make(L_ROWS, vals, 9);
        }
        Py_XDECREF(tid);
        Py_XDECREF(fl);
        Py_XDECREF(ver);
        if (*out == NULL)
            goto fail;
    }
    rc = 1;
    goto done;
fail:
    rc = -2;
done:
    if (rc == -1 && PyErr_Occurred())
        PyErr_Clear();
    Py_XDECREF(ib); Py_XDECREF(ia); Py_XDECREF(res); Py_XDECREF(schema);
    Py_XDECREF(table); Py_XDECREF(ftext); Py_XDECREF(disp); Py_XDECREF(disp2);
    Py_XDECREF(bits); Py_XDECREF(bits2); Py_XDECREF(wire); Py_XDECREF(colsb);
    Py_XDECREF(colsa);
    rows_head_clear(&r);
    return rc == 1 ? 1 : rc == -2 ? -2 : 0;
}

static PyObject *
record_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    HotEvent e;
    int go = hot_event(args, nargs, "record_event(buf, pos, base, ctx)", &e);
    if (go <= 0) {
        if (go < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    if (!record_event_ready || !node_ready || (e.trailer && !e.verify))
        Py_RETURN_NONE;
    PyObject *bobj = e.bobj, *ctx = args[3];
    const unsigned char *b = e.b, *h = b + e.pos;
    Py_ssize_t pos = e.pos, base = e.base, body = e.body, body_end = e.body_end;
    uint32_t size = e.size, stored = e.stored;
    int code = e.code, trailer = e.trailer;
    PyObject *codeobj = PyLong_FromLong(code);
    if (codeobj == NULL)
        return NULL;
    PyObject *meta = PyDict_GetItemWithError(re_meta, codeobj);
    Py_DECREF(codeobj);
    if (meta == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *bkids = PyList_New(0);
    if (bkids == NULL)
        return NULL;
    PyObject *ev = NULL, *out = NULL, *hdr_pair = NULL;
    int handled = 0;
    Py_ssize_t used = body;  /* end of the bytes the body leaves cover */
    switch (code) {
    case 16: {
        if (body_end - body < 8)
            break;
        unsigned long long x = (unsigned long long)u32le(b + body) |
                               (unsigned long long)u32le(b + body + 4) << 32;
        PyObject *xv = PyLong_FromUnsignedLongLong(x);
        if (xv == NULL || add_leaf(bkids, "xid", base + body, 8, xv, w_int8, s_empty,
                                   re_xid_doc) < 0) {
            Py_XDECREF(xv);
            goto fail;
        }
        ev = make(L_XID, &xv, 1);
        Py_DECREF(xv);
        if (ev == NULL)
            goto fail;
        used = body + 8;
        handled = 1;
        break;
    }
    case 160: {
        PyObject *q = PyUnicode_DecodeUTF8((const char *)b + body, body_end - body, "replace");
        if (q == NULL || add_leaf(bkids, "query", base + body, body_end - body, q, w_eof,
                                  s_empty, re_ann_doc) < 0) {
            Py_XDECREF(q);
            goto fail;
        }
        ev = make(L_ANN, &q, 1);
        Py_DECREF(q);
        if (ev == NULL)
            goto fail;
        used = body_end;
        handled = 1;
        break;
    }
    case 162: {
        if (body_end - body < 13 || (b[body + 12] & gtid_slow_flags))
            break;
        int zero = 1;
        for (Py_ssize_t i = body + 13; i < body_end; i++)
            if (b[i]) {
                zero = 0;
                break;
            }
        if (!zero)
            break;
        uint32_t sid = u32le(h + 5);
        unsigned long long seq = (unsigned long long)u32le(b + body) |
                                 (unsigned long long)u32le(b + body + 4) << 32;
        uint32_t dom = u32le(b + body + 8);
        int f2 = b[body + 12];
        PyObject *gd = re_gtid_docs;
        if (add_int_leaf(bkids, "seq_no", base + body, 8, seq, w_int8, s_empty,
                         PyTuple_GET_ITEM(gd, 0)) < 0 ||
            add_int_leaf(bkids, "domain_id", base + body + 8, 4, dom, w_int4, s_empty,
                         PyTuple_GET_ITEM(gd, 1)) < 0 ||
            add_int_leaf(bkids, "flags2", base + body + 12, 1, (unsigned long long)f2, w_int1,
                         PyTuple_GET_ITEM(re_gtid_f2, f2), PyTuple_GET_ITEM(gd, 2)) < 0)
            goto fail;
        if (body_end > body + 13) {
            PyObject *pad = PyBytes_FromStringAndSize((const char *)b + body + 13,
                                                      body_end - body - 13);
            if (pad == NULL || add_leaf(bkids, "padding", base + body + 13,
                                        body_end - body - 13, pad, w_eof, s_empty,
                                        PyTuple_GET_ITEM(gd, 3)) < 0) {
                Py_XDECREF(pad);
                goto fail;
            }
            Py_DECREF(pad);
        }
        char txt[64];
        snprintf(txt, sizeof txt, "%u-%u-%llu", dom, sid, seq);
        PyObject *v[5] = {PyUnicode_FromString(txt), PyLong_FromUnsignedLongLong(seq),
                          PyLong_FromUnsignedLong(dom), PyLong_FromUnsignedLong(sid),
                          PyLong_FromLong(f2)};
        if (v[0] && v[1] && v[2] && v[3] && v[4])
            ev = make(L_GTID, v, 5);
        for (int i = 0; i < 5; i++)
            Py_XDECREF(v[i]);
        if (ev == NULL)
            goto fail;
        used = body_end;
        handled = 1;
        break;
    }
    case 19: {
        PyObject *tmev = fast_table_map(ctx, b, body, body_end);
        if (tmev == NULL) {
            if (PyErr_Occurred())
                goto fail;
            break;
        }
        PyObject *tm = *(PyObject **)((char *)tmev + layouts[L_TMEV].off[5]);
        PyObject *nodes = PyObject_GetAttr(tm, n_nodes);
        PyObject *noff = nodes ? PyObject_GetAttr(tm, n_nodes_offset) : NULL;
        if (nodes == NULL || noff == NULL || !PyTuple_Check(nodes)) {
            Py_XDECREF(nodes);
            Py_XDECREF(noff);
            Py_DECREF(tmev);
            PyErr_Clear();
            break;
        }
        PyObject *delta = PyLong_FromSsize_t(base + body - PyLong_AsSsize_t(noff));
        PyObject *sargs = delta ? PyTuple_Pack(2, nodes, delta) : NULL;
        PyObject *shifted = sargs ? shift_nodes(NULL, sargs) : NULL;
        Py_XDECREF(sargs);
        Py_XDECREF(delta);
        Py_DECREF(nodes);
        Py_DECREF(noff);
        if (shifted == NULL) {
            Py_DECREF(tmev);
            goto fail;
        }
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shifted); i++)
            if (PyList_Append(bkids, PyTuple_GET_ITEM(shifted, i)) < 0) {
                Py_DECREF(shifted);
                Py_DECREF(tmev);
                goto fail;
            }
        Py_DECREF(shifted);
        ev = tmev;
        used = body_end;
        handled = 1;
        break;
    }
    default: {
        int r = record_rows_body(ctx, bobj, b, body, body_end, base, code, bkids, &ev);
        if (r == -2)
            goto fail;
        if (r == 1) {
            used = body_end;
            handled = 1;
        }
    }
    }
    if (!handled) {
        Py_DECREF(bkids);
        Py_RETURN_NONE;
    }
    if (used < body_end) {
        PyObject *rest = PyBytes_FromStringAndSize((const char *)b + used, body_end - used);
        if (rest == NULL || add_leaf(bkids, "unparsed", base + used, body_end - used, rest,
                                     w_eof, s_empty, re_unparsed_doc) < 0) {
            Py_XDECREF(rest);
            goto fail;
        }
        Py_DECREF(rest);
    }
    {
        PyObject *hargs[3] = {bobj, args[1], args[2]};
        hdr_pair = record_header(NULL, hargs, 3);
        if (hdr_pair == NULL || hdr_pair == Py_None)
            goto fail;
    }
    {
        PyObject *bk = PyList_AsTuple(bkids);
        PyObject *boff = PyLong_FromSsize_t(base + body);
        PyObject *blen = PyLong_FromSsize_t(body_end - body);
        PyObject *bnode = NULL;
        if (bk && boff && blen) {
            PyObject *a[9] = {s_body, boff, blen, Py_None, s_empty, s_empty, re_body_doc, bk,
                              Py_None};
            bnode = make(L_NODE, a, 9);
        }
        Py_XDECREF(bk);
        Py_XDECREF(boff);
        Py_XDECREF(blen);
        if (bnode == NULL)
            goto fail;
        PyObject *ek = PyTuple_New(trailer ? 3 : 2);
        if (ek == NULL) {
            Py_DECREF(bnode);
            goto fail;
        }
        PyObject *hn = PyTuple_GET_ITEM(hdr_pair, 0);
        Py_INCREF(hn);
        PyTuple_SET_ITEM(ek, 0, hn);
        PyTuple_SET_ITEM(ek, 1, bnode);
        PyObject *st = NULL, *okdisp = NULL;
        if (trailer) {
            PyObject *src = PyObject_GetAttr(ctx, n_checksum_source);
            PyObject *key = NULL;
            if (src != NULL)
                key = src == Py_None ? PyLong_FromLong(-2) : (Py_INCREF(src), src);
            Py_XDECREF(src);
            PyObject *cdoc = key ? PyObject_CallOneArg(re_crc_doc_fn, key) : NULL;
            Py_XDECREF(key);
            char tmp[32];
            snprintf(tmp, sizeof tmp, "0x%08x ok", stored);
            okdisp = PyUnicode_FromString(tmp);
            st = PyLong_FromUnsignedLong(stored);
            PyObject *cl = (cdoc && okdisp && st) ? leaf_node(s_checksum, base + body_end, 4, st,
                                                             w_int4, okdisp, cdoc) : NULL;
            Py_XDECREF(cdoc);
            Py_XDECREF(okdisp);
            if (cl == NULL) {
                Py_XDECREF(st);
                Py_DECREF(ek);
                goto fail;
            }
            PyTuple_SET_ITEM(ek, 2, cl);
        }
        PyObject *off = PyLong_FromSsize_t(base + pos);
        PyObject *sz = PyLong_FromUnsignedLong(size);
        PyObject *enode = NULL;
        if (off && sz) {
            PyObject *a[9] = {s_event, off, sz, PyTuple_GET_ITEM(meta, 0),
                              s_empty, PyTuple_GET_ITEM(meta, 1), PyTuple_GET_ITEM(meta, 2), ek,
                              Py_None};
            enode = make(L_NODE, a, 9);
        }
        Py_DECREF(ek);
        PyObject *raw = enode ? PyBytes_FromStringAndSize((const char *)b + pos, size) : NULL;
        if (raw != NULL) {
            PyObject *ok = trailer ? Py_True : Py_None;
            PyObject *stv = trailer ? st : Py_None;
            PyObject *dv[10] = {off, PyTuple_GET_ITEM(hdr_pair, 1), ev, enode, ok, stv, stv,
                                Py_None, sz, raw};
            out = make(L_DEC, dv, 10);
        }
        Py_XDECREF(st);
        Py_XDECREF(off);
        Py_XDECREF(sz);
        Py_XDECREF(enode);
        Py_XDECREF(raw);
    }
    Py_DECREF(hdr_pair);
    Py_DECREF(ev);
    Py_DECREF(bkids);
    return out;
fail:
    Py_XDECREF(hdr_pair);
    Py_XDECREF(ev);
    Py_DECREF(bkids);
    if (PyErr_Occurred())
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
fast_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    HotEvent e;
    int go = hot_event(args, nargs, "fast_event(buf, pos, base, ctx)", &e);
    if (go <= 0) {
        if (go < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *bobj = e.bobj, *ctx = args[3];
    const unsigned char *b = e.b, *h = b + e.pos;
    Py_ssize_t pos = e.pos, base = e.base, body = e.body, body_end = e.body_end;
    uint32_t ts = u32le(h), sid = u32le(h + 5), size = e.size, log_pos = u32le(h + 13);
    uint32_t stored = e.stored, computed = e.stored;  /* verified equal when verify is on */
    unsigned flags = h[17] | h[18] << 8;
    int code = e.code, trailer = e.trailer;
    long long verify = e.verify;
    PyObject *ev = NULL;
    switch (code) {
    case 16: {  /* XID */
        if (body_end - body < 8)
            Py_RETURN_NONE;
        unsigned long long x = (unsigned long long)u32le(b + body) |
                               (unsigned long long)u32le(b + body + 4) << 32;
        PyObject *xv = PyLong_FromUnsignedLongLong(x);
        if (xv == NULL)
            return NULL;
        ev = make(L_XID, &xv, 1);
        Py_DECREF(xv);
        break;
    }
    case 160: {  /* ANNOTATE_ROWS */
        PyObject *q = PyUnicode_DecodeUTF8((const char *)b + body, body_end - body, "replace");
        if (q == NULL)
            return NULL;
        ev = make(L_ANN, &q, 1);
        Py_DECREF(q);
        break;
    }
    case 162: {  /* MariaDB GTID: the common shape (as gtid_events.decode_mariadb_gtid) */
        if (body_end - body < 13 || (b[body + 12] & gtid_slow_flags))
            Py_RETURN_NONE;
        for (Py_ssize_t i = body + 13; i < body_end; i++)
            if (b[i])
                Py_RETURN_NONE;
        unsigned long long seq = (unsigned long long)u32le(b + body) |
                                 (unsigned long long)u32le(b + body + 4) << 32;
        uint32_t dom = u32le(b + body + 8);
        char txt[64];
        snprintf(txt, sizeof txt, "%u-%u-%llu", dom, sid, seq);
        PyObject *v[5];
        v[0] = PyUnicode_FromString(txt);
        v[1] = PyLong_FromUnsignedLongLong(seq);
        v[2] = PyLong_FromUnsignedLong(dom);
        v[3] = PyLong_FromUnsignedLong(sid);
        v[4] = PyLong_FromLong(b[body + 12]);
        if (v[0] && v[1] && v[2] && v[3] && v[4])
            ev = make(L_GTID, v, 5);
        for (int i = 0; i < 5; i++)
            Py_XDECREF(v[i]);
        if (ev == NULL)
            return NULL;
        break;
    }
    case 19:
        ev = fast_table_map(ctx, b, body, body_end);
        break;
    default:
        ev = fast_rows(ctx, bobj, b, body, body_end, code);
    }
    if (ev == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    /* the header and the DecodedEvent */
    PyObject *hv[6] = {PyLong_FromUnsignedLong(ts), PyLong_FromLong(code),
                       PyLong_FromUnsignedLong(sid), PyLong_FromUnsignedLong(size),
                       PyLong_FromUnsignedLong(log_pos), PyLong_FromUnsignedLong(flags)};
    PyObject *hdr = NULL, *out = NULL;
    if (hv[0] && hv[1] && hv[2] && hv[3] && hv[4] && hv[5])
        hdr = make(L_HDR, hv, 6);
    for (int i = 0; i < 6; i++)
        Py_XDECREF(hv[i]);
    if (hdr != NULL) {
        PyObject *off = PyLong_FromSsize_t(base + pos);
        PyObject *ok = trailer && verify ? Py_True : Py_None;
        PyObject *st = trailer ? PyLong_FromUnsignedLong(stored) : (Py_INCREF(Py_None), Py_None);
        PyObject *cp = trailer && verify ? PyLong_FromUnsignedLong(computed)
                                         : (Py_INCREF(Py_None), Py_None);
        PyObject *sz = PyLong_FromUnsignedLong(size);
        if (off && st && cp && sz) {
            PyObject *dv[9] = {off, hdr, ev, Py_None, ok, st, cp, Py_None, sz};
            out = make(L_DEC, dv, 9);
        }
        Py_XDECREF(off);
        Py_XDECREF(st);
        Py_XDECREF(cp);
        Py_XDECREF(sz);
        Py_DECREF(hdr);
    }
    Py_DECREF(ev);
    return out;
}

/* ====================================================================== the stream loop
 * stream_run(data, offset, ctx, semi, seq, after_ack, out, decode) -> (used, seq, after_ack)
 *
 * Session._stream_direct's loop in C: the complete single-fragment binlog event packets at the
 * start of ``data`` (the server's bytes in the BINLOG_STREAM phase, no tree, nothing buffered;
 * ``offset`` is the stream offset of data[0]). For each: the semi-sync header when ``semi``
 * (True/False: negotiated or not), the sequence id check (a SequenceMismatch appended to ``out``
 * as Session._stream_event does, including MariaDB's reset to 1 after an ACK), the event decoded
 * (fast_event, else the Python ``decode(payload, ctx, start, base)``), and the same
 * PacketDecoded(BinlogPacket(...)) Session._stream_event appends, plus a DecodeError when the
 * event has an error. It stops, with nothing of that packet done, at anything else (a partial
 * or multi-fragment packet, EOF/ERR, a missing semi-sync magic, an unusual semi-sync flag,
 * before the FORMAT_DESCRIPTION): the Python path takes it from there. ``used``: bytes
 * consumed; ``seq``/``after_ack``: the session's new values (seq None: not learnt yet). */
static PyObject *st_server, *st_phase, *st_kind, *st_semi[2], *st_mismatch, *st_decode_error,
    *st_fde_seen, *st_error;
static int stream_ready;

/* configure_stream(PacketDecoded layout, BinlogPacket layout, Peer.SERVER,
 * Phase.BINLOG_STREAM, "binlog_event", (SemiSyncHeader(0), SemiSyncHeader(1)),
 * SequenceMismatch, DecodeError); a layout is (class, (offset, ...), (default|required, ...)) */
static PyObject *
configure_stream(PyObject *module, PyObject *args)
{
    PyObject *lp, *lb, *server, *phase, *kind, *semi, *mismatch, *derr, *required;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!OOUO!OOO:configure_stream", &PyTuple_Type, &lp,
                          &PyTuple_Type, &lb, &server, &phase, &kind, &PyTuple_Type, &semi,
                          &mismatch, &derr, &required))
        return NULL;
    if (PyTuple_GET_SIZE(semi) != 2) {
        PyErr_SetString(PyExc_ValueError, "configure_stream: two semi-sync headers");
        return NULL;
    }
    if (layout_from(lp, L_PKT, 13, required) < 0 || layout_from(lb, L_BPKT, 3, required) < 0)
        return NULL;
    PyObject **dst[] = {&st_server, &st_phase, &st_kind, &st_semi[0], &st_semi[1],
                        &st_mismatch, &st_decode_error};
    PyObject *src[] = {server, phase, kind, PyTuple_GET_ITEM(semi, 0), PyTuple_GET_ITEM(semi, 1),
                       mismatch, derr};
    for (int i = 0; i < 7; i++) {
        Py_INCREF(src[i]);
        Py_XSETREF(*dst[i], src[i]);
    }
    if (!st_fde_seen && (st_fde_seen = PyUnicode_InternFromString("fde_seen")) == NULL)
        return NULL;
    if (!st_error && (st_error = PyUnicode_InternFromString("error")) == NULL)
        return NULL;
    stream_ready = 1;
    Py_RETURN_NONE;
}

static int
append_call(PyObject *out, PyObject *cls, PyObject **vals, Py_ssize_t n)
{
    PyObject *o = PyObject_Vectorcall(cls, vals, (size_t)n, NULL);
    if (o == NULL)
        return -1;
    int r = PyList_Append(out, o);
    Py_DECREF(o);
    return r;
}

static PyObject *
stream_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 8 || !PyBytes_Check(args[0]) || !PyList_Check(args[6])) {
        PyErr_SetString(PyExc_TypeError, "stream_run(data: bytes, offset, ctx, semi, seq, "
                        "after_ack, out: list, decode)");
        return NULL;
    }
    if (!stream_ready || !events_ready) {
        PyErr_SetString(PyExc_RuntimeError, "stream_run: configure_stream() was not called");
        return NULL;
    }
    PyObject *data = args[0], *ctx = args[2], *out = args[6], *decode = args[7];
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    int semi = PyObject_IsTrue(args[3]);
    int after_ack = PyObject_IsTrue(args[5]);
    if (semi < 0 || after_ack < 0)
        return NULL;
    long seq = -1;  /* -1: not learnt (None) */
    if (args[4] != Py_None) {
        seq = PyLong_AsLong(args[4]);
        if (seq == -1 && PyErr_Occurred())
            return NULL;
    }
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(data);
    Py_ssize_t end = PyBytes_GET_SIZE(data), i = 0;
    while (i + 4 <= end) {
        Py_ssize_t n = d[i] | d[i + 1] << 8 | d[i + 2] << 16, j = i + 4 + n;
        if (n >= 0xFFFFFF || j > end || n == 0 || d[i + 4] != 0)
            break;
        PyObject *semi_hdr = Py_None;
        Py_ssize_t off = 1;
        if (semi) {
            if (n < 3 || d[i + 5] != 0xEF || d[i + 6] >= 2)
                break;  /* no magic (the Python path reports it), or an unusual flag */
            semi_hdr = st_semi[d[i + 6]];
            off = 3;
        }
        long long fde;
        if (attr_int(ctx, st_fde_seen, &fde) < 0)
            return NULL;
        if (!fde)
            break;
        long sq = d[i + 3], expected = seq;
        if (after_ack && sq == 1)
            expected = 1;
        after_ack = 0;
        Py_ssize_t at = offset + i;
        if (expected >= 0 && sq != expected) {
            PyObject *a = PyLong_FromSsize_t(at), *e = PyLong_FromLong(expected),
                     *g = PyLong_FromLong(sq);
            int r = -1;
            if (a && e && g) {
                PyObject *vals[4] = {st_server, a, e, g};
                r = append_call(out, st_mismatch, vals, 4);
            }
            Py_XDECREF(a);
            Py_XDECREF(e);
            Py_XDECREF(g);
            if (r < 0)
                return NULL;
        }
        seq = (sq + 1) & 0xFF;
        PyObject *payload = PyBytes_FromStringAndSize((const char *)d + i + 4, n);
        PyObject *po = PyLong_FromSsize_t(off), *bo = PyLong_FromSsize_t(at + 4);
        PyObject *ev = NULL, *err = NULL, *bp = NULL, *pkt = NULL, *ao = NULL, *so = NULL,
                 *no = NULL, *wo = NULL;
        int r = -1;
        if (payload && po && bo) {
            PyObject *fa[4] = {payload, po, bo, ctx};
            ev = fast_event(module, fa, 4);
            if (ev == Py_None) {
                PyObject *da[4] = {payload, ctx, po, bo};
                Py_DECREF(ev);
                ev = PyObject_Vectorcall(decode, da, 4, NULL);
            }
        }
        if (ev)
            err = PyObject_GetAttr(ev, st_error);
        if (err) {
            PyObject *bv[3] = {ev, semi_hdr, Py_None};
            bp = make(L_BPKT, bv, 3);
        }
        if (bp) {
            ao = PyLong_FromSsize_t(at);
            so = PyLong_FromLong(sq);
            no = PyLong_FromSsize_t(n);
            wo = PyLong_FromSsize_t(n + 4);
        }
        if (wo && ao && so && no) {
            PyObject *pv[13] = {st_server, ao, so, no, st_kind, bp, Py_None, st_phase, semi_hdr,
                                ev, err, wo, payload};
            pkt = make(L_PKT, pv, 13);
        }
        if (pkt && PyList_Append(out, pkt) == 0) {
            r = 0;
            if (err != Py_None) {
                PyObject *vals[4] = {st_server, ao, err, Py_None};
                r = append_call(out, st_decode_error, vals, 4);
            }
        }
        Py_XDECREF(payload);
        Py_XDECREF(po);
        Py_XDECREF(bo);
        Py_XDECREF(ev);
        Py_XDECREF(err);
        Py_XDECREF(bp);
        Py_XDECREF(pkt);
        Py_XDECREF(ao);
        Py_XDECREF(so);
        Py_XDECREF(no);
        Py_XDECREF(wo);
        if (r < 0)
            return NULL;
        i = j;
    }
    PyObject *seq_o = seq < 0 ? Py_NewRef(Py_None) : PyLong_FromLong(seq);
    if (seq_o == NULL)
        return NULL;
    return Py_BuildValue("(nNO)", i, seq_o, after_ack ? Py_True : Py_False);
}

/* ack_run(data, offset, out) -> used
 *
 * Session._ack_direct in C: the complete single-fragment semi-sync ACKs (0xEF, 8-byte
 * position, file name) at the start of ``data`` (the replica's bytes in the BINLOG_STREAM
 * phase, nothing buffered), each as the SequenceMismatch (sequence id not 0) and
 * PacketDecoded(SemiSyncAck(...)) the Python path appends. An ACK always decodes (the name is
 * UTF-8 with replacement), so this stops only at a packet that is no complete ACK. */
static PyObject *st_client, *st_ack_kind, *st_zero;
static int ack_ready;

/* configure_acks(SemiSyncAck layout, Peer.CLIENT, "semi_sync_ack", required) */
static PyObject *
configure_acks(PyObject *module, PyObject *args)
{
    PyObject *la, *client, *kind, *required;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!OUO:configure_acks", &PyTuple_Type, &la, &client, &kind,
                          &required))
        return NULL;
    if (layout_from(la, L_ACK, 2, required) < 0)
        return NULL;
    Py_INCREF(client);
    Py_XSETREF(st_client, client);
    Py_INCREF(kind);
    Py_XSETREF(st_ack_kind, kind);
    if (!st_zero && !(st_zero = PyLong_FromLong(0)))
        return NULL;
    ack_ready = 1;
    Py_RETURN_NONE;
}

static PyObject *
ack_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 3 || !PyBytes_Check(args[0]) || !PyList_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "ack_run(data: bytes, offset, out: list)");
        return NULL;
    }
    if (!ack_ready || !stream_ready) {
        PyErr_SetString(PyExc_RuntimeError, "ack_run: configure_acks() was not called");
        return NULL;
    }
    PyObject *out = args[2];
    Py_ssize_t offset = PyLong_AsSsize_t(args[1]);
    if (offset == -1 && PyErr_Occurred())
        return NULL;
    const unsigned char *d = (const unsigned char *)PyBytes_AS_STRING(args[0]);
    Py_ssize_t end = PyBytes_GET_SIZE(args[0]), i = 0;
    while (i + 4 <= end) {
        Py_ssize_t n = d[i] | d[i + 1] << 8 | d[i + 2] << 16, j = i + 4 + n;
        if (n >= 0xFFFFFF || j > end || n < 9 || d[i + 4] != 0xEF)
            break;
        const unsigned char *pl = d + i + 4;
        long sq = d[i + 3];
        Py_ssize_t at = offset + i;
        PyObject *ao = PyLong_FromSsize_t(at), *so = PyLong_FromLong(sq);
        PyObject *payload = PyBytes_FromStringAndSize((const char *)pl, n);
        unsigned long long pos = 0;
        for (int k = 8; k >= 1; k--)
            pos = pos << 8 | pl[k];
        PyObject *po = PyLong_FromUnsignedLongLong(pos);
        PyObject *name = PyUnicode_DecodeUTF8((const char *)pl + 9, n - 9, "replace");
        PyObject *no = PyLong_FromSsize_t(n), *wo = PyLong_FromSsize_t(n + 4);
        PyObject *ack = NULL, *pkt = NULL;
        int r = -1;
        if (ao && so && payload && po && name && no && wo) {
            r = 0;
            if (sq != 0) {
                PyObject *vals[4] = {st_client, ao, st_zero, so};
                r = append_call(out, st_mismatch, vals, 4);
            }
            if (r == 0) {
                PyObject *av[2] = {po, name};
                ack = make(L_ACK, av, 2);
            }
            if (r == 0 && ack) {
                PyObject *pv[13] = {st_client, ao, so, no, st_ack_kind, ack, Py_None, st_phase,
                                    Py_None, Py_None, Py_None, wo, payload};
                pkt = make(L_PKT, pv, 13);
            }
            r = pkt ? PyList_Append(out, pkt) : -1;
        }
        Py_XDECREF(ao);
        Py_XDECREF(so);
        Py_XDECREF(payload);
        Py_XDECREF(po);
        Py_XDECREF(name);
        Py_XDECREF(no);
        Py_XDECREF(wo);
        Py_XDECREF(ack);
        Py_XDECREF(pkt);
        if (r < 0)
            return NULL;
        i = j;
    }
    return PyLong_FromSsize_t(i);
}

/* ====================================================================== the fetch loop
 * fetch_run(evs, i, tracker, batch) -> (i, ack)
 *
 * The replica's fetcher loop (drivers.live.LiveReplica._stream) in C for the ordinary binlog
 * events of a read: from evs[i], each PacketDecoded carrying an undamaged, non-artificial event
 * of the hot types (GTID 162, ANNOTATE_ROWS 160, TABLE_MAP 19, WRITE/UPDATE/DELETE_ROWS v1/v2,
 * XID 16) moves the PositionTracker as PositionTracker.update does (its slots read and written
 * directly; at a commit commit_maria_gtid() records a MariaDB GTID of the one domain the set
 * holds, and the tracker's own _commit_gtid() does anything else) and gets its
 * LiveItem("packet", ev, None, "",
 * tracker.restart_point(), True) appended to ``batch``. The caller uses it only when nothing is
 * being skipped and no table filter is on. It stops AT anything else (evs[i] is then the
 * Python loop's) and right AFTER an event whose semi-sync header asks for an ACK (ack True:
 * the caller sends it for evs[i - 1]) or that fills the batch to 256 items. */
static PyObject *fr_empty, *fr_packet, *fr_gtid_set, *fr_commit_gtid, *fr_gtid, *fr_zero;
static int fetch_ready;

/* PositionTracker's slots, in its field order (configure_fetch checks the names) */
enum { T_LOG_FILE, T_NEXT_POS, T_TXN_START, T_TXN_EVENTS, T_IN_TXN, T_MARIA, T_MYSQL, T_PENDING,
       T_TEXT, T_STALE, T_COUNT };
static PyTypeObject *trk_type;
static Py_ssize_t trk_off[T_COUNT];


/* configure_fetch(LiveItem layout, RestartPoint layout, required, PositionTracker class,
 * its slot offsets in field order) (after configure_stream) */
static PyObject *
configure_fetch(PyObject *module, PyObject *args)
{
    PyObject *li, *rp, *required, *tcls, *toffs;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!OO!O!:configure_fetch", &PyTuple_Type, &li, &PyTuple_Type,
                          &rp, &required, &PyType_Type, &tcls, &PyTuple_Type, &toffs))
        return NULL;
    if (layout_from(li, L_ITEM, 6, required) < 0 || layout_from(rp, L_RP, 4, required) < 0)
        return NULL;
    if (PyTuple_GET_SIZE(toffs) != T_COUNT) {
        PyErr_SetString(PyExc_ValueError, "configure_fetch: PositionTracker has other fields");
        return NULL;
    }
    for (int k = 0; k < T_COUNT; k++) {
        trk_off[k] = PyLong_AsSsize_t(PyTuple_GET_ITEM(toffs, k));
        if (trk_off[k] < (Py_ssize_t)sizeof(PyObject) ||
            trk_off[k] + (Py_ssize_t)sizeof(PyObject *) > ((PyTypeObject *)tcls)->tp_basicsize) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "configure_fetch: bad slot offset");
            return NULL;
        }
    }
    Py_INCREF(tcls);
    Py_XSETREF(trk_type, (PyTypeObject *)tcls);
    if (fr_zero == NULL && (fr_zero = PyLong_FromLong(0)) == NULL)
        return NULL;
    struct { PyObject **dst; const char *name; } names[] = {
        {&fr_empty, ""}, {&fr_packet, "packet"}, {&fr_gtid_set, "gtid_set"},
        {&fr_commit_gtid, "_commit_gtid"}, {&fr_gtid, "gtid"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (*names[k].dst == NULL &&
            (*names[k].dst = PyUnicode_InternFromString(names[k].name)) == NULL)
            return NULL;
    }
    fetch_ready = 1;
    Py_RETURN_NONE;
}

/* getattr(o, name, None) without raising AttributeError: 1 found, 0 absent, -1 error */
static inline int
lookup_attr(PyObject *o, PyObject *name, PyObject **out)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(o, name, out);
#else
    return _PyObject_LookupAttr(o, name, out);
#endif
}

static inline PyObject *
slot(PyObject *o, int which, int k)
{
    return *(PyObject **)((char *)o + layouts[which].off[k]);
}

/* the tracker's slot k (borrowed; NULL when unset) and setting it (steals v) */
#define TRK(t, k) (*(PyObject **)((char *)(t) + trk_off[k]))

static inline void
trk_set(PyObject *t, int k, PyObject *v)
{
    PyObject *old = TRK(t, k);
    TRK(t, k) = v;
    Py_XDECREF(old);
}

/* an int value into slot k: 0, or -1 with an error set */
static inline int
trk_set_int(PyObject *t, int k, long long v)
{
    PyObject *o = PyLong_FromLongLong(v);
    if (o == NULL)
        return -1;
    trk_set(t, k, o);
    return 0;
}

/* ASCII digits [p, q) -> *v (at most 18 of them): 1, else 0 */
static int
small_digits(const char *p, const char *q, long long *v)
{
    if (q <= p || q - p > 18)
        return 0;
    long long x = 0;
    for (; p < q; p++) {
        if (*p < '0' || *p > '9')
            return 0;
        x = x * 10 + (*p - '0');
    }
    *v = x;
    return 1;
}

/* PositionTracker._commit_gtid for a MariaDB "domain-server-seq" GTID when the executed set is
 * that one domain (or empty) and there is no MySQL set: maria_gtid[d] = (s, n) and the cached
 * gtid_set text made fresh, as _format_gtid would write it. 1 done, 0 not this case (the
 * caller calls the Python method), -1 error */
static int
commit_maria_gtid(PyObject *t)
{
    PyObject *g = TRK(t, T_PENDING), *maria = TRK(t, T_MARIA), *mysql = TRK(t, T_MYSQL);
    if (g == NULL || maria == NULL || mysql == NULL || !PyUnicode_CheckExact(g) ||
        !PyUnicode_IS_ASCII(g) || !PyDict_CheckExact(maria) || !PyDict_CheckExact(mysql) ||
        PyDict_GET_SIZE(mysql) != 0 || PyDict_GET_SIZE(maria) > 1)
        return 0;
    const char *p = (const char *)PyUnicode_DATA(g), *end = p + PyUnicode_GET_LENGTH(g);
    const char *a = memchr(p, '-', (size_t)(end - p));
    const char *b = a ? memchr(a + 1, '-', (size_t)(end - a - 1)) : NULL;
    long long d, sv, n;
    if (b == NULL || !small_digits(p, a, &d) || !small_digits(a + 1, b, &sv) ||
        !small_digits(b + 1, end, &n))
        return 0;
    PyObject *key = PyLong_FromLongLong(d);
    if (key == NULL)
        return -1;
    if (PyDict_GET_SIZE(maria) == 1) {
        int has = PyDict_Contains(maria, key);
        if (has <= 0) { /* a second domain (or an error): the Python code */
            Py_DECREF(key);
            return has;
        }
    }
    PyObject *val = Py_BuildValue("(LL)", sv, n);
    char text[64];
    int k = snprintf(text, sizeof text, "%lld-%lld-%lld", d, sv, n);
    PyObject *txt = val ? PyUnicode_FromStringAndSize(text, k) : NULL;
    int r = txt ? PyDict_SetItem(maria, key, val) : -1;
    Py_DECREF(key);
    Py_XDECREF(val);
    if (r < 0) {
        Py_XDECREF(txt);
        return -1;
    }
    trk_set(t, T_PENDING, Py_NewRef(Py_None));
    trk_set(t, T_TEXT, txt);
    trk_set(t, T_STALE, Py_NewRef(Py_False));
    return 1;
}

static PyObject *
fetch_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    if (nargs != 4 || !PyList_Check(args[0]) || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "fetch_run(evs: list, i, tracker, batch: list)");
        return NULL;
    }
    if (!fetch_ready || !stream_ready || !events_ready) {
        PyErr_SetString(PyExc_RuntimeError, "fetch_run: configure_fetch() was not called");
        return NULL;
    }
    PyObject *evs = args[0], *tracker = args[2], *batch = args[3];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    int ack = 0;
    if (Py_TYPE(tracker) != trk_type)
        goto stop; /* not the PositionTracker configured: the Python loop */
    for (int k = 0; k < T_COUNT; k++) {
        if (TRK(tracker, k) == NULL)
            goto stop; /* a slot never set: let Python raise its AttributeError */
    }
    while (i < PyList_GET_SIZE(evs)) {
        PyObject *ev = PyList_GET_ITEM(evs, i);
        if (Py_TYPE(ev) != layouts[L_PKT].type)
            break;
        PyObject *bev = slot(ev, L_PKT, 9), *semi = slot(ev, L_PKT, 8);
        if (bev == NULL || Py_TYPE(bev) != layouts[L_DEC].type || semi == NULL)
            break;
        PyObject *h = slot(bev, L_DEC, 1), *body = slot(bev, L_DEC, 2),
                 *err = slot(bev, L_DEC, 7);
        if (h == NULL || Py_TYPE(h) != layouts[L_HDR].type || err != Py_None || body == NULL)
            break;
        PyObject *o_code = slot(h, L_HDR, 1), *o_size = slot(h, L_HDR, 3),
                 *o_pos = slot(h, L_HDR, 4), *o_flags = slot(h, L_HDR, 5);
        if (!o_code || !o_size || !o_pos || !o_flags || !PyLong_CheckExact(o_code) ||
            !PyLong_CheckExact(o_size) || !PyLong_CheckExact(o_pos) ||
            !PyLong_CheckExact(o_flags))
            break;
        long code = PyLong_AsLong(o_code), flags = PyLong_AsLong(o_flags);
        long long log_pos = PyLong_AsLongLong(o_pos), size = PyLong_AsLongLong(o_size);
        if (PyErr_Occurred())
            return NULL;
        switch (code) {
        case 16: case 19: case 23: case 24: case 25: case 30: case 31: case 32: case 160:
        case 162:
            break;
        default:
            goto stop;
        }
        if ((flags & 0x20) || log_pos == 0)
            break;  /* the dump's artificial events: Python */
        int is_ack = 0;
        if (semi != Py_None) {
            if (semi == st_semi[1]) {
                is_ack = 1;
            } else if (semi != st_semi[0]) {
                break;  /* another flag value: Python */
            }
        }
        /* PositionTracker.update, on its slots */
        if (code == 162) {
            PyObject *g;
            int found = lookup_attr(body, fr_gtid, &g);
            if (found < 0)
                return NULL;
            if (trk_set_int(tracker, T_TXN_START, log_pos - size) < 0) {
                Py_XDECREF(g);
                return NULL;
            }
            trk_set(tracker, T_IN_TXN, Py_NewRef(Py_True));
            trk_set(tracker, T_TXN_EVENTS, Py_NewRef(fr_zero));
            trk_set(tracker, T_PENDING, found && PyUnicode_Check(g) ? g : Py_NewRef(Py_None));
            if (found && !PyUnicode_Check(g))
                Py_DECREF(g);
        }
        trk_set(tracker, T_NEXT_POS, Py_NewRef(o_pos));
        int in_txn = PyObject_IsTrue(TRK(tracker, T_IN_TXN));
        if (in_txn < 0)
            return NULL;
        if (in_txn) {
            long long events = PyLong_AsLongLong(TRK(tracker, T_TXN_EVENTS));
            if ((events == -1 && PyErr_Occurred()) ||
                trk_set_int(tracker, T_TXN_EVENTS, events + 1) < 0)
                return NULL;
            if (code == 16) {
                trk_set(tracker, T_IN_TXN, Py_NewRef(Py_False));
                trk_set(tracker, T_TXN_EVENTS, Py_NewRef(fr_zero));
                int done = commit_maria_gtid(tracker);
                if (done < 0)
                    return NULL;
                if (!done) {
                    PyObject *r = PyObject_CallMethodNoArgs(tracker, fr_commit_gtid);
                    if (r == NULL)
                        return NULL;
                    Py_DECREF(r);
                }
                in_txn = 0;
            }
        }
        /* PositionTracker.restart_point */
        PyObject *start = TRK(tracker, T_TXN_START);
        PyObject *gs = TRK(tracker, T_STALE) == Py_False ? Py_NewRef(TRK(tracker, T_TEXT))
                                                        : PyObject_GetAttr(tracker, fr_gtid_set);
        PyObject *rp = NULL, *item = NULL;
        if (gs) {
            PyObject *rv[4] = {TRK(tracker, T_LOG_FILE), TRK(tracker, T_NEXT_POS), fr_zero, gs};
            if (in_txn && start != Py_None) {
                rv[1] = start;
                rv[2] = TRK(tracker, T_TXN_EVENTS);
            }
            rp = make(L_RP, rv, 4);
        }
        if (rp) {
            PyObject *iv[6] = {fr_packet, ev, Py_None, fr_empty, rp, Py_True};
            item = make(L_ITEM, iv, 6);
        }
        int r = item ? PyList_Append(batch, item) : -1;
        Py_XDECREF(gs);
        Py_XDECREF(rp);
        Py_XDECREF(item);
        if (r < 0)
            return NULL;
        i++;
        if (is_ack) {
            ack = 1;
            break;
        }
        if (PyList_GET_SIZE(batch) >= 256)
            break;
    }
stop:
    return Py_BuildValue("(nO)", i, ack ? Py_True : Py_False);
}

static PyMethodDef module_methods[] = {
    {"count_rows", count_rows, METH_VARARGS,
     "count_rows(data, kind, reader_b, reader_a, start=0, end=len(data)) -> number of rows"},
    {"decode_rows", decode_rows, METH_VARARGS,
     "decode_rows(data, kind, reader_b, reader_a) -> list of {'before', 'after'} dicts"},
    {"configure_events", configure_events, METH_VARARGS,
     "configure_events(layouts, list_marker, kinds, gtid_slow_flags): the event classes"},
    {"configure_record_event", configure_record_event, METH_VARARGS,
     "configure_record_event(...): the docs and displays of the recorded hot events"},
    {"record_event", (PyCFunction)(void (*)(void))record_event, METH_FASTCALL,
     "record_event(buf, pos, base, ctx) -> DecodedEvent with its tree, or None"},
    {"make_event", (PyCFunction)(void (*)(void))make_event, METH_FASTCALL,
     "make_event(offset, header, body, node, ok, stored, computed, error, size, raw)"},
    {"configure_header", configure_header, METH_VARARGS,
     "configure_header(docs, type displays, flags displays)"},
    {"record_header", (PyCFunction)(void (*)(void))record_header, METH_FASTCALL,
     "record_header(buf, pos, base) -> (header Node, EventHeader) or None"},
    {"configure_record", configure_record, METH_VARARGS,
     "configure_record(display_value, null_bitmap_doc)"},
    {"record_image", (PyCFunction)(void (*)(void))record_image, METH_FASTCALL,
     "record_image(reader, info, buf, pos, end, base, name, doc) -> (row, Node, pos)"},
    {"record_rows", (PyCFunction)(void (*)(void))record_rows, METH_FASTCALL,
     "record_rows(kind, rb, ib, ra, ia, buf, pos, end, base, names) -> (rows, nodes, pos)"},
    {"shift_nodes", shift_nodes, METH_VARARGS, "shift_nodes(nodes, delta) -> shifted copies"},
    {"configure_node", configure_node, METH_VARARGS, "configure_node(Node, offsets)"},
    {"make_node", (PyCFunction)(void (*)(void))make_node, METH_FASTCALL,
     "make_node(name, offset, length, value, wire, display, doc, children, error) -> Node"},
    {"slot_offset", slot_offset, METH_O, "slot_offset(member_descriptor) -> byte offset"},
    {"configure_stream", configure_stream, METH_VARARGS,
     "configure_stream(packet layout, binlog packet layout, server, phase, kind, semi "
     "headers, SequenceMismatch, DecodeError, required)"},
    {"stream_run", (PyCFunction)(void (*)(void))stream_run, METH_FASTCALL,
     "stream_run(data, offset, ctx, semi, seq, after_ack, out, decode) -> (used, seq, "
     "after_ack)"},
    {"configure_acks", configure_acks, METH_VARARGS,
     "configure_acks(SemiSyncAck layout, Peer.CLIENT, kind, required)"},
    {"ack_run", (PyCFunction)(void (*)(void))ack_run, METH_FASTCALL,
     "ack_run(data, offset, out) -> bytes used"},
    {"configure_fetch", configure_fetch, METH_VARARGS,
     "configure_fetch(LiveItem layout, RestartPoint layout, required)"},
    {"fetch_run", (PyCFunction)(void (*)(void))fetch_run, METH_FASTCALL,
     "fetch_run(evs, i, tracker, batch) -> (i, ack)"},
    {"fast_event", (PyCFunction)(void (*)(void))fast_event, METH_FASTCALL,
     "fast_event(buf, pos, base, ctx) -> DecodedEvent, or None for the Python path"},
    {"crc32", crc32_py, METH_VARARGS, "crc32(bytes, start, end) -> CRC-32 (as zlib.crc32)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef crows_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "binlogscope._native._kernel",
    .m_doc = "C row-image reader of binlogscope's fast decode path (an accelerator of _rowcode)",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__kernel(void)
{
    if (PyType_Ready(&ImageReaderType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&crows_module);
    if (m == NULL)
        return NULL;
    crc_init();
    empty_tuple = PyTuple_New(0);
    if (empty_tuple == NULL)
        return NULL;
    if (intern_names() < 0)
        return NULL;
    s_before = PyUnicode_InternFromString("before");
    s_after = PyUnicode_InternFromString("after");
    if (s_before == NULL || s_after == NULL)
        return NULL;
    Py_INCREF(&ImageReaderType);
    if (PyModule_AddObject(m, "ImageReader", (PyObject *)&ImageReaderType) < 0)
        return NULL;
    return m;
}
