/*
 * binlogscope._native._kernel: the text pieces of EventLines (_line.c) - the CRC32 that
 * verifies an event, numbers padded as the --summary template asks, the statement text as
 * render/text.py shortens it, a str as JSON text, and the test of UTF-8 text in which
 * render/escape.py escape_controls escapes nothing. No layout or template here: the callers
 * in _line.c interpret those.
 *
 * The CRC32 is written here rather than taken from zlib: the extension is built where only
 * gcc and the Python headers are sure to be (scripts/install-deps.sh), and zlib's headers
 * are not among them; tests compare it with zlib.crc32 (EventLines.crc32).
 */
#include "_kernel.h"

/* ------------------------------------------------------------------ CRC32 (slice by 8) */
static uint32_t crc_table[8][256];

void
line_crc_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0xEDB88320u : c >> 1;
        crc_table[0][i] = c;
    }
    for (int s = 1; s < 8; s++)
        for (int i = 0; i < 256; i++)
            crc_table[s][i] = (crc_table[s - 1][i] >> 8) ^ crc_table[0][crc_table[s - 1][i] & 0xff];
}

uint32_t
line_crc32(const unsigned char *p, Py_ssize_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    while (n >= 8) {
        uint32_t lo = (uint32_t)le_uint(p, 4) ^ c, hi = (uint32_t)le_uint(p + 4, 4);
        c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
            crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
            crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
            crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n-- > 0)
        c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

/* an unsigned number right-aligned in ``width`` characters (Python's {v:>width}) */
int
line_put_padded(JsonOut *o, unsigned long long v, int width)
{
    char tmp[24];
    int n = put_uint(tmp, v, 1);
    if (grow(o, n > width ? n : width) < 0)
        return -1;
    for (int k = n; k < width; k++)
        o->buf[o->len++] = ' ';
    memcpy(o->buf + o->len, tmp, (size_t)n);
    o->len += n;
    return 0;
}

/* whitespace (a space: the only one a statement the kernel writes has) runs as one space,
 * none at the ends */
#define QUERY_WIDTH 80
static Py_ssize_t
squeeze(const unsigned char *s, Py_ssize_t n, char *out)
{
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] == ' ') {
            if (m && out[m - 1] != ' ')
                out[m++] = ' ';
        } else {
            out[m++] = (char)s[i];
        }
    }
    if (m && out[m - 1] == ' ')
        m--;
    return m;
}

/* bytes of the UTF-8 sequence a lead byte starts */
#define UTF8_LEN(c) ((c) < 0x80 ? 1 : (c) < 0xE0 ? 2 : (c) < 0xF0 ? 3 : 4)

/* the bytes of the first k code points of s[0:n] (valid UTF-8) */
static Py_ssize_t
cp_bytes(const unsigned char *s, Py_ssize_t n, Py_ssize_t k)
{
    Py_ssize_t i = 0;
    while (k-- > 0 && i < n)
        i += UTF8_LEN(s[i]);
    return i < n ? i : n;
}

/* the code points of s[0:n] (valid UTF-8) */
static Py_ssize_t
cp_count(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t k = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        k += (s[i] & 0xC0) != 0x80;
    return k;
}

/* render/text.py _query_text of a statement (valid UTF-8) of printable ASCII and the BMP
 * characters ``printable`` (Python's bitmap: printable, not whitespace; NULL: ASCII only)
 * marks - 1: decline any other. Whitespace runs as one space, at most 80 characters (77 and
 * "...") */
int
line_put_query_text(JsonOut *o, const unsigned char *s, Py_ssize_t n,
                    const unsigned char *printable)
{
    Py_ssize_t ncp = 0;
    for (Py_ssize_t i = 0; i < n; ncp++) {
        unsigned c = s[i];
        if (c < 0x80) {
            if (c < 0x20 || c == 0x7f)
                return 1;
            i++;
            continue;
        }
        if (printable == NULL || c >= 0xF0 || i + UTF8_LEN(c) > n)
            return 1;
        unsigned cp = c < 0xE0 ? ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu)
                               : ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) |
                                 (s[i + 2] & 0x3Fu);
        if (!(printable[cp >> 3] & (1u << (cp & 7))))
            return 1;
        i += UTF8_LEN(c);
    }
    if (ncp > QUERY_WIDTH) {
        Py_ssize_t head = cp_bytes(s, n, QUERY_WIDTH + 1);
        if (s[0] != ' ' && s[cp_bytes(s, n, QUERY_WIDTH)] != ' ' &&
            memmem(s, (size_t)head, "  ", 2) == NULL) {
            if (put(o, (const char *)s, cp_bytes(s, n, QUERY_WIDTH - 3)) < 0)
                return -1;
            return PUT_LIT(o, "...");
        }
    }
    Py_ssize_t head = cp_bytes(s, n, 4 * QUERY_WIDTH);
    char *q = PyMem_Malloc((size_t)n + 1);
    if (q == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t m = squeeze(s, head, q);
    Py_ssize_t mcp = cp_count((const unsigned char *)q, m);
    if (mcp <= QUERY_WIDTH && ncp > 4 * QUERY_WIDTH) {
        m = squeeze(s, n, q);
        mcp = cp_count((const unsigned char *)q, m);
    }
    int rc = mcp <= QUERY_WIDTH
                 ? put(o, q, m)
                 : (put(o, q, cp_bytes((const unsigned char *)q, m, QUERY_WIDTH - 3)) < 0
                        ? -1 : PUT_LIT(o, "..."));
    PyMem_Free(q);
    return rc;
}

/* text of a str as a JSON string; 1: decline (not valid Unicode) */
int
line_put_text(JsonOut *o, PyObject *s)
{
    Py_ssize_t len;
    const char *u = PyUnicode_AsUTF8AndSize(s, &len);
    if (u == NULL) {
        PyErr_Clear();
        return 1;
    }
    return kernel_put_str(o, u, len);
}

/* 1: s[0:n] is UTF-8 text in which render/escape.py escape_controls escapes nothing (no C0
 * control but tab and newline, no DEL, C1 control, bidirectional embedding, override or
 * isolate, no surrogate) */
int
line_text_plain(const unsigned char *s, Py_ssize_t n)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    if (!kernel_valid_utf8(s, n))
        return 0;
    Py_ssize_t i = 0;
    while (i < n) {
        if (i + 8 <= n) {
            uint64_t x, d;
            memcpy(&x, s + i, 8);
            d = x ^ (ones * 0x7f);
            if (!(((x - ones * 0x20) & ~x) | ((d - ones) & ~d) | (x & highs))) {
                i += 8;  /* 8 printable ASCII bytes */
                continue;
            }
        }
        unsigned char c = s[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
                return 0;
            i++;
            continue;
        }
        if (c == 0xC2 && s[i + 1] < 0xA0)
            return 0;  /* U+0080-U+009F */
        if (c == 0xE2 && ((s[i + 1] == 0x80 && s[i + 2] >= 0xAA && s[i + 2] <= 0xAE) ||
                          (s[i + 1] == 0x81 && s[i + 2] >= 0xA6 && s[i + 2] <= 0xA9)))
            return 0;  /* U+202A-U+202E, U+2066-U+2069 */
        i += c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    }
    return 1;
}

