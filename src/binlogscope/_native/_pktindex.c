/*
 * binlogscope._native._kernel.IndexRows: the TUI index's rows of a replication stream's event
 * packets (inspector/sources/packet_index.py), written from the layouts Python declares, or a
 * decline.
 *
 * It stands where EventLines stands for `pcap --json` (session/packets.py stream_run offers it
 * each server event packet: rows(buf, pos, base)), and is told its context the same way
 * (render/line_layout.py LineContext: ``crc``, the body layouts per type code, the decoder's
 * TABLE_MAPs ``ctx_tables`` and the entries Python declared for them ``tables``). It takes
 * only a packet whose event is a MariaDB GTID of the common shape (no XA, no commit id), or,
 * inside a transaction (``trx``, which Python sets, a GTID taken sets and an XID ends), an
 * ANNOTATE_ROWS of valid UTF-8, a TABLE_MAP of the bytes the decoder holds (which changes
 * nothing), a rows event whose table and columns-present bitmaps Python declared (its rows
 * counted by their readers, _kernel.c's walk) or an XID - right after the last event of its
 * file (``at``), with a good CRC32. Anything else - another type, an FDE, ROTATE, QUERY, a bad
 * checksum, a changed TABLE_MAP, damaged row images, an unusual packet - is declined: the
 * Python path (decode_plain, the indexer's _add_packet) takes it.
 *
 * For each packet taken it appends the row's numeric columns (time and frame as ``where``
 * gave them, payload length, sequence id, semi-sync flag, type code, log_pos, the event's
 * start in its file, the packet's offset, the payload's CRC-32, the table's entry among the
 * run's, the transaction's GTID among the run's) and its summary text (binlog_file.py
 * row_summary: the GTID, the statement, "N rows", "COMMIT xid=N", "table_id=N K columns") to
 * its buffers; take() hands a run over to the indexer, which keeps
 * the interning (type names, tables, GTIDs, decode contexts) in Python.
 */
#include "_kernel.h"
#include <structmember.h>

#define HEADER_LEN 19
#define CRC32_RESIDUE 0x2144DF1Cu
#define LOG_EVENT_ARTIFICIAL_F 0x20
#define PACKET_HEADER_LEN 4
#define XID_EVENT 16

/* MariaDB GTID flags2 (wire/binlog/gtid_events.py) */
#define FL_GROUP_COMMIT_ID 0x02
#define FL_PREPARED_XA 0x40
#define FL_COMPLETED_XA 0x80
/* binlog_file.py _SUMMARY_MAX: a longer summary is cut to this many characters with "..." */
#define SUMMARY_MAX 100

enum { C_TIME, C_FRAME, C_LEN, C_SEQ, C_SEMI, C_CODE, C_LOG_POS, C_FPOS, C_OFFSET, C_CRC,
       C_ENTRY, C_GTID, C_ENDS, C_COUNT };

typedef struct {
    PyObject_HEAD
    JsonOut col[C_COUNT];
    JsonOut text;       /* the summaries, one after the other (C_ENDS: each one's end) */
    Py_ssize_t rows;    /* rows in the buffers */
    unsigned char body[256];
    PyObject *entries;  /* list: the table entries the run's rows refer to (C_ENTRY) */
    PyObject *gtids;    /* list: the run's transactions' GTIDs (C_GTID: the row's), the open
                         * one at the run's first row first (str or None) */
    Py_ssize_t cur;     /* the current transaction's in gtids */
    PyObject *run_state;  /* state at the run's first row */
    PyObject *gtid;     /* the open transaction's GTID (stream_run sets it) */
    PyObject *state;    /* what Python keeps with a run (its decode environment, file) */
    PyObject *ctx_tables, *tables;
    int crc, packet, trx;
    long long at, frame;
    double time;
} IndexRows;

static int
ix_init(IndexRows *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, ":IndexRows", kwlist))
        return -1;
    self->at = -1;
    PyObject *l = PyList_New(0);
    if (l == NULL)
        return -1;
    Py_XSETREF(self->entries, l);
    return 0;
}

static void
ix_dealloc(IndexRows *self)
{
    for (int i = 0; i < C_COUNT; i++)
        PyMem_Free(self->col[i].buf);
    PyMem_Free(self->text.buf);
    Py_XDECREF(self->entries);
    Py_XDECREF(self->gtids);
    Py_XDECREF(self->run_state);
    Py_XDECREF(self->gtid);
    Py_XDECREF(self->state);
    Py_XDECREF(self->ctx_tables);
    Py_XDECREF(self->tables);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* the UTF-8 character at s (w bytes) is whitespace to str.split(): ASCII's, U+001C-U+001F,
 * U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000 */
static int
is_space(const unsigned char *s, int w)
{
    unsigned int c;
    if (w == 1)
        return s[0] == ' ' || (s[0] >= 0x09 && s[0] <= 0x0d) || (s[0] >= 0x1c && s[0] <= 0x1f);
    if (w == 2)
        c = ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    else if (w == 3)
        c = ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    else
        return 0;
    return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
           c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

#define PUT_VAL(k, v) put(&self->col[k], (const char *)&(v), (Py_ssize_t)sizeof(v))

static PyObject *
ix_call(IndexRows *self, PyObject *args, PyObject *kwds)
{
    PyObject *bobj;
    Py_ssize_t pos, base;
    (void)kwds;
    if (!PyArg_ParseTuple(args, "O!nn:IndexRows", &PyBytes_Type, &bobj, &pos, &base))
        return NULL;
    if (!self->crc || self->at < 0 || self->entries == NULL ||
        (self->packet != 1 && self->packet != 3))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bobj);
    Py_ssize_t n = PyBytes_GET_SIZE(bobj);
    /* the packet: its header, the OK byte, the semi-sync header; the event fills the rest */
    Py_ssize_t pkt = pos;
    if (pkt < 0 || n - pkt < PACKET_HEADER_LEN)
        Py_RETURN_NONE;
    Py_ssize_t plen = (Py_ssize_t)le_uint(b + pkt, 3);
    int seq = b[pkt + 3];
    signed char semi = 0;
    if (plen > n - pkt - PACKET_HEADER_LEN || plen < self->packet + HEADER_LEN + 4 ||
        b[pkt + PACKET_HEADER_LEN] != 0)
        Py_RETURN_NONE;
    if (self->packet == 3) {
        int flag = b[pkt + PACKET_HEADER_LEN + 2];
        if (b[pkt + PACKET_HEADER_LEN + 1] != 0xEF || flag > 1)
            Py_RETURN_NONE;
        semi = (signed char)(1 + flag);  /* 1: no ACK wanted, 2: ACK requested */
    }
    pos = pkt + PACKET_HEADER_LEN + self->packet;
    const unsigned char *h = b + pos;
    unsigned long long log_pos = le_uint(h + 13, 4), flags = le_uint(h + 17, 2);
    Py_ssize_t size = (Py_ssize_t)le_uint(h + 9, 4);
    int code = h[4];
    int layout = self->body[code];
    if (size != plen - self->packet || !log_pos || (flags & LOG_EVENT_ARTIFICIAL_F) ||
        (long long)log_pos - size != self->at)
        Py_RETURN_NONE;  /* the stream's coordinates: an event right after the last one */
    if (line_crc32(h, size) != CRC32_RESIDUE)
        Py_RETURN_NONE;  /* a mismatch is an error: the Python path words it */
    const unsigned char *body = h + HEADER_LEN;
    Py_ssize_t blen = size - HEADER_LEN - 4;
    LineRows rows = {NULL, NULL, NULL, 0, 0, 0};
    char summary[4 * (SUMMARY_MAX + 1) + 4];
    int slen;
    PyObject *gtid = NULL;  /* a GTID event's own GTID */
    long flags2 = -1;
    if (!self->trx && layout != BODY_MARIADB_GTID)
        Py_RETURN_NONE;  /* outside a transaction: the Python path */
    switch (layout) {
    case BODY_MARIADB_GTID: {  /* decode_mariadb_gtid's common shape (as _line.c reads it) */
        if (blen < 13)
            Py_RETURN_NONE;
        flags2 = body[12];
        if (flags2 & (FL_PREPARED_XA | FL_COMPLETED_XA | FL_GROUP_COMMIT_ID))
            Py_RETURN_NONE;
        for (Py_ssize_t q = 13; q < blen; q++)
            if (body[q])
                Py_RETURN_NONE;
        slen = snprintf(summary, sizeof summary, "%llu-%llu-%llu", le_uint(body + 8, 4),
                        le_uint(h + 5, 4), le_uint(body, 8));
        gtid = PyUnicode_FromStringAndSize(summary, slen);
        if (gtid == NULL)
            return NULL;
        break;
    }
    case BODY_TEXT: {  /* ANNOTATE_ROWS: the statement (valid UTF-8: the decoder replaces
                        * what is not), its whitespace runs one space (" ".join(query.split())),
                        * cut as row_summary cuts (characters) */
        if (!kernel_valid_utf8(body, blen))
            Py_RETURN_NONE;
        Py_ssize_t k = 0, full = 0, cut = 0;  /* bytes kept, characters, bytes of 97 chars */
        int space = 0;
        for (Py_ssize_t q = 0; q < blen;) {
            unsigned char ch = body[q];
            int w = ch < 0x80 ? 1 : ch < 0xE0 ? 2 : ch < 0xF0 ? 3 : 4;
            if (is_space(body + q, w)) {
                space = full > 0;
                q += w;
                continue;
            }
            if (space) {
                if (full == SUMMARY_MAX - 3)
                    cut = k;
                if (full < SUMMARY_MAX + 1)
                    summary[k++] = ' ';
                full++;
                space = 0;
            }
            if (full == SUMMARY_MAX - 3)
                cut = k;
            if (full < SUMMARY_MAX + 1) {
                memcpy(summary + k, body + q, (size_t)w);
                k += w;
            }
            full++;
            q += w;
        }
        if (full > SUMMARY_MAX) {
            memcpy(summary + cut, "...", 3);
            k = cut + 3;
        }
        slen = (int)k;
        break;
    }
    case BODY_XID:
        if (code != XID_EVENT || blen < 8)
            Py_RETURN_NONE;
        slen = snprintf(summary, sizeof summary, "COMMIT xid=%llu", le_uint(body, 8));
        break;
    case BODY_TABLE_MAP: {
        switch (line_table_map_layout(self->tables, self->ctx_tables, body, blen, &rows)) {
        case 0: break;
        case 1: Py_RETURN_NONE;
        default: return NULL;
        }
        Py_ssize_t ncols = PyLong_AsSsize_t(PyTuple_GET_ITEM(rows.entry, 3));
        if (ncols < 0) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        slen = snprintf(summary, sizeof summary, "table_id=%llu %zd columns", le_uint(body, 6),
                        ncols);
        break;
    }
    case BODY_ROWS_V1: case BODY_ROWS_V2: {
        switch (line_rows_layout(self->tables, self->ctx_tables, code, layout, body, blen,
                                 &rows)) {
        case 0: break;
        case 1: Py_RETURN_NONE;
        default: return NULL;
        }
        Py_ssize_t start = rows.start + pos + HEADER_LEN, end = rows.end + pos + HEADER_LEN;
        Py_ssize_t count = kernel_count_images(bobj, start, end, rows.kind, rows.rb, rows.ra);
        if (count < 0) {  /* damaged images: the Python path says where */
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        slen = snprintf(summary, sizeof summary, "%zd row%s", count, count != 1 ? "s" : "");
        break;
    }
    default:
        Py_RETURN_NONE;
    }
    /* the table's entry among the run's (the few tables of a transaction: a short search) */
    int entry = -1;
    if (rows.entry != NULL) {
        Py_ssize_t k = PyList_GET_SIZE(self->entries);
        for (Py_ssize_t i = 0; i < k; i++)
            if (PyList_GET_ITEM(self->entries, i) == rows.entry) {
                entry = (int)i;
                break;
            }
        if (entry < 0) {
            if (PyList_Append(self->entries, rows.entry) < 0)
                return NULL;
            entry = (int)k;
        }
    }
    if (self->rows == 0) {  /* the run's transaction and state: as they are at its first row */
        PyObject *g = PyList_New(1);
        if (g == NULL) {
            Py_XDECREF(gtid);
            return NULL;
        }
        PyObject *open = self->gtid != NULL ? self->gtid : Py_None;
        Py_INCREF(open);
        PyList_SET_ITEM(g, 0, open);
        Py_XSETREF(self->gtids, g);
        self->cur = 0;
        Py_XINCREF(self->state);
        Py_XSETREF(self->run_state, self->state);
    }
    if (gtid != NULL) {
        int rc = PyList_Append(self->gtids, gtid);
        if (rc < 0) {
            Py_DECREF(gtid);
            return NULL;
        }
        self->cur = PyList_GET_SIZE(self->gtids) - 1;
    }
    int32_t gi = (int32_t)self->cur;
    double t = self->time;
    long long frame = self->frame, len = plen, lp = (long long)log_pos, fpos = self->at;
    long long offset = (long long)(base + pkt);
    short sq = (short)seq;
    unsigned char cd = (unsigned char)code;
    uint32_t crc = line_crc32(b + pkt + PACKET_HEADER_LEN, plen);
    int32_t ent = entry;
    if (put(&self->text, summary, slen) < 0) {
        Py_XDECREF(gtid);
        return NULL;
    }
    uint64_t ends = (uint64_t)self->text.len;
    if (PUT_VAL(C_TIME, t) < 0 || PUT_VAL(C_FRAME, frame) < 0 || PUT_VAL(C_LEN, len) < 0 ||
        PUT_VAL(C_SEQ, sq) < 0 || PUT_VAL(C_SEMI, semi) < 0 || PUT_VAL(C_CODE, cd) < 0 ||
        PUT_VAL(C_LOG_POS, lp) < 0 || PUT_VAL(C_FPOS, fpos) < 0 ||
        PUT_VAL(C_OFFSET, offset) < 0 || PUT_VAL(C_CRC, crc) < 0 || PUT_VAL(C_ENTRY, ent) < 0 ||
        PUT_VAL(C_GTID, gi) < 0 || PUT_VAL(C_ENDS, ends) < 0) {
        Py_XDECREF(gtid);
        return NULL;
    }
    self->rows++;
    if (code == XID_EVENT)
        self->trx = 0;  /* an XID ends the transaction (wire/binlog/coords.py moved) */
    else if (gtid != NULL)
        self->trx = 1;  /* a GTID begins one */
    /* (type code, log_pos, its own GTID, flags2, query): what stream_run moves the
     * coordinates by (CoordTracker.written) */
    PyObject *out = Py_BuildValue("(iKOOO)", code, log_pos, gtid != NULL ? gtid : Py_None,
                                  Py_None, Py_None);
    Py_XDECREF(gtid);
    if (out != NULL && flags2 >= 0) {
        PyObject *f2 = PyLong_FromLong(flags2);
        if (f2 == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        Py_SETREF(PyTuple_GET_ITEM(out, 3), f2);
    }
    return out;
}

/* take() -> (rows, (time, frame, length, seq, semi, code, log_pos, file_pos, offset, crc,
 * entry, gtid, summary ends) as bytes of the native layouts d q q h b B q q q I i i Q, the
 * summaries' UTF-8 bytes, the entries list, the run's gtids, the run's state); the buffers
 * are emptied */
static PyObject *
ix_take(IndexRows *self, PyObject *unused)
{
    (void)unused;
    PyObject *cols = PyTuple_New(C_COUNT);
    if (cols == NULL)
        return NULL;
    for (int i = 0; i < C_COUNT; i++) {
        PyObject *v = PyBytes_FromStringAndSize(self->col[i].buf, self->col[i].len);
        if (v == NULL) {
            Py_DECREF(cols);
            return NULL;
        }
        PyTuple_SET_ITEM(cols, i, v);
    }
    PyObject *fresh = PyList_New(0);
    PyObject *out = fresh == NULL ? NULL : Py_BuildValue(
        "(nNy#OOO)", self->rows, cols, self->text.buf ? self->text.buf : "", self->text.len, self->entries,
        self->gtids ? self->gtids : Py_None, self->run_state ? self->run_state : Py_None);
    if (out == NULL) {
        Py_XDECREF(fresh);
        return NULL;
    }
    for (int i = 0; i < C_COUNT; i++)
        self->col[i].len = 0;
    self->text.len = 0;
    self->rows = 0;
    Py_XSETREF(self->entries, fresh);
    Py_CLEAR(self->gtids);
    Py_CLEAR(self->run_state);
    return out;
}

static PyObject *
ix_layouts(IndexRows *self, PyObject *arg)
{
    Py_buffer v;
    if (PyObject_GetBuffer(arg, &v, PyBUF_SIMPLE) < 0)
        return NULL;
    if (v.len != 256) {
        PyBuffer_Release(&v);
        PyErr_SetString(PyExc_ValueError, "layouts(bodies): 256 body layouts");
        return NULL;
    }
    const unsigned char *l = v.buf;
    for (int i = 0; i < 256; i++)
        self->body[i] = l[i] <= BODY_LAST ? l[i] : BODY_NONE;
    PyBuffer_Release(&v);
    Py_RETURN_NONE;
}

static PyMethodDef ix_methods[] = {
    {"take", (PyCFunction)ix_take, METH_NOARGS,
     "take() -> (rows, columns, summaries, entries, gtid, state): the run written so far"},
    {"layouts", (PyCFunction)ix_layouts, METH_O,
     "layouts(bodies): each type code's body layout (render/line_layout.py BODY_*)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef ix_members[] = {
    {"gtid", T_OBJECT, offsetof(IndexRows, gtid), 0,
     "the open transaction's GTID (str) or None"},
    {"state", T_OBJECT, offsetof(IndexRows, state), 0,
     "what Python keeps with a run (handed back by take())"},
    {"ctx_tables", T_OBJECT, offsetof(IndexRows, ctx_tables), 0,
     "the decoder's TABLE_MAPs (DecodeContext.tables), read only"},
    {"tables", T_OBJECT, offsetof(IndexRows, tables), 0,
     "table id -> the entry of the table (render/line_layout.py LineContext)"},
    {"crc", T_INT, offsetof(IndexRows, crc), 0, "1: CRC32 in force and verified"},
    {"packet", T_INT, offsetof(IndexRows, packet), 0,
     "1 or 3: the event after that many bytes of the payload (OK byte, semi-sync header)"},
    {"trx", T_INT, offsetof(IndexRows, trx), 0,
     "1: inside a transaction (Python sets it; an XID taken clears it)"},
    {"at", T_LONGLONG, offsetof(IndexRows, at), 0,
     "where the next event starts in its file (-1: not known)"},
    {"frame", T_LONGLONG, offsetof(IndexRows, frame), 0, "the capture frame of the packets"},
    {"time", T_DOUBLE, offsetof(IndexRows, time), 0, "that frame's time"},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject IndexRowsType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "binlogscope._native._kernel.IndexRows",
    .tp_basicsize = sizeof(IndexRows),
    .tp_dealloc = (destructor)ix_dealloc,
    .tp_call = (ternaryfunc)ix_call,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "IndexRows(): the TUI index's rows of a stream's event packets from declared "
              "layouts (inspector/sources/packet_index.py)",
    .tp_methods = ix_methods,
    .tp_members = ix_members,
    .tp_init = (initproc)ix_init,
    .tp_new = PyType_GenericNew,
};
