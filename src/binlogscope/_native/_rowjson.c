/*
 * binlogscope._native._kernel.rows_json: the row images of a rows event -> the JSON text of
 * its ``rows`` value, from the same column plans the reader (_kernel.c) interprets.
 *
 * The text is what render/json_out.py's serializer (orjson, bytes as hex) writes for the list
 * ``decode_rows`` returns - ``[{"before":{...}|null,"after":{...}|null},...]`` - so the event's
 * line embeds it with orjson.Fragment and render/shapes.py stays the one definition of the
 * event's keys. Values are the reader's values (kernel_scalar's C values for integers, floats,
 * text and bytes - the same reader kernel_read_value uses - else kernel_read_value's Python
 * value), written as orjson writes them:
 * integers in decimal, floats in orjson's shortest form (NaN and infinities null), text with
 * orjson's escapes, bytes as lowercase hex, None as null.
 *
 * Anything this writer does not know declines: rows_json returns None and the caller reads the
 * rows into Python objects as before (text that is not valid UTF-8, which the serializer
 * repairs; a value of another type, such as a VECTOR's list or an integer beyond 64 bits; a
 * label JSON cannot hold). A short or damaged image raises ValueError, as decode_rows does.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "_kernel.h"

#define DECLINE 1


#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static inline uint64_t
load8(const unsigned char *s)
{
    uint64_t x;
    memcpy(&x, s, 8);
    return x;
}

/* non-zero when one of the 8 bytes of x needs a JSON escape (below 0x20, '"' or '\\') */
static inline uint64_t
needs_escape8(uint64_t x)
{
    uint64_t q = x ^ (ONES * '"'), bs = x ^ (ONES * '\\');
    return (((x - ONES * 0x20) & ~x) | ((q - ONES) & ~q) | ((bs - ONES) & ~bs)) & HIGHS;
}

/* 1: s[0:n] is UTF-8 as Python's strict decoder takes it (no overlong forms, no surrogates,
 * nothing beyond U+10FFFF) */
int
kernel_valid_utf8(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n && !(load8(s + i) & HIGHS)) {  /* 8 ASCII bytes */
            i += 8;
            continue;
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            if (i + 1 >= n || (s[i + 1] & 0xC0) != 0x80)
                return 0;
            i += 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            if (i + 2 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80)
                return 0;
            if (c == 0xE0 && s[i + 1] < 0xA0)
                return 0;
            if (c == 0xED && s[i + 1] > 0x9F)
                return 0;
            i += 3;
        } else if (c >= 0xF0 && c <= 0xF4) {
            if (i + 3 >= n || (s[i + 1] & 0xC0) != 0x80 || (s[i + 2] & 0xC0) != 0x80 ||
                (s[i + 3] & 0xC0) != 0x80)
                return 0;
            if (c == 0xF0 && s[i + 1] < 0x90)
                return 0;
            if (c == 0xF4 && s[i + 1] > 0x8F)
                return 0;
            i += 4;
        } else {
            return 0;
        }
    }
    return 1;
}

/* valid UTF-8 as a JSON string with orjson's escapes (", \, and \b \t \n \f \r or \u00xx below
 * 0x20; nothing else) */
int
kernel_put_str(JsonOut *o, const char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (grow(o, n + 2) < 0)
        return -1;
    o->buf[o->len++] = '"';
    Py_ssize_t run = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        while (i + 8 <= n && !needs_escape8(load8((const unsigned char *)s + i)))
            i += 8;  /* 8 bytes written as they are */
        if (i >= n)
            break;
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\')
            continue;
        if (put(o, s + run, i - run) < 0)
            return -1;
        run = i + 1;
        char esc[6] = {'\\', 0, 0, 0, 0, 0};
        Py_ssize_t k = 2;
        switch (c) {
        case '"': esc[1] = '"'; break;
        case '\\': esc[1] = '\\'; break;
        case '\b': esc[1] = 'b'; break;
        case '\t': esc[1] = 't'; break;
        case '\n': esc[1] = 'n'; break;
        case '\f': esc[1] = 'f'; break;
        case '\r': esc[1] = 'r'; break;
        default:
            esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            k = 6;
        }
        if (put(o, esc, k) < 0)
            return -1;
    }
    if (put(o, s + run, n - run) < 0 || grow(o, 1) < 0)
        return -1;
    o->buf[o->len++] = '"';
    return 0;
}

static int
put_hex(JsonOut *o, const unsigned char *s, Py_ssize_t n, Py_ssize_t zeros)
{
    static const char hex[] = "0123456789abcdef";
    if (grow(o, 2 * (n + zeros) + 2) < 0)
        return -1;
    char *w = o->buf + o->len;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        *w++ = hex[s[i] >> 4];
        *w++ = hex[s[i] & 15];
    }
    memset(w, '0', (size_t)(2 * zeros));
    w += 2 * zeros;
    *w++ = '"';
    o->len = w - o->buf;
    return 0;
}

int
kernel_put_ll(JsonOut *o, long long v)
{
    char tmp[24];
    int k = 0;
    unsigned long long u = (unsigned long long)v;
    if (v < 0) {
        tmp[k++] = '-';
        u = 0 - u;
    }
    k += put_uint(tmp + k, u, 1);
    return put(o, tmp, k);
}

int
kernel_put_ull(JsonOut *o, unsigned long long v)
{
    char tmp[24];
    return put(o, tmp, put_uint(tmp, v, 1));
}

/* a float as orjson writes it: null when not finite, else the shortest digits (repr's) laid
 * out as orjson lays them - repr's text, except an exponent of -5 written in full
 * (0.000015) and a negative exponent without its leading zero (1.5e-7) */
int
kernel_put_double(JsonOut *o, double d)
{
    if (!isfinite(d))
        return PUT_LIT(o, "null");
    char *r = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (r == NULL)
        return -1;
    char *e = strchr(r, 'e');
    int rc;
    if (e == NULL || e[1] == '+') {
        rc = put(o, r, (Py_ssize_t)strlen(r));
    } else {
        int exp = atoi(e + 1);
        char tmp[64];
        int k = 0;
        const char *m = r;
        if (*m == '-')
            tmp[k++] = *m++;
        if (exp == -5) {
            memcpy(tmp + k, "0.0000", 6);
            k += 6;
            for (; m < e; m++)
                if (*m != '.')
                    tmp[k++] = *m;
        } else {
            memcpy(tmp + k, m, (size_t)(e - m));
            k += (int)(e - m);
            k += snprintf(tmp + k, sizeof tmp - (size_t)k, "e%d", exp);
        }
        rc = put(o, tmp, k);
    }
    PyMem_Free(r);
    return rc;
}

/* a Python value as orjson writes it; DECLINE for a type this writer leaves to Python */
static int
put_object(JsonOut *o, PyObject *v)
{
    if (v == Py_None)
        return PUT_LIT(o, "null");
    if (PyUnicode_CheckExact(v)) {
        Py_ssize_t n;
        const char *s = PyUnicode_AsUTF8AndSize(v, &n);
        if (s == NULL) {  /* surrogates (undecodable bytes): the serializer repairs them */
            PyErr_Clear();
            return DECLINE;
        }
        return kernel_put_str(o, s, n);
    }
    if (PyLong_CheckExact(v)) {
        int overflow;
        long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
        if (overflow == 0) {
            if (x == -1 && PyErr_Occurred())
                return -1;
            return kernel_put_ll(o, x);
        }
        if (overflow > 0) {
            unsigned long long u = PyLong_AsUnsignedLongLong(v);
            if (!(u == (unsigned long long)-1 && PyErr_Occurred()))
                return kernel_put_ull(o, u);
            PyErr_Clear();
        }
        return DECLINE;  /* beyond 64 bits: the serializer's fallback writes it */
    }
    if (PyFloat_CheckExact(v))
        return kernel_put_double(o, PyFloat_AS_DOUBLE(v));
    if (PyBytes_CheckExact(v))
        return put_hex(o, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), 0);
    return DECLINE;
}

/* one non-NULL column at *pp, written; DECLINE, or -1 with an exception. The scalar kinds are
 * read by the kernel's one scalar reader (kernel_scalar) and written from the C value; the
 * others are the reader's Python value, written as orjson writes it */
static int
put_value(JsonOut *o, const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
          Py_ssize_t *pp)
{
    Py_ssize_t p = *pp;
    Scalar v = {0};
    switch (kernel_scalar(c, b, n, pp, &v)) {
    case -1:
        return -1;
    case S_INT:
        return kernel_put_ll(o, v.i);
    case S_UINT:
        return kernel_put_ull(o, v.u);
    case S_DOUBLE:
        return kernel_put_double(o, v.d);
    case S_BYTES:
        return put_hex(o, v.s, v.len, v.pad);
    case S_TEXT:
        if (c->utf8)
            return kernel_valid_utf8(v.s, v.len) ? kernel_put_str(o, (const char *)v.s, v.len) : DECLINE;
        *pp = p;  /* another codec: the reader's str */
        break;
    default:
        break;
    }
    PyObject *obj = kernel_read_value(c, bobj, b, n, pp);
    if (obj == NULL)
        return -1;
    int rc = put_object(o, obj);
    Py_DECREF(obj);
    return rc;
}

/* the reader's labels as '"label":' texts, made once; 0, DECLINE or -1 */
static int
json_keys(ImageReader *r)
{
    if (r->json_keys != NULL)
        return r->json_keys == Py_None ? DECLINE : 0;
    PyObject *keys = PyTuple_New(r->n);
    if (keys == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < r->n; i++) {
        Py_ssize_t len;
        const char *s = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(r->labels, i), &len);
        JsonOut o = {NULL, 0, 0};
        int rc = s == NULL ? DECLINE : kernel_put_str(&o, s, len);
        if (s == NULL)
            PyErr_Clear();
        if (rc == 0)
            rc = PUT_LIT(&o, ":");
        PyObject *k = rc == 0 ? PyBytes_FromStringAndSize(o.buf, o.len) : NULL;
        PyMem_Free(o.buf);
        if (k == NULL) {
            Py_DECREF(keys);
            if (rc == DECLINE) {
                Py_INCREF(Py_None);
                r->json_keys = Py_None;
            }
            return rc == DECLINE ? DECLINE : -1;
        }
        PyTuple_SET_ITEM(keys, i, k);
    }
    r->json_keys = keys;
    return 0;
}

/* one image at *pp as a JSON object; 0, DECLINE or -1 */
static int
put_image(JsonOut *o, ImageReader *r, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
          Py_ssize_t *pp)
{
    Py_ssize_t p = *pp, ncols = r->n, nb = (ncols + 7) / 8;
    if (n - p < nb)
        return kernel_past_end();
    const unsigned char *nulls = b + p;
    p += nb;
    if (PUT_LIT(o, "{") < 0)
        return -1;
    for (Py_ssize_t i = 0; i < ncols; i++) {
        PyObject *key = PyTuple_GET_ITEM(r->json_keys, i);
        if ((i && PUT_LIT(o, ",") < 0) ||
            put(o, PyBytes_AS_STRING(key), PyBytes_GET_SIZE(key)) < 0)
            return -1;
        if (nulls[i >> 3] & (1 << (i & 7))) {
            if (PUT_LIT(o, "null") < 0)
                return -1;
            continue;
        }
        int rc = put_value(o, &r->cols[i], bobj, b, n, &p);
        if (rc)
            return rc;
    }
    *pp = p;
    return PUT_LIT(o, "}");
}

int
kernel_put_rows(JsonOut *o, PyObject *bobj, Py_ssize_t start, Py_ssize_t end, int kind, ImageReader *rb,
         ImageReader *ra)
{
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    int rc = json_keys(rb);
    if (rc == 0 && kind == 1)
        rc = json_keys(ra);
    if (rc)
        return rc;
    Py_ssize_t p = start;
    if (PUT_LIT(o, "[") < 0)
        return -1;
    while (p < end) {
        Py_ssize_t start_p = p;
        if (p != start && PUT_LIT(o, ",") < 0)
            return -1;
        if (PUT_LIT(o, "{\"before\":") < 0)
            return -1;
        if (kind == 0) {
            if (PUT_LIT(o, "null,\"after\":") < 0)
                return -1;
            if ((rc = put_image(o, rb, bobj, b, end, &p)) != 0)
                return rc;
        } else {
            if ((rc = put_image(o, rb, bobj, b, end, &p)) != 0)
                return rc;
            if (PUT_LIT(o, ",\"after\":") < 0)
                return -1;
            if (kind == 1) {
                if ((rc = put_image(o, ra, bobj, b, end, &p)) != 0)
                    return rc;
            } else if (PUT_LIT(o, "null") < 0) {
                return -1;
            }
        }
        if (PUT_LIT(o, "}") < 0)
            return -1;
        if (p == start_p)
            return kernel_no_progress();
    }
    return PUT_LIT(o, "]");
}

PyObject *
kernel_rows_json(PyObject *module, PyObject *args)
{
    PyObject *bobj, *rb, *ra;
    int kind;
    Py_ssize_t start, end;
    (void)module;
    if (kernel_rows_args(args, "O!iO!O|nn:rows_json", &bobj, &kind, &rb, &ra, &start,
                         &end) < 0)
        return NULL;
    JsonOut o = {NULL, 0, 0};
    if (grow(&o, 64 + 2 * (end - start)) < 0)
        return NULL;
    int rc = kernel_put_rows(&o, bobj, start, end, kind, (ImageReader *)rb, (ImageReader *)ra);
    PyObject *out = NULL;
    if (rc == 0) {
        out = PyBytes_FromStringAndSize(o.buf, o.len);
    } else if (rc == DECLINE) {
        Py_INCREF(Py_None);
        out = Py_None;
    }
    PyMem_Free(o.buf);
    return out;
}
