/* _cjson: the ``--json`` line of a decoded packet, written in C.
 *
 * packet_line(head, frame, timestamp, ev, type_names) returns exactly the text that
 * binlogscope.cli_pcap.JsonLines.line gives for a CaptureItem holding the PacketDecoded ``ev``
 * (``head`` is the per-flow prefix '{"flow": ..., "flow_id": N, "frame": '), or None when the
 * packet is not an ordinary one (a type this code does not write itself, a record-mode tree, a
 * string it cannot encode, an event type whose JSON name is not in ``type_names`` yet): the
 * caller then runs the Python writer, which is the definition. Values that are not plain
 * str/int/None inside row images go through the Python ``value`` function given to
 * configure(), so dates, decimals, bytes and the rest are written by the same code as before.
 *
 * It reads the same attributes the Python writer reads and writes them in the same order; the
 * text is byte for byte json.dumps(item_json(item), ensure_ascii=False) (tested on every packet
 * of every capture and fixture, tests/drivers/test_pcap_fast.py).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

/* ------------------------------------------------------------------ output buffer */
typedef struct {
    char *p;
    Py_ssize_t n, cap;
    char small[2048];
} Buf;

static void buf_init(Buf *b) { b->p = b->small; b->n = 0; b->cap = sizeof b->small; }
static void buf_free(Buf *b) { if (b->p != b->small) PyMem_Free(b->p); }

static int
buf_grow(Buf *b, Py_ssize_t more)
{
    Py_ssize_t cap = b->cap;
    while (cap - b->n < more) cap *= 2;
    char *q;
    if (b->p == b->small) {
        q = PyMem_Malloc((size_t)cap);
        if (q) memcpy(q, b->p, (size_t)b->n);
    } else {
        q = PyMem_Realloc(b->p, (size_t)cap);
    }
    if (!q) { PyErr_NoMemory(); return -1; }
    b->p = q;
    b->cap = cap;
    return 0;
}

static inline int
put(Buf *b, const char *s, Py_ssize_t n)
{
    if (b->cap - b->n < n && buf_grow(b, n) < 0) return -1;
    memcpy(b->p + b->n, s, (size_t)n);
    b->n += n;
    return 0;
}

#define PUTS(b, lit) put((b), (lit), (Py_ssize_t)(sizeof(lit) - 1))

/* ------------------------------------------------------------------ configuration */
static PyObject *value_fn;      /* render.json_lines.value: any row value -> its JSON text */
static PyObject *scalar_fn;     /* render.json_lines.scalar */
static PyObject *image_fn;      /* render.json_lines.image (images with non-str keys) */
static PyObject *peer_server, *peer_client;
/* the names read with getattr (the semi-sync flag, a body's optional fields, a row's images)
 * and the kind of a packet item */
static PyObject *s_flag, *s_schema, *s_table, *s_rows, *s_gtid, *s_query, *s_before, *s_after,
    *s_event_kind;
static int ready;

/* getattr(o, name, None) without raising (and clearing) AttributeError: 1 found, 0 absent,
 * -1 error */
static inline int
lookup(PyObject *o, PyObject *name, PyObject **out)
{
#if PY_VERSION_HEX >= 0x030D0000
    return PyObject_GetOptionalAttr(o, name, out);
#else
    return _PyObject_LookupAttr(o, name, out);
#endif
}

/* ------------------------------------------------------------------ direct slot reads
 * The dataclasses read here (PacketDecoded, DecodedEvent, EventHeader, CaptureItem) use
 * __slots__: configure() finds each field's offset (from its member descriptor) so a
 * field of an object of exactly that type is read without the attribute machinery; any other
 * object goes through getattr. */
#include <structmember.h>

enum { P_DIRECTION, P_OFFSET, P_SEQ, P_PAYLOAD_LENGTH, P_KIND, P_SEMI_SYNC, P_BINLOG_EVENT,
       P_ERROR, P_NODE, P_COUNT };
enum { D_OFFSET, D_HEADER, D_BODY, D_CHECKSUM_OK, D_COUNT };
enum { H_TIMESTAMP, H_TYPE_CODE, H_SERVER_ID, H_EVENT_SIZE, H_LOG_POS, H_FLAGS, H_COUNT };
enum { I_FLOW, I_KIND, I_FRAME, I_TIMESTAMP, I_EVENT, I_COUNT };

typedef struct {
    PyTypeObject *type;  /* NULL: not configured (getattr always) */
    Py_ssize_t off[10];
    PyObject *names[10];
} Slots;

static Slots sl_pkt, sl_dec, sl_hdr, sl_item;

/* a new reference to field k of o (NULL with an error set when it has none) */
static inline PyObject *
field_of(PyObject *o, const Slots *s, int k)
{
    if (Py_TYPE(o) == s->type) {
        PyObject *v = *(PyObject **)((char *)o + s->off[k]);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
    }
    return PyObject_GetAttr(o, s->names[k]);
}

static int
slots_setup(Slots *s, PyObject *type, const char *const *names, int n)
{
    if (!PyType_Check(type)) {
        PyErr_SetString(PyExc_TypeError, "configure: a class expected");
        return -1;
    }
    for (int k = 0; k < n; k++) {
        PyObject *name = PyUnicode_InternFromString(names[k]);
        if (name == NULL)
            return -1;
        Py_XSETREF(s->names[k], name);
        PyObject *d = PyObject_GetAttr(type, name);
        if (d == NULL)
            return -1;
        int ok = Py_IS_TYPE(d, &PyMemberDescr_Type) &&
                 ((PyMemberDescrObject *)d)->d_member->type == T_OBJECT_EX;
        if (ok)
            s->off[k] = ((PyMemberDescrObject *)d)->d_member->offset;
        Py_DECREF(d);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "configure: %R.%s is not a slot",
                         type, names[k]);
            return -1;
        }
    }
    Py_INCREF(type);
    Py_XSETREF(s->type, (PyTypeObject *)type);
    return 0;
}

/* configure(value, scalar, image, Peer.SERVER, Peer.CLIENT, PacketDecoded, DecodedEvent,
 * EventHeader, CaptureItem) */
static PyObject *
configure(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *v, *sc, *im, *ps, *pc, *p, *d, *h, *i;
    if (!PyArg_ParseTuple(args, "OOOOOOOOO", &v, &sc, &im, &ps, &pc, &p, &d, &h, &i))
        return NULL;
    PyObject **dst[] = {&value_fn, &scalar_fn, &image_fn, &peer_server, &peer_client};
    PyObject *vals[] = {v, sc, im, ps, pc};
    for (int k = 0; k < 5; k++) {
        Py_INCREF(vals[k]);
        Py_XSETREF(*dst[k], vals[k]);
    }
    struct { PyObject **dst; const char *name; } names[] = {
        {&s_flag, "flag"}, {&s_schema, "schema"}, {&s_table, "table"}, {&s_rows, "rows"},
        {&s_gtid, "gtid"}, {&s_query, "query"}, {&s_before, "before"}, {&s_after, "after"},
        {&s_event_kind, "event"},
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        if (!*names[k].dst && !(*names[k].dst = PyUnicode_InternFromString(names[k].name)))
            return NULL;
    }
    static const char *const pn[] = {"direction", "offset", "seq", "payload_length", "kind",
                                     "semi_sync", "binlog_event", "error", "node"};
    static const char *const dn[] = {"offset", "header", "body", "checksum_ok"};
    static const char *const hn[] = {"timestamp", "type_code", "server_id", "event_size",
                                     "log_pos", "flags"};
    static const char *const in[] = {"flow", "kind", "frame", "timestamp", "event"};
    if (slots_setup(&sl_pkt, p, pn, P_COUNT) < 0 || slots_setup(&sl_dec, d, dn, D_COUNT) < 0 ||
        slots_setup(&sl_hdr, h, hn, H_COUNT) < 0 || slots_setup(&sl_item, i, in, I_COUNT) < 0)
        return NULL;
    ready = 1;
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------ values */
/* the string as json.encoder.encode_basestring writes it (ensure_ascii=False): 0 ok,
 * -1 error (a Python error is set; a str that has no UTF-8 form - lone surrogates - is one) */
static int
put_string(Buf *b, PyObject *s)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (!u) return -1;
    /* worst case: every byte as \u00XX */
    if (b->cap - b->n < n * 6 + 2 && buf_grow(b, n * 6 + 2) < 0) return -1;
    char *o = b->p + b->n;
    *o++ = '"';
    static const char hex[] = "0123456789abcdef";
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)u[i];
        if (c >= 0x20 && c != '"' && c != '\\') { *o++ = (char)c; continue; }
        *o++ = '\\';
        switch (c) {
        case '"': *o++ = '"'; break;
        case '\\': *o++ = '\\'; break;
        case '\n': *o++ = 'n'; break;
        case '\r': *o++ = 'r'; break;
        case '\t': *o++ = 't'; break;
        case '\b': *o++ = 'b'; break;
        case '\f': *o++ = 'f'; break;
        default:
            *o++ = 'u'; *o++ = '0'; *o++ = '0';
            *o++ = hex[c >> 4]; *o++ = hex[c & 15];
        }
    }
    *o++ = '"';
    b->n = o - b->p;
    return 0;
}

/* an exact int, as int.__repr__ */
static int
put_int(Buf *b, PyObject *v)
{
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow) {
        if (x == -1 && PyErr_Occurred()) return -1;
        char tmp[24];
        int k = 0;
        unsigned long long ux = x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x;
        do { tmp[k++] = (char)('0' + ux % 10); ux /= 10; } while (ux);
        if (b->cap - b->n < k + 1 && buf_grow(b, k + 1) < 0) return -1;
        if (x < 0) b->p[b->n++] = '-';
        while (k) b->p[b->n++] = tmp[--k];
        return 0;
    }
    PyObject *s = PyObject_Str(v);
    if (!s) return -1;
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    int r = u ? put(b, u, n) : -1;
    Py_DECREF(s);
    return r;
}

/* the text a Python function returns for v (a str; its UTF-8 appended) */
static int
put_call(Buf *b, PyObject *fn, PyObject *v)
{
    PyObject *s = PyObject_CallOneArg(fn, v);
    if (!s) return -1;
    if (!PyUnicode_Check(s)) {
        Py_DECREF(s);
        PyErr_SetString(PyExc_TypeError, "a JSON writer returned a non-str");
        return -1;
    }
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    int r = u ? put(b, u, n) : -1;
    Py_DECREF(s);
    return r;
}

/* a float as float.__repr__ (finite): the packets of one frame share their timestamp, so
 * the last text is kept */
static double last_float;
static char last_float_text[40];
static Py_ssize_t last_float_len = -1;

static int
put_float(Buf *b, double d)
{
    if (last_float_len >= 0 && memcmp(&d, &last_float, sizeof d) == 0)
        return put(b, last_float_text, last_float_len);
    char *t = PyOS_double_to_string(d, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!t)
        return -1;
    Py_ssize_t n = (Py_ssize_t)strlen(t);
    int r = put(b, t, n);
    if (n < (Py_ssize_t)sizeof last_float_text) {
        memcpy(last_float_text, t, (size_t)n);
        last_float = d;
        last_float_len = n;
    }
    PyMem_Free(t);
    return r;
}

/* json_lines.scalar(v) */
static int
put_scalar(Buf *b, PyObject *v)
{
    if (PyUnicode_CheckExact(v)) return put_string(b, v);
    if (PyLong_CheckExact(v)) return put_int(b, v);
    if (v == Py_None) return PUTS(b, "null");
    if (v == Py_True) return PUTS(b, "true");
    if (v == Py_False) return PUTS(b, "false");
    return put_call(b, scalar_fn, v);
}

/* json_lines.image(img) */
static int
put_image(Buf *b, PyObject *img)
{
    if (img == Py_None) return PUTS(b, "null");
    if (!PyDict_Check(img)) return put_call(b, image_fn, img);
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(img, &pos, &k, &v)) {
        if (!PyUnicode_CheckExact(k)) return put_call(b, image_fn, img);
    }
    if (PUTS(b, "{") < 0) return -1;
    pos = 0;
    int first = 1;
    while (PyDict_Next(img, &pos, &k, &v)) {
        if (!first && PUTS(b, ", ") < 0) return -1;
        first = 0;
        if (put_string(b, k) < 0 || PUTS(b, ": ") < 0) return -1;
        int r;
        if (PyUnicode_CheckExact(v)) r = put_string(b, v);
        else if (PyLong_CheckExact(v)) r = put_int(b, v);
        else if (v == Py_None) r = PUTS(b, "null");
        else r = put_call(b, value_fn, v);
        if (r < 0) return -1;
    }
    return PUTS(b, "}");
}

/* json_lines.rows(rs) (rs not None) */
static int
put_rows(Buf *b, PyObject *rs)
{
    PyObject *it = PyObject_GetIter(rs);
    if (!it) return -1;
    if (PUTS(b, "[") < 0) goto fail;
    PyObject *row;
    int first = 1;
    while ((row = PyIter_Next(it)) != NULL) {
        int r = first ? 0 : PUTS(b, ", ");
        first = 0;
        if (r == 0) {
            if (PyDict_Check(row)) {
                PyObject *before = PyDict_GetItemWithError(row, s_before);
                if (!before && PyErr_Occurred()) r = -1;
                PyObject *after = r ? NULL : PyDict_GetItemWithError(row, s_after);
                if (!r && !after && PyErr_Occurred()) r = -1;
                if (!r) r = PUTS(b, "{\"before\": ");
                if (!r) r = put_image(b, before ? before : Py_None);
                if (!r) r = PUTS(b, ", \"after\": ");
                if (!r) r = put_image(b, after ? after : Py_None);
                if (!r) r = PUTS(b, "}");
            } else {
                r = PUTS(b, "{\"before\": null, \"after\": null}");
            }
        }
        Py_DECREF(row);
        if (r < 0) goto fail;
    }
    if (PyErr_Occurred()) goto fail;
    Py_DECREF(it);
    return PUTS(b, "]");
fail:
    Py_DECREF(it);
    return -1;
}

/* ------------------------------------------------------------------ the line */
enum { OK = 0, ERR = -1, DECLINE = 1 };

/* a field that must be an exact int, written as such; DECLINE when it is not */
static int
put_int_field(Buf *b, PyObject *o, const Slots *s, int k)
{
    PyObject *v = field_of(o, s, k);
    if (!v) return ERR;
    int r = PyLong_CheckExact(v) ? put_int(b, v) : DECLINE;
    Py_DECREF(v);
    return r;
}

static int
put_scalar_field(Buf *b, PyObject *o, const Slots *s, int k)
{
    PyObject *v = field_of(o, s, k);
    if (!v) return ERR;
    int r = put_scalar(b, v);
    Py_DECREF(v);
    return r;
}

/* getattr(body, name, None) written as a JSON string when it is a str, else null */
static int
put_opt_string(Buf *b, PyObject *body, PyObject *name)
{
    PyObject *v;
    int found = lookup(body, name, &v);
    if (found < 0) return ERR;
    int r = found && PyUnicode_Check(v) ? put_string(b, v) : PUTS(b, "null");
    Py_XDECREF(v);
    return r;
}

#define TRY(expr) do { int r_ = (expr); if (r_) return r_; } while (0)

static int
write_line(Buf *b, PyObject *head, PyObject *frame, PyObject *ts, PyObject *ev,
           PyObject *type_names)
{
    Py_ssize_t n;
    const char *u;
    PyObject *v;
    int r;

    /* record mode (a tree on a packet with no event): the Python writer */
    v = field_of(ev, &sl_pkt, P_BINLOG_EVENT);
    if (!v) return ERR;
    PyObject *bev = v;  /* owned below */
    if (bev == Py_None) {
        PyObject *node = field_of(ev, &sl_pkt, P_NODE);
        if (!node) { Py_DECREF(bev); return ERR; }
        int has = node != Py_None;
        Py_DECREF(node);
        if (has) { Py_DECREF(bev); return DECLINE; }
    }
    r = OK;
    do {
        u = PyUnicode_AsUTF8AndSize(head, &n);
        if (!u) { r = ERR; break; }
        if ((r = put(b, u, n))) break;
        if (!PyLong_CheckExact(frame)) { r = DECLINE; break; }
        if ((r = put_int(b, frame))) break;
        if ((r = PUTS(b, ", \"timestamp\": "))) break;
        if (PyFloat_CheckExact(ts)) {
            double d = PyFloat_AS_DOUBLE(ts);
            if (!(d > -Py_HUGE_VAL && d < Py_HUGE_VAL)) { r = DECLINE; break; }
            if ((r = put_float(b, d))) break;
        } else if ((r = put_scalar(b, ts))) {
            break;
        }
        if ((r = PUTS(b, ", \"direction\": "))) break;
        v = field_of(ev, &sl_pkt, P_DIRECTION);
        if (!v) { r = ERR; break; }
        if (v == peer_server) r = PUTS(b, "\"server\"");
        else if (v == peer_client) r = PUTS(b, "\"client\"");
        else r = DECLINE;
        Py_DECREF(v);
        if (r) break;
        if ((r = PUTS(b, ", \"seq\": "))) break;
        if ((r = put_int_field(b, ev, &sl_pkt, P_SEQ))) break;
        if ((r = PUTS(b, ", \"payload_length\": "))) break;
        if ((r = put_int_field(b, ev, &sl_pkt, P_PAYLOAD_LENGTH))) break;
        if ((r = PUTS(b, ", \"semi_sync\": "))) break;
        v = field_of(ev, &sl_pkt, P_SEMI_SYNC);
        if (!v) { r = ERR; break; }
        if (v == Py_None) {
            r = PUTS(b, "null");
        } else {
            PyObject *flag = PyObject_GetAttr(v, s_flag);
            if (!flag) {
                r = ERR;
            } else {
                long f = PyLong_CheckExact(flag) ? PyLong_AsLong(flag) : -1;
                if (f == -1 && PyErr_Occurred()) r = ERR;
                else if (!PyLong_CheckExact(flag)) r = DECLINE;
                else r = (f & 1) ? PUTS(b, "{\"ack_requested\": true}")
                                 : PUTS(b, "{\"ack_requested\": false}");
                Py_DECREF(flag);
            }
        }
        Py_DECREF(v);
        if (r) break;
        if (bev == Py_None) {
            if ((r = PUTS(b, ", \"kind\": "))) break;
            if ((r = put_scalar_field(b, ev, &sl_pkt, P_KIND))) break;
        } else if ((r = PUTS(b, ", \"kind\": \"binlog_event\""))) {
            break;
        }
        if ((r = PUTS(b, ", \"packet_offset\": "))) break;
        if ((r = put_int_field(b, ev, &sl_pkt, P_OFFSET))) break;
        if ((r = PUTS(b, ", \"error\": "))) break;
        if ((r = put_scalar_field(b, ev, &sl_pkt, P_ERROR))) break;
        if (bev == Py_None) {
            r = PUTS(b, "}");
            break;
        }
        if ((r = PUTS(b, ", \"offset\": "))) break;
        if ((r = put_scalar_field(b, bev, &sl_dec, D_OFFSET))) break;
        if ((r = PUTS(b, ", \"event_type\": "))) break;
        PyObject *h = field_of(bev, &sl_dec, D_HEADER);
        if (!h) { r = ERR; break; }
        if (h == Py_None) {
            Py_DECREF(h);
            r = DECLINE;  /* rare (no header): the Python writer */
            break;
        }
        do {
            PyObject *code = field_of(h, &sl_hdr, H_TYPE_CODE);
            if (!code) { r = ERR; break; }
            PyObject *name = PyLong_CheckExact(code)
                ? PyDict_GetItemWithError(type_names, code) : NULL;
            if (!name) {
                r = PyErr_Occurred() ? ERR : DECLINE;
                Py_DECREF(code);
                break;
            }
            if (!PyUnicode_Check(name)) { r = DECLINE; Py_DECREF(code); break; }
            u = PyUnicode_AsUTF8AndSize(name, &n);
            r = u ? put(b, u, n) : ERR;
            if (!r) r = PUTS(b, ", \"type_code\": ");
            if (!r) r = put_int(b, code);
            Py_DECREF(code);
            if (r) break;
            if ((r = PUTS(b, ", \"event_timestamp\": "))) break;
            if ((r = put_int_field(b, h, &sl_hdr, H_TIMESTAMP))) break;
            if ((r = PUTS(b, ", \"server_id\": "))) break;
            if ((r = put_int_field(b, h, &sl_hdr, H_SERVER_ID))) break;
            if ((r = PUTS(b, ", \"event_size\": "))) break;
            if ((r = put_int_field(b, h, &sl_hdr, H_EVENT_SIZE))) break;
            if ((r = PUTS(b, ", \"log_pos\": "))) break;
            if ((r = put_int_field(b, h, &sl_hdr, H_LOG_POS))) break;
            if ((r = PUTS(b, ", \"flags\": "))) break;
            r = put_int_field(b, h, &sl_hdr, H_FLAGS);
        } while (0);
        Py_DECREF(h);
        if (r) break;
        if ((r = PUTS(b, ", \"checksum_ok\": "))) break;
        if ((r = put_scalar_field(b, bev, &sl_dec, D_CHECKSUM_OK))) break;
        PyObject *body = field_of(bev, &sl_dec, D_BODY);
        if (!body) { r = ERR; break; }
        if (body == Py_None) {
            Py_DECREF(body);
            r = PUTS(b, ", \"schema\": null, \"table\": null, \"rows\": null, \"gtid\": null, "
                        "\"query\": null}");
            break;
        }
        do {
            if ((r = PUTS(b, ", \"schema\": "))) break;
            if ((r = put_opt_string(b, body, s_schema))) break;
            if ((r = PUTS(b, ", \"table\": "))) break;
            if ((r = put_opt_string(b, body, s_table))) break;
            if ((r = PUTS(b, ", \"rows\": "))) break;
            PyObject *rows;
            int found = lookup(body, s_rows, &rows);
            if (found < 0) { r = ERR; break; }
            r = found && rows != Py_None ? put_rows(b, rows) : PUTS(b, "null");
            Py_XDECREF(rows);
            if (r) break;
            if ((r = PUTS(b, ", \"gtid\": "))) break;
            if ((r = put_opt_string(b, body, s_gtid))) break;
            if ((r = PUTS(b, ", \"query\": "))) break;
            if ((r = put_opt_string(b, body, s_query))) break;
            r = PUTS(b, "}");
        } while (0);
        Py_DECREF(body);
    } while (0);
    Py_DECREF(bev);
    return r;
}

/* the line as a new str (``b`` emptied first), None (new ref) when it declines, NULL on error;
 * a string with no UTF-8 form (lone surrogates) declines too */
static PyObject *
line_text(Buf *b, PyObject *head, PyObject *frame, PyObject *ts, PyObject *ev,
          PyObject *type_names)
{
    b->n = 0;
    int r = write_line(b, head, frame, ts, ev, type_names);
    if (r == OK)
        return PyUnicode_DecodeUTF8(b->p, b->n, NULL);
    if (r == DECLINE || PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        return Py_NewRef(Py_None);
    }
    return NULL;
}

static PyObject *
packet_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError,
                        "packet_line(head, frame, timestamp, ev, type_names)");
        return NULL;
    }
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "_cjson.configure() was not called");
        return NULL;
    }
    PyObject *head = args[0], *ev = args[3], *type_names = args[4];
    if (!PyUnicode_Check(head) || !PyDict_Check(type_names)
            || Py_TYPE(ev) != sl_pkt.type)
        Py_RETURN_NONE;
    Buf b;
    buf_init(&b);
    PyObject *out = line_text(&b, head, args[1], args[2], ev, type_names);
    buf_free(&b);
    return out;
}

/* packet_lines(items, i, heads, type_names, out) -> index
 * packet_line for items[i:], appended to ``out``, while each is a CaptureItem of kind "event"
 * holding a PacketDecoded whose flow has its head in ``heads`` and that packet_line writes;
 * returns the index of the first item it did not write (len(items): all of them). */
static PyObject *
packet_lines(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    if (nargs != 5 || !PyList_Check(args[0]) || !PyDict_Check(args[2]) ||
        !PyDict_Check(args[3]) || !PyList_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError,
                        "packet_lines(items: list, i, heads: dict, type_names: dict, out: list)");
        return NULL;
    }
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "_cjson.configure() was not called");
        return NULL;
    }
    PyObject *items = args[0], *heads = args[2], *type_names = args[3], *out = args[4];
    Py_ssize_t i = PyLong_AsSsize_t(args[1]);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    Buf b;
    buf_init(&b);
    for (; i < PyList_GET_SIZE(items); i++) {
        PyObject *item = PyList_GET_ITEM(items, i);
        if (Py_TYPE(item) != sl_item.type)
            break;
        PyObject *kind = *(PyObject **)((char *)item + sl_item.off[I_KIND]);
        PyObject *ev = *(PyObject **)((char *)item + sl_item.off[I_EVENT]);
        PyObject *flow = *(PyObject **)((char *)item + sl_item.off[I_FLOW]);
        PyObject *frame = *(PyObject **)((char *)item + sl_item.off[I_FRAME]);
        PyObject *ts = *(PyObject **)((char *)item + sl_item.off[I_TIMESTAMP]);
        if (!kind || !ev || !flow || !frame || !ts || Py_TYPE(ev) != sl_pkt.type)
            break;
        if (kind != s_event_kind) {
            int eq = PyUnicode_Check(kind) ? PyUnicode_Compare(kind, s_event_kind) : 1;
            if (eq == -1 && PyErr_Occurred()) {
                buf_free(&b);
                return NULL;
            }
            if (eq != 0)
                break;
        }
        PyObject *head = PyDict_GetItemWithError(heads, flow);
        if (head == NULL) {
            if (PyErr_Occurred()) {
                buf_free(&b);
                return NULL;
            }
            break;
        }
        if (!PyUnicode_Check(head))
            break;
        PyObject *line = line_text(&b, head, frame, ts, ev, type_names);
        if (line == Py_None) {
            Py_DECREF(line);
            break;
        }
        if (line == NULL || PyList_Append(out, line) < 0) {
            Py_XDECREF(line);
            buf_free(&b);
            return NULL;
        }
        Py_DECREF(line);
    }
    buf_free(&b);
    return PyLong_FromSsize_t(i);
}

static PyMethodDef methods[] = {
    {"configure", configure, METH_VARARGS,
     "configure(value, scalar, image, Peer.SERVER, Peer.CLIENT, PacketDecoded, DecodedEvent, "
     "EventHeader, CaptureItem)"},
    {"packet_lines", (PyCFunction)(void (*)(void))packet_lines, METH_FASTCALL,
     "packet_lines(items, i, heads, type_names, out) -> index of the first item not written"},
    {"packet_line", (PyCFunction)(void (*)(void))packet_line, METH_FASTCALL,
     "packet_line(head, frame, timestamp, ev, type_names) -> str | None"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_cjson",
    "The --json line of a decoded packet, in C (see binlogscope.render.json_lines).", -1,
    methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC
PyInit__cjson(void)
{
    return PyModule_Create(&module);
}
