"""The serving hot path: find the events of a binlog file and frame them as dump packets.

A dump sends every event as one packet (``0x00`` + the event) with the sequence id counting on,
exactly what mariadbd does when it reads a binlog file. Nothing is decoded: the only field read
is each event's ``event_size``.

* :func:`index_events` finds where the events of a file start (the chain of ``event_size``
  fields from offset 4). It is vectorized with numpy when numpy is there: events whose
  ``log_pos`` is their end offset and whose server id is one of the first events' are found in bulk
  (candidates where ``log_pos - event_size`` equals their own offset), and the chain through them
  is checked link by link; any gap (another server id, a ``log_pos`` that is not an end offset,
  a false candidate inside row data) is walked one event at a time, so the result is always the
  sequential walk's.
* :func:`frame_events` turns a run of events into the packets of a dump (numpy: one masked copy
  of the whole run plus the 5-byte packet headers scattered in; else a Python loop).

Events of 16 MiB or more (split into several packets) are not framed here: callers check
:func:`max_event_size` and use the general path.
"""

from __future__ import annotations

import importlib
import struct
from array import array
from typing import Any

_np: Any
try:  # numpy comes with matplotlib (a dependency); the pure-Python paths work without it
    _np = importlib.import_module("numpy")
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None

HEADER_LEN = 19
MAX_PAYLOAD = 0xFFFFFF
_U32 = struct.Struct("<I")
#: events framed per step (a few MB of a typical binlog)
CHUNK_EVENTS = 1 << 14


def have_numpy() -> bool:
    return _np is not None


# ------------------------------------------------------------------------------- the index
def index_events(data: bytes, *, vectorized: bool = True) -> tuple[array[int], int]:
    """Start offsets of the complete events of a binlog file's bytes (magic included), and the
    end offset of the last one. A truncated or damaged tail ends the walk, as in a sequential
    read (size below the header length, or an event running past the end)."""
    if vectorized and _np is not None and len(data) >= 1 << 16:
        return _index_numpy(data)
    return _index_python(data, 4, array("q"))


def _index_python(data: bytes, pos: int, out: array[int]) -> tuple[array[int], int]:
    n = len(data)
    unpack = _U32.unpack_from
    add = out.append
    while pos + HEADER_LEN <= n:
        size = unpack(data, pos + 9)[0]
        if size < HEADER_LEN or pos + size > n:
            break
        add(pos)
        pos += size
    return out, pos


def _candidates(data: bytes) -> tuple[Any, Any]:
    """Sorted offsets p (>= 4) where an event header could start, and their end offsets: the
    server id of one of the first events at p+5, ``log_pos - event_size == p``,
    ``event_size >= 19`` and the event inside the data."""
    np = _np
    assert np is not None
    n = len(data)
    first, _ = _index_python(data[:1 << 16], 4, array("q"))
    sids = sorted({_U32.unpack_from(data, p + 5)[0] for p in first[:64]})[:4]
    starts = []
    ends = []
    for c in range(4):  # the server id field's alignment class
        v = np.frombuffer(data, "<u4", count=(n - c) // 4, offset=c)
        head = v[:-2]
        hit = head == sids[0]
        for sid in sids[1:]:
            hit |= head == sid
        j = np.flatnonzero(hit)  # server id at 4j+c, event_size and log_pos next
        size = v[j + 1].astype(np.int64)
        lp = v[j + 2].astype(np.int64)
        p = 4 * j + (c - 5)
        ok = (lp - size == p) & (size >= HEADER_LEN) & (p >= 4) & (lp <= n)
        starts.append(p[ok])
        ends.append(lp[ok])
    cand = np.concatenate(starts)
    order = np.argsort(cand, kind="stable")
    return cand[order], np.concatenate(ends)[order]


def _index_numpy(data: bytes) -> tuple[array[int], int]:
    np = _np
    assert np is not None
    n = len(data)
    out = array("q")
    if n < 4 + HEADER_LEN:
        return out, 4
    cand, ends = _candidates(data)
    breaks = np.flatnonzero(ends[:-1] != cand[1:])  # a run through cand stops at each break
    unpack = _U32.unpack_from
    pos = 4
    while pos + HEADER_LEN <= n:
        k = int(np.searchsorted(cand, pos))
        if k < len(cand) and int(cand[k]) == pos:
            r = int(np.searchsorted(breaks, k))
            last = int(breaks[r]) if r < len(breaks) else len(cand) - 1
            out.frombytes(cand[k:last + 1].astype("<i8").tobytes())
            pos = int(ends[last])
            continue
        size = unpack(data, pos + 9)[0]  # not a candidate: one sequential step
        if size < HEADER_LEN or pos + size > n:
            break
        out.append(pos)
        pos += size
    return out, pos


# ------------------------------------------------------------------------------- framing
def max_event_size(starts: array[int], end: int) -> int:
    if not starts:
        return 0
    if _np is None:
        return max(b - a for a, b in zip(starts, [*starts[1:], end], strict=True))
    st = _np.frombuffer(starts, _np.int64)
    return int(_np.diff(st, append=end).max())


def frame_events(data: bytes, starts: array[int], lo: int, hi: int, end: int, seq: int
                 ) -> tuple[bytes | bytearray | memoryview, int]:
    """The dump packets (``0x00`` + event each) of events ``lo..hi-1`` (offsets ``starts``,
    the last event of the file ending at ``end``), the first with sequence id ``seq``; returns
    the bytes and the next sequence id. Every event must be smaller than 16 MiB - 1."""
    if hi <= lo:
        return b"", seq
    stop = starts[hi] if hi < len(starts) else end
    if _np is None or len(data) < 1 << 16 or not _ordered_assignment():
        return _frame_python(data, starts, lo, hi, stop, seq)
    return _frame_numpy(data, starts, lo, hi, stop, seq)


#: copy widths: every event is copied as a fixed-width item of the smallest tier that holds it
_TIERS = (64, 256, 1024, 4096)
_ORDERED: bool | None = None


def _ordered_assignment() -> bool:
    """Does numpy apply ``view[index] = values`` item by item in index order (the overlapping
    copies in :func:`_frame_numpy` rely on it)? Checked once on a tiny buffer."""
    global _ORDERED
    if _ORDERED is None:
        np = _np
        assert np is not None
        buf = bytearray(8)
        v = np.ndarray(buffer=buf, dtype="V4", shape=(5,), strides=(1,))
        v[np.array([0, 2, 1])] = np.frombuffer(b"AAAABBBBCCCC", dtype="V4")
        _ORDERED = bytes(buf[:6]) == b"ACCCCB"
    return _ORDERED


def _frame_numpy(data: bytes, starts: array[int], lo: int, hi: int, stop: int, seq: int
                 ) -> tuple[memoryview, int]:
    """Events are copied as fixed-width items (numpy fancy assignment, one memcpy each) from the
    widest tier to the narrowest. A W-wide copy of a shorter event also writes the W - size
    bytes after it in the source to the place after it in the output; every byte so spoilt is
    written again later: by a later event of the same tier (copies go in order), by a narrower
    tier (copied after), or, for an event of a wider tier, by copying its first W bytes again
    after the tier (the spoilt stretch is shorter than W). Events wider than the widest tier,
    or too close to the end of the data for a W-wide read, are copied one by one at the end;
    the packet headers go in last."""
    np = _np
    assert np is not None
    m = hi - lo
    st = np.frombuffer(starts, np.int64)[lo:hi]
    base = int(st[0])
    sz = np.diff(st, append=stop)
    total = (stop - base) + 5 * m
    wmax = _TIERS[-1]
    out = np.empty(total + wmax, np.uint8)
    hp = st - base
    hp += np.arange(0, 5 * m, 5)  # where each packet header goes
    dst = hp + 5
    n = len(data)
    exact = (sz > wmax) | (st + wmax > n)
    tier_of = np.searchsorted(np.asarray(_TIERS), sz)  # smallest tier index with W >= size
    tier_of[exact] = -1
    wider = np.zeros(m, np.bool_)  # events of the tiers copied so far
    for t in range(len(_TIERS) - 1, -1, -1):
        w = _TIERS[t]
        mine = tier_of == t
        sel = np.flatnonzero(mine)
        if not len(sel):
            continue
        src_v = np.ndarray(buffer=data, dtype=f"V{w}", shape=(n - w + 1,), strides=(1,))
        out_v = np.ndarray(buffer=out, dtype=f"V{w}", shape=(len(out) - w + 1,), strides=(1,))
        out_v[dst[sel]] = src_v[st[sel]]
        if wider.any():
            # a wider event is spoilt when the spill of an earlier event of this tier (which
            # ends w bytes after that event's start) reaches past its packet header's start
            reach = np.where(mine, dst + w, 0)
            np.maximum.accumulate(reach, out=reach)
            fix = np.flatnonzero(wider[1:] & (reach[:-1] > hp[1:])) + 1
            if len(fix):
                out_v[dst[fix]] = src_v[st[fix]]  # their first w bytes again (size > w)
        wider |= mine
        del src_v, out_v
    flat = memoryview(out)
    dmv = memoryview(data)
    for k in np.flatnonzero(exact).tolist():
        d = int(dst[k])
        s = int(st[k])
        flat[d:d + int(sz[k])] = dmv[s:s + int(sz[k])]
    hv = (sz + 1).astype("<u4")
    hv |= ((np.arange(seq, seq + m, dtype=np.uint32) & 0xFF) << 24).astype("<u4")
    hdr = np.zeros((m, 8), np.uint8)
    hdr.view("<u4")[:, 0] = hv
    hdr_v = np.ndarray(buffer=out, dtype="V5", shape=(len(out) - 4,), strides=(1,))
    hdr_v[hp] = np.ascontiguousarray(hdr[:, :5]).view("V5").ravel()
    del hdr_v
    return flat[:total], (seq + m) & 0xFF


def _frame_python(data: bytes, starts: array[int], lo: int, hi: int, stop: int, seq: int
                  ) -> tuple[bytearray, int]:
    out = bytearray()
    pack = _U32.pack
    mv = memoryview(data)
    for k in range(lo, hi):
        a = starts[k]
        b = starts[k + 1] if k + 1 < hi else stop
        out += pack((b - a + 1) | (seq << 24))
        out += b"\x00"
        out += mv[a:b]
        seq = (seq + 1) & 0xFF
    return out, seq


def event_types(data: bytes, starts: array[int]) -> bytes:
    """The type byte of every event (one byte per event)."""
    if _np is None:
        return bytes(data[s + 4] for s in starts)
    st = _np.frombuffer(starts, _np.int64)
    return bytes(_np.frombuffer(data, _np.uint8)[st + 4].tobytes())
