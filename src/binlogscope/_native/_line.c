/*
 * binlogscope._native._kernel.EventLines: an event's `file --json` line, written from the
 * layouts Python declares, or a decline.
 *
 * Declared in Python (render/line_layout.py), interpreted here:
 *   - the line's template: the keys of render/shapes.py's binlog_event_json in their order,
 *     as (text before the value, value slot) pairs and the closing text; the text holds the
 *     values that are the same for the whole file (``file``, ``binlog_file``), written once by
 *     the serializer;
 *   - the event type names (the JSON text of each type code's name, None: decline);
 *   - the body layout of each type code (BODY_* below, line_layout.BODY_LAYOUTS): which fixed
 *     part this file reads, the same fields and conditions as the Python decoder's common
 *     case (wire/binlog/control_events.py decode_xid, wire/binlog/gtid_events.py
 *     decode_mariadb_gtid; wire/binlog/rows.py decode_rows_event for the rows events, whose
 *     row images _rowjson.c writes with the readers of the table's column plans, which
 *     Python declares per table and columns-present bitmap in ``tables``; the statement text
 *     of ANNOTATE_ROWS and ROWS_QUERY, control_events.py decode_annotate_rows and
 *     decode_rows_query; a TABLE_MAP whose bytes are those of the map the decoder holds,
 *     which changes nothing, table_map.py _cached); 0: decline.
 * The 19-byte header is read by the layout of wire/binlog/header.py (HEADER: <IBIIIH), the
 * checksum as wire/binlog/decode.py checks it (CRC32 of the whole event = the CRC residue).
 *
 * lines(buf, pos, base) reads the event at buf[pos] and, when it knows everything of it,
 * appends its line to its buffer and returns (type code, log_pos, gtid, flags2, query) - what
 * the caller's coordinates need - else None and writes nothing: anything else (a type without
 * a layout, a bad or absent CRC, a body the layout does not cover, ...) is the Python path's
 * (decode_event -> shapes -> the serializer), which stays the definition. The loop over the
 * events and the coordinates stay in Python (drivers/binlog_file.py): the caller sets ``gtid``
 * (the open transaction's GTID, the line's ``gtid`` for events that are not a GTID) and
 * ``crc`` (CRC32 in force and verified) as its context moves. ``add(line)`` appends a line the
 * Python path wrote, ``take()`` hands the buffered lines over, ``flush()`` gives them to
 * ``sink`` (the output's writer).
 *
 * A replication stream's event packets (``packet`` 1 or 3: session/packets.py stream_run, the
 * template render/line_layout.py packet_template derives from render/shapes.py's capture
 * item): buf[pos] is the packet; its header (wire/framing.py), the OK byte and the semi-sync
 * header (wire/replication.py) are read by their layouts, the event must fill the rest of the
 * payload and start where the last event of its file ended (``at``, which the caller keeps:
 * wire/binlog/coords.py; log_pos 0 or an artificial event decline), and the packet's keys are
 * written from the packet (sequence id, payload length, offset ``base + pos``), ``semi`` (the
 * semi-sync value's text per flag) and ``texts`` (what the caller knows: the capture frame,
 * the wire time, the binlog file). The sequence-id check and every other state stay in Python.
 */
#include "_kernel.h"
#include <structmember.h>

/* value slots of the template (render/line_layout.py SLOTS, same numbers) */
enum {
    V_OFFSET = 1, V_LOG_POS, V_GTID, V_EVENT_TYPE, V_TYPE_CODE, V_TIMESTAMP, V_SERVER_ID,
    V_EVENT_SIZE, V_FLAGS, V_CHECKSUM_OK, V_SCHEMA, V_TABLE, V_ROWS, V_QUERY, V_ERROR,
    /* the --summary line's: the header time as ``clock`` gives it, the event's text (the
     * type's name, then the text renderer's tail of the body, render/text.py event_line) */
    V_CLOCK, V_EVENT,
    /* a stream's event packet (render/line_layout.py PACKET_SLOTS): its sequence id, payload
     * length, semi-sync header (``semi``'s text) and offset in the direction's bytes; then the
     * values the caller gives as JSON text (``texts``: the capture frame, the wire time, the
     * binlog file) */
    V_SEQ, V_PAYLOAD_LENGTH, V_SEMI_SYNC, V_PACKET_OFFSET, V_TEXT0, V_TEXT1, V_TEXT2,
    V_LAST = V_TEXT2,
};
#define HEADER_LEN 19
#define MAX_SLOTS 32
/* the CRC32 of any bytes followed by their own CRC32 (little-endian) */
#define CRC32_RESIDUE 0x2144DF1Cu
/* MariaDB GTID flags2 (wire/binlog/gtid_events.py) */
#define FL_GROUP_COMMIT_ID 0x02
#define FL_PREPARED_XA 0x40
#define FL_COMPLETED_XA 0x80
/* the header's LOG_EVENT_ARTIFICIAL_F (wire/binlog/header.py is_artificial): in no file */
#define LOG_EVENT_ARTIFICIAL_F 0x20
/* a client/server packet's header (wire/framing.py): 3-byte length, sequence id */
#define PACKET_HEADER_LEN 4

typedef struct {
    PyObject_HEAD
    JsonOut o;
    Py_ssize_t nslots;
    int slot[MAX_SLOTS];
    int width[MAX_SLOTS];  /* a number right-aligned in this many characters (0: as it is) */
    PyObject *clock;       /* callable(timestamp) -> str (V_CLOCK), or NULL */
    long long clock_ts;    /* the last timestamp given to clock, and its text */
    PyObject *clock_text;
    PyObject *lits;   /* tuple of nslots + 1 bytes: the text before each value, then the end */
    PyObject *names;  /* tuple of 256: the type name's JSON text (bytes) or None */
    unsigned char body[256];
    PyObject *gtid;   /* str or None: the open transaction's GTID */
    int crc;          /* 1: CRC32 in force and verified; 0: every event declines */
    PyObject *sink;   /* callable(bytes): where flush() hands the lines over, or NULL */
    /* rows events: the decoder's TABLE_MAPs (its context's dict table id -> TableMap, read
     * only) and the line's entries Python declared for them (table id -> (the TableMap,
     * schema's JSON text, table's JSON text, column count, {columns-present key: (reader of
     * the before/only image, reader of the after image or None)}, the TABLE_MAP body bytes
     * the map was decoded from)) */
    PyObject *ctx_tables, *tables;
    /* a replication stream's event packets (session/packets.py stream_run): 0, the calls read
     * events of a file; 1 or 3, a packet whose event follows that many bytes of its payload
     * (the OK byte, then the semi-sync header 0xEF and its flag) */
    int packet;
    long long at;     /* stream: where the next event starts in its file (-1: not known) */
    PyObject *semi;   /* tuple: the semi_sync text without the header, with flag 0, flag 1 */
    PyObject *texts;  /* tuple of 3 bytes: V_TEXT0..2's JSON text */
    /* bytes of 8192: the BMP's printable non-whitespace characters (a bit each, Python's
     * str.isprintable and isspace), which a statement's text (V_EVENT) may have; else ASCII */
    PyObject *printable;
    /* 1: an event it takes is not written as a line: its values come back as a tuple (the
     * export's rows, export/mapper.py TableMapper.written) */
    int values;
} EventLines;

/* ------------------------------------------------------------------ the type */
static int
lines_init(EventLines *self, PyObject *args, PyObject *kwds)
{
    PyObject *template, *end, *names;
    Py_buffer bodies;
    static char *kwlist[] = {"template", "end", "names", "bodies", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O!O!y*:EventLines", kwlist, &PyTuple_Type,
                                     &template, &PyBytes_Type, &end, &PyTuple_Type, &names,
                                     &bodies))
        return -1;
    int rc = -1;
    Py_ssize_t n = PyTuple_GET_SIZE(template);
    if (n > MAX_SLOTS || PyTuple_GET_SIZE(names) != 256 || bodies.len != 256) {
        PyErr_SetString(PyExc_ValueError, "EventLines: at most 32 slots, 256 names and bodies");
        goto done;
    }
    PyObject *lits = PyTuple_New(n + 1);
    if (lits == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *pair = PyTuple_GET_ITEM(template, i);
        PyObject *lit;
        int slot, width = 0;
        if (!PyArg_ParseTuple(pair, "O!i|i", &PyBytes_Type, &lit, &slot, &width) || slot < 1 ||
            slot > V_LAST || width < 0 || width > 64) {
            if (!PyErr_Occurred())
                PyErr_Format(PyExc_ValueError, "EventLines: no value slot %d", slot);
            Py_DECREF(lits);
            goto done;
        }
        Py_INCREF(lit);
        PyTuple_SET_ITEM(lits, i, lit);
        self->slot[i] = slot;
        self->width[i] = width;
    }
    self->clock_ts = -1;
    Py_INCREF(end);
    PyTuple_SET_ITEM(lits, n, end);
    for (int i = 0; i < 256; i++) {
        PyObject *name = PyTuple_GET_ITEM(names, i);
        unsigned char layout = ((const unsigned char *)bodies.buf)[i];
        if ((name != Py_None && !PyBytes_Check(name)) || layout > BODY_LAST) {
            PyErr_SetString(PyExc_ValueError, "EventLines: a name is bytes or None, a body "
                            "layout one this kernel knows");
            Py_DECREF(lits);
            goto done;
        }
        self->body[i] = layout;
    }
    Py_XSETREF(self->lits, lits);
    Py_INCREF(names);
    Py_XSETREF(self->names, names);
    self->nslots = n;
    if (self->gtid == NULL) {
        Py_INCREF(Py_None);
        self->gtid = Py_None;
    }
    rc = 0;
done:
    PyBuffer_Release(&bodies);
    return rc;
}

static void
lines_dealloc(EventLines *self)
{
    PyMem_Free(self->o.buf);
    Py_XDECREF(self->lits);
    Py_XDECREF(self->names);
    Py_XDECREF(self->gtid);
    Py_XDECREF(self->sink);
    Py_XDECREF(self->clock);
    Py_XDECREF(self->clock_text);
    Py_XDECREF(self->ctx_tables);
    Py_XDECREF(self->tables);
    Py_XDECREF(self->semi);
    Py_XDECREF(self->texts);
    Py_XDECREF(self->printable);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the header time as the caller's clock(timestamp) gives it, called once per distinct
 * timestamp; 1: decline (no clock, or a text that is not valid Unicode) */
static int
put_clock(EventLines *self, unsigned long long ts)
{
    if (self->clock == NULL || self->clock == Py_None)
        return 1;
    if (self->clock_text == NULL || self->clock_ts != (long long)ts) {
        PyObject *t = PyObject_CallFunction(self->clock, "K", ts);
        if (t == NULL)
            return -1;
        PyObject *b = PyUnicode_Check(t) ? PyUnicode_AsUTF8String(t) : NULL;
        Py_DECREF(t);
        if (b == NULL) {
            PyErr_Clear();
            return 1;
        }
        Py_XSETREF(self->clock_text, b);
        self->clock_ts = (long long)ts;
    }
    return put(&self->o, PyBytes_AS_STRING(self->clock_text),
               PyBytes_GET_SIZE(self->clock_text));
}

static PyObject *
lines_call(EventLines *self, PyObject *args, PyObject *kwds)
{
    PyObject *bobj;
    Py_ssize_t pos, base;
    (void)kwds;
    if (!PyArg_ParseTuple(args, "O!nn:EventLines", &PyBytes_Type, &bobj, &pos, &base))
        return NULL;
    if (!self->crc || self->lits == NULL)
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    Py_ssize_t n = PyBytes_GET_SIZE(bobj);
    /* a stream's event packet at pos: its header, the OK byte, the semi-sync header; the
     * event fills the rest of the payload (anything else: the Python path) */
    Py_ssize_t pkt = pos, plen = 0;
    int seq = 0, semi = 0;
    if (self->packet) {
        if (self->at < 0 || pkt < 0 || n - pkt < PACKET_HEADER_LEN)
            Py_RETURN_NONE;
        plen = (Py_ssize_t)le_uint(b + pkt, 3);
        seq = b[pkt + 3];
        if (plen > n - pkt - PACKET_HEADER_LEN || plen < self->packet + HEADER_LEN + 4 ||
            b[pkt + PACKET_HEADER_LEN] != 0)
            Py_RETURN_NONE;
        if (self->packet == 3) {
            semi = 1 + b[pkt + PACKET_HEADER_LEN + 2];
            if (b[pkt + PACKET_HEADER_LEN + 1] != 0xEF || semi > 2)
                Py_RETURN_NONE;
        } else if (self->packet != 1) {
            Py_RETURN_NONE;
        }
        pos = pkt + PACKET_HEADER_LEN + self->packet;
    }
    if (pos < 0 || pos > n - HEADER_LEN)
        Py_RETURN_NONE;
    /* the header (wire/binlog/header.py HEADER: timestamp, type, server id, size, log_pos,
     * flags) */
    const unsigned char *h = b + pos;
    unsigned long long timestamp = le_uint(h, 4), server_id = le_uint(h + 5, 4);
    unsigned long long log_pos = le_uint(h + 13, 4), flags = le_uint(h + 17, 2);
    Py_ssize_t size = (Py_ssize_t)le_uint(h + 9, 4);
    int code = h[4];
    int layout = self->body[code];
    PyObject *name = PyTuple_GET_ITEM(self->names, code);
    if (layout == BODY_NONE || name == Py_None || size < HEADER_LEN + 4 || size > n - pos)
        Py_RETURN_NONE;
    if (self->packet && (size != plen - self->packet || !log_pos || (flags & LOG_EVENT_ARTIFICIAL_F) ||
                         (long long)log_pos - size != self->at))
        Py_RETURN_NONE;  /* the stream's coordinates: an event right after the last one */
    if (line_crc32(h, size) != CRC32_RESIDUE)
        Py_RETURN_NONE;  /* a mismatch is an error: the Python path words it */
    const unsigned char *body = h + HEADER_LEN;
    Py_ssize_t blen = size - HEADER_LEN - 4;

    /* the body by its layout: the common case of the Python decoder, else decline */
    PyObject *gtid = NULL;  /* the event's own GTID (a GTID event) */
    long flags2 = -1;
    LineRows rows = {NULL, NULL, NULL, 0, 0, 0};
    const unsigned char *text = NULL;  /* the event's statement text (valid UTF-8) */
    Py_ssize_t text_len = 0;
    switch (layout) {
    case BODY_XID:  /* decode_xid: an 8-byte xid (more bytes: unparsed, no error) */
        if (blen < 8)
            Py_RETURN_NONE;
        break;
    case BODY_MARIADB_GTID: {  /* decode_mariadb_gtid: seq, domain, flags2 [, commit id],
                                * then zero padding */
        if (blen < 13)
            Py_RETURN_NONE;
        flags2 = body[12];
        Py_ssize_t q = 13;
        if (flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA))
            Py_RETURN_NONE;
        if (flags2 & FL_GROUP_COMMIT_ID) {
            if (blen < 21)
                Py_RETURN_NONE;
            q = 21;
        }
        for (; q < blen; q++)
            if (body[q])
                Py_RETURN_NONE;  /* flags_extra and what follows: the Python path */
        char text[64];
        int k = snprintf(text, sizeof text, "%llu-%llu-%llu", le_uint(body + 8, 4), server_id,
                         le_uint(body, 8));
        gtid = PyUnicode_FromStringAndSize(text, k);
        if (gtid == NULL)
            return NULL;
        break;
    }
    case BODY_TEXT: case BODY_TEXT_AFTER_LENGTH: {
        /* decode_annotate_rows: the statement text is the rest of the body; decode_rows_query:
         * after a length byte. Valid UTF-8 only (the decoder replaces what is not) */
        Py_ssize_t skip = layout == BODY_TEXT_AFTER_LENGTH ? 1 : 0;
        if (blen < skip || !kernel_valid_utf8(body + skip, blen - skip))
            Py_RETURN_NONE;
        text = body + skip;
        text_len = blen - skip;
        break;
    }
    case BODY_TABLE_MAP:
        switch (line_table_map_layout(self->tables, self->ctx_tables, body, blen, &rows)) {
        case 0: break;
        case 1: Py_RETURN_NONE;
        default: return NULL;
        }
        break;
    case BODY_ROWS_V1: case BODY_ROWS_V2:
        switch (line_rows_layout(self->tables, self->ctx_tables, code, layout, body, blen, &rows)) {
        case 0: break;
        case 1: Py_RETURN_NONE;
        default: return NULL;
        }
        rows.start += pos + HEADER_LEN;
        rows.end += pos + HEADER_LEN;
        break;
    default:
        Py_RETURN_NONE;
    }

    if (self->values)
        return line_event_values(bobj, layout, code, log_pos, gtid, flags2, base + pos,
                                 timestamp, server_id, size, flags, body, text, text_len,
                                 &rows);

    /* the line, by the template */
    JsonOut *o = &self->o;
    Py_ssize_t mark = o->len;
    int rc = 0;
    for (Py_ssize_t i = 0; i <= self->nslots && rc == 0; i++) {
        PyObject *lit = PyTuple_GET_ITEM(self->lits, i);
        rc = put(o, PyBytes_AS_STRING(lit), PyBytes_GET_SIZE(lit));
        if (rc || i == self->nslots)
            break;
        switch (self->slot[i]) {
        case V_OFFSET:
            if (self->packet) {
                rc = kernel_put_ll(o, self->at);
                break;
            }
            rc = self->width[i] ? line_put_padded(o, (unsigned long long)(base + pos), self->width[i])
                                : kernel_put_ll(o, (long long)(base + pos));
            break;
        case V_LOG_POS: rc = line_put_padded(o, log_pos, self->width[i]); break;
        case V_GTID:
            if (gtid != NULL)
                rc = line_put_text(o, gtid);
            else if (self->gtid != NULL && PyUnicode_Check(self->gtid))
                rc = line_put_text(o, self->gtid);
            else
                rc = PUT_LIT(o, "null");
            break;
        case V_EVENT_TYPE: rc = put(o, PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name)); break;
        case V_TYPE_CODE: rc = kernel_put_ll(o, code); break;
        case V_TIMESTAMP: rc = kernel_put_ull(o, timestamp); break;
        case V_SERVER_ID: rc = line_put_padded(o, server_id, self->width[i]); break;
        case V_EVENT_SIZE: rc = kernel_put_ll(o, (long long)size); break;
        case V_FLAGS: rc = kernel_put_ull(o, flags); break;
        case V_CHECKSUM_OK: rc = PUT_LIT(o, "true"); break;
        case V_SCHEMA: case V_TABLE:
            if (rows.entry == NULL) {
                rc = PUT_LIT(o, "null");
            } else {
                PyObject *t = PyTuple_GET_ITEM(rows.entry, self->slot[i] == V_SCHEMA ? 1 : 2);
                rc = put(o, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t));
            }
            break;
        case V_ROWS:
            if (rows.rb == NULL) {
                rc = PUT_LIT(o, "null");
                break;
            }
            rc = kernel_put_rows(o, bobj, rows.start, rows.end, rows.kind, rows.rb, rows.ra);
            if (rc < 0) {  /* damaged images: the Python path says where */
                PyErr_Clear();
                rc = 1;
            }
            break;
        case V_CLOCK:
            rc = put_clock(self, timestamp);
            break;
        case V_EVENT:
            rc = put(o, PyBytes_AS_STRING(name), PyBytes_GET_SIZE(name));
            if (rc == 0)
                rc = line_put_tail(o, layout, gtid, &rows, text, text_len, bobj,
                                   self->printable != NULL && PyBytes_Check(self->printable) &&
                                   PyBytes_GET_SIZE(self->printable) == 8192
                                       ? (const unsigned char *)PyBytes_AS_STRING(self->printable)
                                       : NULL);
            break;
        case V_QUERY:
            rc = text == NULL ? PUT_LIT(o, "null")
                              : kernel_put_str(o, (const char *)text, text_len);
            break;
        case V_SEQ: rc = kernel_put_ll(o, seq); break;
        case V_PAYLOAD_LENGTH: rc = kernel_put_ll(o, (long long)plen); break;
        case V_PACKET_OFFSET: rc = kernel_put_ll(o, (long long)(base + pkt)); break;
        case V_SEMI_SYNC: case V_TEXT0: case V_TEXT1: case V_TEXT2: {
            PyObject *t = self->slot[i] == V_SEMI_SYNC ? self->semi : self->texts;
            Py_ssize_t k = self->slot[i] == V_SEMI_SYNC ? semi : self->slot[i] - V_TEXT0;
            PyObject *v = t != NULL && PyTuple_Check(t) && PyTuple_GET_SIZE(t) > k
                              ? PyTuple_GET_ITEM(t, k) : NULL;
            rc = v != NULL && PyBytes_Check(v) ? put(o, PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v))
                                               : 1;  /* not given: decline */
            break;
        }
        default: rc = PUT_LIT(o, "null"); break;  /* error */
        }
    }
    if (rc) {
        o->len = mark;  /* nothing of a declined event stays */
        Py_XDECREF(gtid);
        if (rc < 0)
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *out = PyTuple_New(5);
    if (out == NULL) {
        Py_XDECREF(gtid);
        return NULL;
    }
    PyObject *vcode = PyLong_FromLong(code), *vpos = PyLong_FromUnsignedLongLong(log_pos);
    PyObject *vf2 = flags2 < 0 ? (Py_INCREF(Py_None), Py_None) : PyLong_FromLong(flags2);
    if (gtid == NULL) {
        Py_INCREF(Py_None);
        gtid = Py_None;
    }
    Py_INCREF(Py_None);
    PyTuple_SET_ITEM(out, 0, vcode);
    PyTuple_SET_ITEM(out, 1, vpos);
    PyTuple_SET_ITEM(out, 2, gtid);
    PyTuple_SET_ITEM(out, 3, vf2);
    PyTuple_SET_ITEM(out, 4, Py_None);
    if (vcode == NULL || vpos == NULL || vf2 == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return out;
}

static PyObject *
lines_add(EventLines *self, PyObject *line)
{
    if (!PyBytes_Check(line)) {
        PyErr_SetString(PyExc_TypeError, "add(line): bytes");
        return NULL;
    }
    if (put(&self->o, PyBytes_AS_STRING(line), PyBytes_GET_SIZE(line)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
lines_take(EventLines *self, PyObject *unused)
{
    (void)unused;
    PyObject *out = PyBytes_FromStringAndSize(self->o.buf, self->o.len);
    if (out != NULL)
        self->o.len = 0;
    return out;
}

static PyObject *
lines_flush(EventLines *self, PyObject *unused)
{
    (void)unused;
    if (self->o.len == 0 || self->sink == NULL || self->sink == Py_None)
        Py_RETURN_NONE;
    PyObject *text = lines_take(self, NULL);
    if (text == NULL)
        return NULL;
    PyObject *r = PyObject_CallOneArg(self->sink, text);
    Py_DECREF(text);
    if (r == NULL)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_NONE;
}

static PyObject *
lines_layouts(EventLines *self, PyObject *arg)
{
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    int ok = v.len == 256;
    for (Py_ssize_t i = 0; ok && i < 256; i++)
        ok = ((const unsigned char *)v.buf)[i] <= BODY_LAST;
    if (ok)
        memcpy(self->body, v.buf, 256);
    PyBuffer_Release(&v);
    if (!ok) {
        PyErr_SetString(PyExc_ValueError, "layouts(bodies): 256 layouts this kernel knows");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyObject *
lines_text_plain(PyObject *cls, PyObject *arg)
{
    (void)cls;
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "line_text_plain(data): bytes");
        return NULL;
    }
    return PyBool_FromLong(line_text_plain((const unsigned char *)PyBytes_AS_STRING(arg),
                                      PyBytes_GET_SIZE(arg)));
}

static PyObject *
lines_crc32(PyObject *cls, PyObject *arg)
{
    Py_buffer v;
    (void)cls;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    uint32_t c = line_crc32(v.buf, v.len);
    PyBuffer_Release(&v);
    return PyLong_FromUnsignedLong(c);
}

static PyMethodDef lines_methods[] = {
    {"add", (PyCFunction)lines_add, METH_O, "add(line): a line the Python path wrote, in order"},
    {"take", (PyCFunction)lines_take, METH_NOARGS, "take() -> the lines written so far"},
    {"layouts", (PyCFunction)lines_layouts, METH_O,
     "layouts(bodies): each type code's body layout again (the decoder's context changed)"},
    {"flush", (PyCFunction)lines_flush, METH_NOARGS, "flush(): the lines written so far to sink"},
    {"text_plain", (PyCFunction)lines_text_plain, METH_O | METH_STATIC,
     "line_text_plain(data) -> True: UTF-8 text in which escape_controls escapes nothing"},
    {"crc32", (PyCFunction)lines_crc32, METH_O | METH_STATIC,
     "crc32(data) -> the CRC32 this kernel checks events with (as zlib.crc32)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef lines_members[] = {
    {"gtid", T_OBJECT, offsetof(EventLines, gtid), 0,
     "the open transaction's GTID (str) or None"},
    {"sink", T_OBJECT, offsetof(EventLines, sink), 0,
     "callable(bytes) that flush() hands the lines to (LineWriter.add)"},
    {"ctx_tables", T_OBJECT, offsetof(EventLines, ctx_tables), 0,
     "the decoder's TABLE_MAPs (DecodeContext.tables), read only"},
    {"tables", T_OBJECT, offsetof(EventLines, tables), 0,
     "table id -> the line's entry of the table (render/line_layout.py)"},
    {"clock", T_OBJECT, offsetof(EventLines, clock), 0,
     "callable(timestamp) -> the --summary line's time text"},
    {"crc", T_INT, offsetof(EventLines, crc), 0, "1: CRC32 in force and verified"},
    {"values", T_INT, offsetof(EventLines, values), 0,
     "1: an event taken comes back as its values (the export's), no line is written"},
    {"packet", T_INT, offsetof(EventLines, packet), 0,
     "0: events of a file; 1 or 3: a stream's event packet, the event after that many bytes"},
    {"at", T_LONGLONG, offsetof(EventLines, at), 0,
     "stream: where the next event starts in its file (-1: not known)"},
    {"semi", T_OBJECT, offsetof(EventLines, semi), 0,
     "the semi_sync value's JSON text: no header, flag 0, flag 1"},
    {"texts", T_OBJECT, offsetof(EventLines, texts), 0,
     "the JSON text of the values the caller gives (V_TEXT0..2)"},
    {"printable", T_OBJECT, offsetof(EventLines, printable), 0,
     "bytes of 8192: the BMP characters (a bit each) a statement's text may have beyond "
     "printable ASCII (render/line_layout.py), or None"},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject EventLinesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlogscope._native._kernel.EventLines",
    .tp_basicsize = sizeof(EventLines),
    .tp_dealloc = (destructor)lines_dealloc,
    .tp_call = (ternaryfunc)lines_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "EventLines(template, end, names, bodies): events' file --json lines from "
              "declared layouts (render/line_layout.py)",
    .tp_methods = lines_methods,
    .tp_members = lines_members,
    .tp_init = (initproc)lines_init,
    .tp_new = PyType_GenericNew,
};

int
kernel_line_ready(void)
{
    line_crc_init();
    return PyType_Ready(&EventLinesType);
}
