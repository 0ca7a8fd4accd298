/*
 * The native kernel's shared declarations: the column kinds of the plans (keep in step with
 * wire/binlog/_rowcode.py), a column's parsed spec, the ImageReader, and the small helpers
 * the column readers (_values.c), the row walks (_kernel.c) and the JSON writer (_rowjson.c)
 * use.
 */
#ifndef BINLOGSCOPE_KERNEL_H
#define BINLOGSCOPE_KERNEL_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

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
    K_INT24,       /* a: 1 unsigned */
    K_YEAR,        /* 1 byte: 1900 + v, 0 for 0 */
    K_DATE,        /* 3 bytes: "YYYY-MM-DD" */
    K_UINT_BE,     /* a: size (1-8): a big-endian unsigned int (BIT) */
    K_UINT_LE,     /* a: size (1-8): a little-endian unsigned int (ENUM/SET without names) */
    K_ENUM,        /* a: size (1-8), obj: the member names (a tuple): 0 -> "", i -> names[i-1],
                    * else the index */
    K_DECN,        /* a: size, b: integer digits, c: fraction digits, obj: the Python reader
                    * (any DECIMAL; an integer group >= 10^9 after the first declines to it) */
    K_BINARY,      /* a: length prefix (1-2), b: the full length: bytes padded with 0x00 */
    K_TIME_OLD,    /* 3 bytes: signed HHMMSS */
    K_DATETIME_OLD,/* 8 bytes: YYYYMMDDhhmmss */
    K_TIMESTAMP_OLD, /* 4 bytes: seconds since the epoch, 0 -> zero text */
    K_NULL,        /* no bytes: None */
    K_LAST_KIND = K_NULL,
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
    PyObject *json_keys;  /* _rowjson.c: each label as the JSON text '"label":' (a tuple of
                           * bytes), made on first use; Py_None: a label JSON cannot hold */
    unsigned long long mask_last;
} ImageReader;


extern PyTypeObject ImageReaderType;

/* a ValueError "past the end" / "no progress"; return -1 */
int kernel_past_end(void);
int kernel_no_progress(void);
/* what kernel_scalar read (_values.c): a column whose value is a plain C value */
enum { S_NONE = 0, S_INT, S_UINT, S_DOUBLE, S_BYTES, S_TEXT };
typedef struct {
    long long i;              /* S_INT */
    unsigned long long u;     /* S_UINT */
    double d;                 /* S_DOUBLE */
    const unsigned char *s;   /* S_BYTES, S_TEXT (in the column's codec): len bytes at s, */
    Py_ssize_t len, pad;      /* then pad 0x00 bytes (BINARY(n)) */
} Scalar;

/* one non-NULL column at *pp passed over (_kernel.c: its value read and dropped only where its
 * size does not follow from the bytes); -1 with an exception */
int kernel_skip_value(const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
                      Py_ssize_t *pp);
/* one non-NULL column at *pp -> new reference, *pp advanced (NULL: an exception is set) */
PyObject *kernel_read_value(const Col *c, PyObject *bobj, const unsigned char *b, Py_ssize_t n,
                            Py_ssize_t *pp);
/* the (data, kind, reader_b, reader_a[, start[, end]]) arguments of the rows functions */
int kernel_rows_args(PyObject *args, const char *fmt, PyObject **bobj, int *kind, PyObject **rb,
                     PyObject **ra, Py_ssize_t *start, Py_ssize_t *end);
/* rows_json(data, kind, reader_b, reader_a, start, end) -> bytes or None (_rowjson.c) */
PyObject *kernel_rows_json(PyObject *module, PyObject *args);
/* image_buffers(refs, value_text, json_text) -> an export image column's Arrow buffers or
 * None (_arrow.c) */
PyObject *kernel_image_buffers(PyObject *module, PyObject *args);
/* where each image of data[start:end] starts (kernel.image_positions), NULL: an exception */
PyObject *kernel_image_positions(PyObject *bobj, int kind, PyObject *rb, PyObject *ra,
                                 Py_ssize_t start, Py_ssize_t end);
/* pk_buffers(rows, after_slot, before_slot, value_text) -> the pk column's buffers or None */
PyObject *kernel_pk_buffers(PyObject *module, PyObject *args);
/* columns(rows, wanted) -> the lists of the wanted columns of a row group (_columns.c) */
PyObject *kernel_columns(PyObject *module, PyObject *args);
/* column_buffers(values, kind) -> a plain column's Arrow buffers or None (_columns.c) */
PyObject *kernel_column_buffers(PyObject *module, PyObject *args);

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

/* the one reader of the columns whose value is a C integer, float or byte/text span: the
 * column at *pp into *v, *pp advanced, its S_ tag; S_NONE: a kind read only as a Python object
 * (kernel_read_value), *pp unchanged; -1: past the end (ValueError set). Inline: every value of
 * every row goes through it (a call per value cost ~2 % of file --json's instructions) */
#define SCALAR_NEED(w) do { if (left < (w)) return kernel_past_end(); *pp = p + (w); } while (0)
static inline int
kernel_scalar(const Col *c, const unsigned char *b, Py_ssize_t n, Py_ssize_t *pp, Scalar *v)
{
    Py_ssize_t p = *pp, left = n - p;
    const unsigned char *s = b + p;
    switch (c->kind) {
    case K_I8: SCALAR_NEED(1); v->i = (signed char)s[0]; return S_INT;
    case K_U8: SCALAR_NEED(1); v->i = s[0]; return S_INT;
    case K_YEAR: SCALAR_NEED(1); v->i = s[0] ? 1900 + s[0] : 0; return S_INT;
    case K_I16: SCALAR_NEED(2); v->i = (int16_t)(s[0] | s[1] << 8); return S_INT;
    case K_U16: SCALAR_NEED(2); v->i = (uint16_t)(s[0] | s[1] << 8); return S_INT;
    case K_INT24: {
        SCALAR_NEED(3);
        long x = (long)(s[0] | s[1] << 8 | s[2] << 16);
        v->i = !c->a && (x & 0x800000) ? x - 0x1000000 : x;
        return S_INT;
    }
    case K_I32: SCALAR_NEED(4); v->i = (int32_t)(uint32_t)le_uint(s, 4); return S_INT;
    case K_U32: SCALAR_NEED(4); v->i = (long long)le_uint(s, 4); return S_INT;
    case K_I64: SCALAR_NEED(8); v->i = (long long)le_uint(s, 8); return S_INT;
    case K_U64: SCALAR_NEED(8); v->u = le_uint(s, 8); return S_UINT;
    case K_UINT_BE: SCALAR_NEED(c->a); v->u = be_uint(s, (int)c->a); return S_UINT;
    case K_UINT_LE: SCALAR_NEED(c->a); v->u = le_uint(s, (int)c->a); return S_UINT;
    case K_F32: {
        SCALAR_NEED(4);
        float f;
        uint32_t u = (uint32_t)le_uint(s, 4);
        memcpy(&f, &u, 4);
        v->d = (double)f;
        return S_DOUBLE;
    }
    case K_F64: {
        SCALAR_NEED(8);
        uint64_t u = le_uint(s, 8);
        memcpy(&v->d, &u, 8);
        return S_DOUBLE;
    }
    case K_PREFIXED: case K_BINARY: {
        int lw = (int)c->a;
        if (left < lw)
            return kernel_past_end();
        Py_ssize_t len = (Py_ssize_t)le_uint(s, lw);
        if (len > left - lw)
            return kernel_past_end();
        *pp = p + lw + len;
        v->s = s + lw;
        v->len = len;
        v->pad = c->kind == K_BINARY && len < c->b ? (Py_ssize_t)c->b - len : 0;
        return c->kind == K_PREFIXED && c->codec != NULL ? S_TEXT : S_BYTES;
    }
    default:
        return S_NONE;
    }
}
#undef SCALAR_NEED

/* ------------------------------------------------- the growing byte buffer of the JSON writers */
/* (_rowjson.c's rows text and _line.c's event lines write into it) */
typedef struct {
    char *buf;
    Py_ssize_t len, cap;
} JsonOut;

static inline int
grow(JsonOut *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + more)
        cap *= 2;
    char *nb = PyMem_Realloc(o->buf, (size_t)cap);
    if (nb == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = nb;
    o->cap = cap;
    return 0;
}

static inline int
put(JsonOut *o, const char *s, Py_ssize_t n)
{
    if (grow(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

#define PUT_LIT(o, lit) put((o), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* JSON values as orjson writes them (_rowjson.c): text (valid UTF-8) with orjson's escapes,
 * integers, floats; 1 when s[0:n] is UTF-8 as Python's strict decoder takes it */
int kernel_valid_utf8(const unsigned char *s, Py_ssize_t n);
int kernel_put_str(JsonOut *o, const char *s, Py_ssize_t n);
int kernel_put_ll(JsonOut *o, long long v);
int kernel_put_ull(JsonOut *o, unsigned long long v);
int kernel_put_double(JsonOut *o, double d);
/* the rows of data[start:end] (kind 0 insert, 1 update, 2 delete) as rows_json writes them;
 * 0, 1 (decline: the caller reads the rows into Python values) or -1 (an exception: a short or
 * damaged image raises ValueError) */
int kernel_put_rows(JsonOut *o, PyObject *bobj, Py_ssize_t start, Py_ssize_t end, int kind,
                    ImageReader *rb, ImageReader *ra);
/* the number of rows of data[start:end] (the count_rows walk, _kernel.c); -1: an exception */
Py_ssize_t kernel_count_images(PyObject *bobj, Py_ssize_t start, Py_ssize_t end, int kind,
                               ImageReader *rb, ImageReader *ra);
/* the event lines' writer (_line.c) */
extern PyTypeObject EventLinesType;
/* the CRC32 tables and the type made ready (module init); -1 on error */
int kernel_line_ready(void);
/* the event lines' text pieces (_linetext.c): the CRC32 (tables built by line_crc_init), a
 * number right-aligned in ``width`` characters, a statement as the --summary shortens it
 * (1: decline), a str as JSON text (1: decline), UTF-8 text escape_controls leaves alone */
void line_crc_init(void);
uint32_t line_crc32(const unsigned char *p, Py_ssize_t n);
int line_put_padded(JsonOut *o, unsigned long long v, int width);
int line_put_query_text(JsonOut *o, const unsigned char *s, Py_ssize_t n,
                        const unsigned char *printable);
int line_put_text(JsonOut *o, PyObject *s);
int line_text_plain(const unsigned char *s, Py_ssize_t n);

/* the body layouts of an event line (render/line_layout.py BODY_*, same numbers) and what
 * _linebody.c reads of a TABLE_MAP's or a rows event's body for it: the line's entry of the
 * table (Python's, in ``tables``; only while the decoder's ``ctx_tables`` holds its very map),
 * the readers and the row images; 0: read, 1: decline, -1: an exception */
enum {
    BODY_NONE = 0, BODY_XID = 1, BODY_MARIADB_GTID = 2, BODY_ROWS_V1 = 3, BODY_ROWS_V2 = 4,
    BODY_TEXT = 5, BODY_TEXT_AFTER_LENGTH = 6, BODY_TABLE_MAP = 7, BODY_LAST = BODY_TABLE_MAP,
};

typedef struct {
    PyObject *entry;        /* the line's entry of the table (borrowed) */
    /* (a TABLE_MAP's line: entry set, rb NULL) */
    ImageReader *rb, *ra;   /* borrowed */
    Py_ssize_t start, end;  /* the row images (in the body, then in the buffer) */
    int kind;
} LineRows;

int line_table_map_layout(PyObject *tables, PyObject *ctx_tables, const unsigned char *body,
                          Py_ssize_t blen, LineRows *r);
int line_rows_layout(PyObject *tables, PyObject *ctx_tables, int code, int layout,
                     const unsigned char *body, Py_ssize_t blen, LineRows *r);
/* an event's values for the export instead of its line (_linebody.c; steals ``gtid``):
 * a tuple, None (declined) or NULL (an exception) */
PyObject *line_event_values(PyObject *bobj, int layout, int code, unsigned long long log_pos,
                            PyObject *gtid, long flags2, Py_ssize_t offset,
                            unsigned long long timestamp, unsigned long long server_id,
                            Py_ssize_t size, unsigned long long flags,
                            const unsigned char *body, const unsigned char *text,
                            Py_ssize_t text_len, const LineRows *rows);
/* the text renderer's tail of an event's body (the --summary line); 0, 1 (decline), -1 */
int line_put_tail(JsonOut *o, int layout, PyObject *gtid, const LineRows *rows,
                  const unsigned char *text, Py_ssize_t text_len, PyObject *bobj,
                  const unsigned char *printable);

#endif
