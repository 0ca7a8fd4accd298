/*
 * The export's Arrow buffer writers' shared declarations (_arrow.c: the image and pk columns
 * from the mapper's image refs; _imagebytes.c: the same columns straight from a rows event's
 * kept bytes, by the plan's ImageReader).
 */
#ifndef BINLOGSCOPE_ARROW_H
#define BINLOGSCOPE_ARROW_H
#include "_kernel.h"

/* an Arrow buffer's bytes: the kernel's growing byte buffer (_kernel.h JsonOut, grow, put) */
typedef JsonOut Buf;
#define buf_grow grow

static inline int
buf_put(Buf *o, const void *s, Py_ssize_t n)
{
    return put(o, (const char *)s, n);
}

static inline int
buf_i32(Buf *o, Py_ssize_t v)
{
    if (v > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "image column larger than 2 GiB");
        return -1;
    }
    int32_t x = (int32_t)v;
    return buf_put(o, &x, 4);
}

/* validity bitmap: one bit per entry, set = valid */
typedef struct {
    Buf b;
    Py_ssize_t n, nulls;
} Bits;

static inline int
bits_add(Bits *v, int valid)
{
    if ((v->n & 7) == 0) {
        char z = 0;
        if (buf_put(&v->b, &z, 1) < 0)
            return -1;
    }
    if (valid)
        v->b.buf[v->n >> 3] |= (char)(1 << (v->n & 7));
    else
        v->nulls++;
    v->n++;
    return 0;
}

/* str -> its UTF-8 (borrowed from the str); NULL without an exception: not encodable */
static inline const char *
utf8_of(PyObject *s, Py_ssize_t *n)
{
    const char *u = PyUnicode_AsUTF8AndSize(s, n);
    if (u == NULL)
        PyErr_Clear();
    return u;
}

#define DECLINE 1

typedef struct {
    Buf offsets, key_off, key_data, item_off, item_data, json_off, json_data;
    Bits valid, item_valid;
    Py_ssize_t items;
    PyObject *doubles;  /* the current columns' DOUBLE labels (a set) or NULL */
} Out;


/* the JSON string of UTF-8 text s[0:n] as json.dumps(ensure_ascii=False) writes it */
int arrow_put_json_string(Buf *o, const char *s, Py_ssize_t n);
/* the text and JSON literal of one value (json_fn NULL: the text only); DECLINE, -1 or 0 */
int arrow_put_value(Out *o, PyObject *k, PyObject *v, PyObject *cols, PyObject *special,
                    PyObject *text_fn, PyObject *json_fn);
/* one image read from its bytes: ref (data, position, ImageReader, columns); DECLINE, -1, 0 */
int arrow_put_image_bytes(Out *o, PyObject *ref, PyObject *special, PyObject *text_fn,
                          PyObject *json_fn);
/* a row's pk items from an image's bytes (ref as above, pk: the key labels, a list);
 * DECLINE, -1 or 0 */
int arrow_pk_bytes(Out *o, PyObject *ref, PyObject *pk, PyObject *special, PyObject *text_fn);

#endif
