/*
 * binlogscope._native._kernel: the bodies of EventLines (_line.c) - a TABLE_MAP whose bytes
 * are those of the map the decoder holds (wire/binlog/table_map.py _cached), a rows event's
 * post-header and columns-present bitmaps (wire/binlog/rows.py decode_rows_event) with the
 * readers Python declared for its table, and the --summary's tail of a body (render/text.py
 * _tail), and an event's values for the export instead of its line (export/mapper.py
 * TableMapper.written). The layouts are Python's (render/line_layout.py); this file only reads
 * them.
 */
#include "_kernel.h"

/* the line's entry of table ``id`` while the decoder's context still holds its very
 * TableMap (borrowed), else NULL (an exception may be set) */
static PyObject *
table_entry(PyObject *tables, PyObject *ctx_tables, PyObject *id)
{
    if (tables == NULL || ctx_tables == NULL || !PyDict_Check(tables) ||
        !PyDict_Check(ctx_tables))
        return NULL;
    PyObject *entry = PyDict_GetItemWithError(tables, id);
    PyObject *tm = entry != NULL ? PyDict_GetItemWithError(ctx_tables, id) : NULL;
    if (tm == NULL || !PyTuple_Check(entry) || PyTuple_GET_SIZE(entry) != 6 ||
        PyTuple_GET_ITEM(entry, 0) != tm || !PyBytes_Check(PyTuple_GET_ITEM(entry, 1)) ||
        !PyBytes_Check(PyTuple_GET_ITEM(entry, 2)) || !PyBytes_Check(PyTuple_GET_ITEM(entry, 5)))
        return NULL;
    return entry;
}

/* a TABLE_MAP whose body is byte for byte the one its table's map was decoded from: the
 * decoder gives the map it holds and changes nothing (wire/binlog/table_map.py _cached);
 * 0: r->entry set; 1: decline; -1: an exception */
int
line_table_map_layout(PyObject *tables, PyObject *ctx_tables, const unsigned char *body,
                      Py_ssize_t blen, LineRows *r)
{
    if (blen < 6)
        return 1;
    PyObject *id = PyLong_FromUnsignedLongLong(le_uint(body, 6));
    if (id == NULL)
        return -1;
    PyObject *entry = table_entry(tables, ctx_tables, id);
    Py_DECREF(id);
    if (entry == NULL)
        return PyErr_Occurred() ? -1 : 1;
    PyObject *raw = PyTuple_GET_ITEM(entry, 5);
    if (PyBytes_GET_SIZE(raw) != blen || memcmp(PyBytes_AS_STRING(raw), body, (size_t)blen))
        return 1;
    r->entry = entry;
    return 0;
}

/* a rows event's post-header and bitmaps as wire/binlog/rows.py decode_rows_event reads them
 * (v1: table id, flags; v2: + extra data, which must be empty), the column count (one byte)
 * and the columns-present bitmap(s); the table's entry and readers. 0: *r filled; 1: decline
 * (nothing set); -1: an exception */
int
line_rows_layout(PyObject *tables, PyObject *ctx_tables, int code, int layout,
                 const unsigned char *body, Py_ssize_t blen, LineRows *r)
{
    if (blen < 8)
        return 1;
    unsigned long long tid = le_uint(body, 6);
    Py_ssize_t q = 8;
    int kind = code - (layout == BODY_ROWS_V1 ? 23 : 30);  /* WRITE, UPDATE, DELETE */
    if (kind < 0 || kind > 2)
        return 1;
    if (layout == BODY_ROWS_V2) {
        if (blen - q < 2 || le_uint(body + q, 2) != 2)
            return 1;  /* extra row info (TLVs): the Python path */
        q += 2;
    }
    if (q >= blen || body[q] >= 251)
        return 1;
    Py_ssize_t ncols = body[q++], nb = (ncols + 7) / 8;
    if (blen - q < nb * (kind == 1 ? 2 : 1))
        return 1;
    PyObject *key = NULL, *id = PyLong_FromUnsignedLongLong(tid);
    if (id == NULL)
        return -1;
    int rc = 1;
    PyObject *entry = table_entry(tables, ctx_tables, id);
    if (entry == NULL || PyLong_AsSsize_t(PyTuple_GET_ITEM(entry, 3)) != ncols ||
        !PyDict_Check(PyTuple_GET_ITEM(entry, 4)))
        goto done;
    key = _PyLong_FromByteArray(body + q, (size_t)nb, 1, 0);
    if (key == NULL)
        goto error;
    if (kind == 1) {
        PyObject *after = _PyLong_FromByteArray(body + q + nb, (size_t)nb, 1, 0);
        PyObject *pair = after != NULL ? PyTuple_Pack(2, key, after) : NULL;
        Py_XDECREF(after);
        Py_SETREF(key, pair);
        if (key == NULL)
            goto error;
    }
    PyObject *readers = PyDict_GetItemWithError(PyTuple_GET_ITEM(entry, 4), key);
    if (readers == NULL || !PyTuple_Check(readers) || PyTuple_GET_SIZE(readers) != 2 ||
        !PyObject_TypeCheck(PyTuple_GET_ITEM(readers, 0), &ImageReaderType) ||
        (kind == 1) != PyObject_TypeCheck(PyTuple_GET_ITEM(readers, 1), &ImageReaderType))
        goto done;
    r->entry = entry;
    r->rb = (ImageReader *)PyTuple_GET_ITEM(readers, 0);
    r->ra = kind == 1 ? (ImageReader *)PyTuple_GET_ITEM(readers, 1) : NULL;
    r->kind = kind;
    r->start = q + nb * (kind == 1 ? 2 : 1);
    r->end = blen;
    rc = 0;
    goto done;
error:
    rc = -1;
done:
    if (rc == 1 && PyErr_Occurred())
        rc = -1;
    Py_DECREF(id);
    Py_XDECREF(key);
    return rc;
}

/* the text renderer's tail of the body (render/text.py _tail): a GTID, a table and its row
 * count, a table, a statement (``printable``: the BMP characters a statement may have
 * beyond printable ASCII, or NULL); 0, 1 (decline) or -1 */
int
line_put_tail(JsonOut *o, int layout, PyObject *gtid, const LineRows *rows, const unsigned char *text,
         Py_ssize_t text_len, PyObject *bobj, const unsigned char *printable)
{
    switch (layout) {
    case BODY_XID:
        return 0;
    case BODY_MARIADB_GTID: {
        Py_ssize_t n;
        const char *u = PyUnicode_AsUTF8AndSize(gtid, &n);
        if (u == NULL)
            return -1;
        return PUT_LIT(o, " ") < 0 ? -1 : put(o, u, n);
    }
    case BODY_TABLE_MAP: case BODY_ROWS_V1: case BODY_ROWS_V2: {
        PyObject *t = PyTuple_GET_ITEM(rows->entry, 1);  /* " schema.table" or "" */
        if (put(o, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t)) < 0)
            return -1;
        if (rows->rb == NULL)
            return 0;
        Py_ssize_t n = kernel_count_images(bobj, rows->start, rows->end, rows->kind, rows->rb,
                                           rows->ra);
        if (n < 0) {  /* damaged images: the Python path says where */
            PyErr_Clear();
            return 1;
        }
        if (PUT_LIT(o, " ") < 0 || kernel_put_ll(o, n) < 0)
            return -1;
        return n != 1 ? PUT_LIT(o, " rows") : PUT_LIT(o, " row");
    }
    case BODY_TEXT: case BODY_TEXT_AFTER_LENGTH:
        if (PUT_LIT(o, " ") < 0)
            return -1;
        return line_put_query_text(o, text, text_len, printable);
    default:
        return 1;
    }
}

/* the values of an event the export takes (_line.c: EventLines.values set), instead of its
 * line, read by its body ``layout`` (BODY_*):
 * (type code, log_pos, its GTID or None, flags2 or None, None, offset, timestamp, server id,
 * event size, flags, a, b) - the first five what the caller's coordinates need, as a line's
 * tuple - where (a, b) are: an XID's (xid, None); a statement text's (str, None), declined
 * when it has U+FFFD (the export keeps such a statement's bytes: valid_text.statement_bytes);
 * a TABLE_MAP's (its TableMap, None); a rows event's (its TableMap, (the buffer, the
 * positions of its images in it - kernel_image_positions -, the before/only image's reader,
 * the after image's or None)), declined when the images do not read (the Python path
 * says where); a GTID's (None, None). Steals ``gtid``. */
PyObject *
line_event_values(PyObject *bobj, int layout, int code, unsigned long long log_pos,
                  PyObject *gtid, long flags2, Py_ssize_t offset, unsigned long long timestamp,
                  unsigned long long server_id, Py_ssize_t size, unsigned long long flags,
                  const unsigned char *body, const unsigned char *text, Py_ssize_t text_len,
                  const LineRows *rows)
{
    PyObject *a = NULL, *b = NULL;
    switch (layout) {
    case BODY_XID:
        a = PyLong_FromUnsignedLongLong(le_uint(body, 8));
        break;
    case BODY_TEXT: case BODY_TEXT_AFTER_LENGTH:
        for (Py_ssize_t i = 0; i + 2 < text_len; i++)
            if (text[i] == 0xEF && text[i + 1] == 0xBF && text[i + 2] == 0xBD) {
                Py_XDECREF(gtid);
                Py_RETURN_NONE;
            }
        a = PyUnicode_DecodeUTF8((const char *)text, text_len, NULL);
        break;
    case BODY_TABLE_MAP: case BODY_ROWS_V1: case BODY_ROWS_V2:
        if (rows->entry == NULL) {  /* (not a table this kernel knows: the Python path) */
            Py_XDECREF(gtid);
            Py_RETURN_NONE;
        }
        a = PyTuple_GET_ITEM(rows->entry, 0);
        Py_INCREF(a);
        if (layout != BODY_TABLE_MAP) {
            b = kernel_image_positions(bobj, rows->kind, (PyObject *)rows->rb,
                                       rows->ra == NULL ? Py_None : (PyObject *)rows->ra,
                                       rows->start, rows->end);
            if (b == NULL) {  /* damaged images: the Python path says where */
                PyErr_Clear();
                Py_DECREF(a);
                Py_XDECREF(gtid);
                Py_RETURN_NONE;
            }
            /* (the positions are in this buffer; the readers read the images there) */
            b = Py_BuildValue("(ONOO)", bobj, b, (PyObject *)rows->rb,
                              rows->ra == NULL ? Py_None : (PyObject *)rows->ra);
        }
        break;
    default:
        break;
    }
    if (PyErr_Occurred()) {
        Py_XDECREF(a);
        Py_XDECREF(gtid);
        return NULL;
    }
    if (a == NULL) {
        Py_INCREF(Py_None);
        a = Py_None;
    }
    if (b == NULL) {
        Py_INCREF(Py_None);
        b = Py_None;
    }
    if (gtid == NULL) {
        Py_INCREF(Py_None);
        gtid = Py_None;
    }
    PyObject *vf2;
    if (flags2 < 0) {
        Py_INCREF(Py_None);
        vf2 = Py_None;
    } else {
        vf2 = PyLong_FromLong(flags2);
    }
    Py_INCREF(Py_None);
    return Py_BuildValue("(NKNNNnKKnKNN)", PyLong_FromLong(code), log_pos, gtid, vf2, Py_None,
                         offset, timestamp, server_id, size, flags, a, b);
}
