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
 * Any read past the end raises ValueError (the caller then runs the per-field Python path,
 * which names the exact offset).
 */
#include "_kernel.h"

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

int kernel_past_end(void) { return past_end(); }
int kernel_no_progress(void) { return no_progress(); }

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

/* a Python column reader rd(b, p) -> (value, p) at *pp; new reference, *pp advanced */
static PyObject *
call_reader(PyObject *rd, PyObject *bobj, Py_ssize_t n, Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    PyObject *pos = PyLong_FromSsize_t(p);
    if (pos == NULL)
        return NULL;
    PyObject *res = PyObject_CallFunctionObjArgs(rd, bobj, pos, NULL);
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
        past_end();
        return NULL;
    }
    PyObject *v = PyTuple_GET_ITEM(res, 0);
    Py_INCREF(v);
    Py_DECREF(res);
    *pp = np;
    return v;
}

/* "YYYY-MM-DD hh:mm:ss" of seconds since the epoch (UTC), as values_temporal._gmt */
static int
put_gmt(char *out, unsigned long long x)
{
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
    return k;
}

/* one non-NULL column at *pp; new reference to the value, *pp advanced */
PyObject *
kernel_read_value(const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n, Py_ssize_t *pp)
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
    case K_INT24: {
        if (left < 3) goto short_read;
        long v = (long)(s[0] | s[1] << 8 | s[2] << 16);
        if (!c->a && (v & 0x800000))
            v -= 0x1000000;
        *pp = p + 3;
        return PyLong_FromLong(v);
    }
    case K_YEAR:
        if (left < 1) goto short_read;
        *pp = p + 1;
        return PyLong_FromLong(s[0] ? 1900 + s[0] : 0);
    case K_DATE: { /* values_temporal._date_rd */
        if (left < 3) goto short_read;
        unsigned long v = (unsigned long)(s[0] | s[1] << 8 | s[2] << 16);
        char out[32];
        int k = put_uint(out, v >> 9, 4);
        out[k++] = '-';
        k += put_uint(out + k, (v >> 5) & 15, 2);
        out[k++] = '-';
        k += put_uint(out + k, v & 31, 2);
        *pp = p + 3;
        return ascii_str(out, k);
    }
    case K_UINT_BE:
        if (left < c->a) goto short_read;
        *pp = p + c->a;
        return PyLong_FromUnsignedLongLong(be_uint(s, (int)c->a));
    case K_UINT_LE:
        if (left < c->a) goto short_read;
        *pp = p + c->a;
        return PyLong_FromUnsignedLongLong(le_uint(s, (int)c->a));
    case K_ENUM: { /* values._string_reader's ENUM with member names */
        if (left < c->a) goto short_read;
        *pp = p + c->a;
        unsigned long long idx = le_uint(s, (int)c->a);
        if (idx == 0)
            return PyUnicode_FromStringAndSize("", 0);
        if (idx <= (unsigned long long)PyTuple_GET_SIZE(c->obj)) {
            PyObject *v = PyTuple_GET_ITEM(c->obj, (Py_ssize_t)idx - 1);
            Py_INCREF(v);
            return v;
        }
        return PyLong_FromUnsignedLongLong(idx);
    }
    case K_DECN: { /* values_numeric._decimal_reader's general reader */
        int size = (int)c->a, intg = (int)c->b, scale = (int)c->c;
        if (left < size) goto short_read;
        static const int dig2bytes[10] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
        unsigned char buf[64];
        memcpy(buf, s, (size_t)size);
        int neg = !(buf[0] & 0x80);
        buf[0] ^= 0x80;
        if (neg)
            for (int i = 0; i < size; i++)
                buf[i] ^= 0xFF;
        unsigned long long groups[16];
        int ng = 0, q = 0;
        if (intg % 9) {
            groups[ng++] = be_uint(buf, dig2bytes[intg % 9]);
            q = dig2bytes[intg % 9];
        }
        for (int i = 0; i < intg / 9; i++, q += 4) {
            groups[ng] = be_uint(buf + q, 4);
            if (ng && groups[ng] >= 1000000000ULL)
                return call_reader(c->obj, bobj, n, pp);  /* not a digit group: Python */
            ng++;
        }
        char out[192];
        int k = 0;
        if (neg)
            out[k++] = '-';
        int j = 0;
        while (j < ng && groups[j] == 0)
            j++;
        if (j == ng) {
            out[k++] = '0';
        } else {
            k += put_uint(out + k, groups[j], 1);
            for (j++; j < ng; j++)
                k += put_uint(out + k, groups[j], 9);
        }
        if (scale) {
            out[k++] = '.';
            for (int i = 0; i < scale / 9; i++, q += 4)
                k += put_uint(out + k, be_uint(buf + q, 4), 9);
            if (scale % 9)
                k += put_uint(out + k, be_uint(buf + q, dig2bytes[scale % 9]), scale % 9);
        }
        *pp = p + size;
        return ascii_str(out, k);
    }
    case K_BINARY: { /* values._string_reader's BINARY(n): padded with 0x00 to n */
        int w = (int)c->a;
        if (left < w) goto short_read;
        Py_ssize_t len = (Py_ssize_t)le_uint(s, w);
        if (len > left - w) goto short_read;
        *pp = p + w + len;
        Py_ssize_t full = len < c->b ? (Py_ssize_t)c->b : len;
        PyObject *v = PyBytes_FromStringAndSize(NULL, full);
        if (v == NULL)
            return NULL;
        memcpy(PyBytes_AS_STRING(v), s + w, (size_t)len);
        memset(PyBytes_AS_STRING(v) + len, 0, (size_t)(full - len));
        return v;
    }
    case K_TIME_OLD: { /* values_temporal.decode_time_old */
        if (left < 3) goto short_read;
        long v = (long)(s[0] | s[1] << 8 | s[2] << 16);
        if (v & 0x800000)
            v -= 0x1000000;
        char out[32];
        int k = 0;
        if (v < 0) {
            out[k++] = '-';
            v = -v;
        }
        k += put_uint(out + k, (unsigned long long)(v / 10000), 2);
        out[k++] = ':';
        k += put_uint(out + k, (unsigned long long)(v / 100 % 100), 2);
        out[k++] = ':';
        k += put_uint(out + k, (unsigned long long)(v % 100), 2);
        *pp = p + 3;
        return ascii_str(out, k);
    }
    case K_DATETIME_OLD: { /* values_temporal.decode_datetime_old */
        if (left < 8) goto short_read;
        unsigned long long v = le_uint(s, 8), d = v / 1000000, t = v % 1000000;
        char out[64];
        int k = put_uint(out, d / 10000, 4);
        out[k++] = '-';
        k += put_uint(out + k, d / 100 % 100, 2);
        out[k++] = '-';
        k += put_uint(out + k, d % 100, 2);
        out[k++] = ' ';
        k += put_uint(out + k, t / 10000, 2);
        out[k++] = ':';
        k += put_uint(out + k, t / 100 % 100, 2);
        out[k++] = ':';
        k += put_uint(out + k, t % 100, 2);
        *pp = p + 8;
        return ascii_str(out, k);
    }
    case K_TIMESTAMP_OLD: { /* values_temporal._timestamp_rd */
        if (left < 4) goto short_read;
        unsigned long long x = le_uint(s, 4);
        *pp = p + 4;
        if (x == 0)
            return PyUnicode_FromString("0000-00-00 00:00:00");
        char out[64];
        int k = put_gmt(out, x);
        return ascii_str(out, k);
    }
    case K_NULL:
        Py_RETURN_NONE;
    case K_PY:
        return call_reader(c->obj, bobj, n, pp);
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
        past_end();
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
            no_progress();
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
    case K_PREFIXED: case K_BINARY: {
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
    case K_SET: case K_DEC: case K_DECN: case K_UINT_BE: case K_UINT_LE: case K_ENUM:
        size = (Py_ssize_t)c->a;
        break;
    case K_YEAR:
        size = 1;
        break;
    case K_INT24: case K_DATE: case K_TIME_OLD:
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
        return past_end();
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
            no_progress();
            return NULL;
        }
        count++;
    }
    return PyLong_FromSsize_t(count);
}

static PyMethodDef module_methods[] = {
    {"count_rows", count_rows, METH_VARARGS,
     "count_rows(data, kind, reader_b, reader_a, start=0, end=len(data)) -> number of rows"},
    {"rows_json", kernel_rows_json, METH_VARARGS,
     "rows_json(data, kind, reader_b, reader_a, start=0, end=len(data)) -> JSON bytes or None"},
    {"decode_rows", decode_rows, METH_VARARGS,
     "decode_rows(data, kind, reader_b, reader_a) -> list of {'before', 'after'} dicts"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "binlogscope._native._kernel",
    .m_doc = "binlogscope's native kernel: row images to plain values (see binlogscope._native)",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__kernel(void)
{
    if (PyType_Ready(&ImageReaderType) < 0)
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
    /* binlogscope._native.PLAN_VERSION: the plan kinds and functions of this file */
    if (PyModule_AddIntConstant(m, "PLAN_VERSION", 3) < 0)
        return NULL;
    return m;
}
