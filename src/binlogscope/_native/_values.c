/*
 * The native kernel's column readers: one reader per column kind of the plans
 * (wire/binlog/_rowcode.py, whose Python readers stay the definition).
 *
 * kernel_scalar (_kernel.h, inline: it is on every value's path) reads the kinds whose value is
 * a C integer, float or byte/text span (the integers, YEAR, BIT, ENUM/SET without names,
 * FLOAT/DOUBLE, the length-prefixed strings and BINARY): the one place their bytes are read,
 * by the value reader below, the row walk (_kernel.c) and the JSON writer (_rowjson.c) alike.
 * kernel_read_value turns a column
 * into its Python value (the scalar kinds from kernel_scalar, the others - temporal texts,
 * DECIMAL, ENUM/SET names, the Python readers - here). Any read past the end raises ValueError.
 */
#include "_kernel.h"

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
    Scalar sv = {0};
    switch (kernel_scalar(c, b, n, pp, &sv)) {
    case -1:
        return NULL;
    case S_INT:
        return PyLong_FromLongLong(sv.i);
    case S_UINT:
        return PyLong_FromUnsignedLongLong(sv.u);
    case S_DOUBLE:
        return PyFloat_FromDouble(sv.d);
    case S_BYTES: {
        PyObject *v = PyBytes_FromStringAndSize(NULL, sv.len + sv.pad);
        if (v != NULL) {
            memcpy(PyBytes_AS_STRING(v), sv.s, (size_t)sv.len);
            memset(PyBytes_AS_STRING(v) + sv.len, 0, (size_t)sv.pad);
        }
        return v;
    }
    case S_TEXT:
        if (c->utf8)
            return PyUnicode_DecodeUTF8((const char *)sv.s, sv.len, "surrogateescape");
        return PyUnicode_Decode((const char *)sv.s, sv.len, c->codec, "surrogateescape");
    default:  /* S_NONE: a kind read into a Python object, below */
        break;
    }
    Py_ssize_t p = *pp;
    const unsigned char *s = b + p;
    Py_ssize_t left = n - p;
    switch (c->kind) {
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
