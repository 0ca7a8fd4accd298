"""The cold dump's loops, vectorized: events framed (and typed, sized) with numpy when it is there.

:func:`frame_events`, :func:`event_types` and :func:`max_event_size` are the functions of
:mod:`binlogscope.wire.binlog.dump_frames` (the definition, plain Python) done with numpy when
numpy can be imported (it is no dependency; the ``spark`` extra brings it) and the file is
not tiny. Measured on the benchmark set (324 MB, 1.6 M events, 2026-11-25, one process serving
and reading, same run): the first dump after start takes 0.68-0.74 s with numpy, as before the
redesign, and 1.74-1.85 s with the plain loops - numpy frames the 16 k-event chunks about 5
times faster, and the cold dump's benchmark target is >= 50% of mariadbd. Warm dumps come from
the cached image either way. Tests compare both paths byte for byte.
"""

from __future__ import annotations

import importlib
from array import array
from typing import Any

from binlogscope.wire.binlog import dump_frames

_np: Any
try:
    _np = importlib.import_module("numpy")
except ImportError:  # pragma: no cover - exercised only without numpy
    _np = None


def have_numpy() -> bool:
    return _np is not None


def frame_events(data: bytes, starts: array[int], lo: int, hi: int, end: int, seq: int
                 ) -> tuple[bytes | memoryview, int]:
    """The dump packets of events ``lo..hi-1`` and the next sequence id (see
    :func:`dump_frames.frame_events`). Every event must be smaller than 16 MiB - 1 (the dump
    checks ``max_event_size`` before it frames a file this way)."""
    if hi <= lo:
        return b"", seq
    stop = starts[hi] if hi < len(starts) else end
    if _np is None or len(data) < 1 << 16 or not _ordered_assignment():
        return dump_frames.frame_events(data, starts, lo, hi, end, seq)
    return _frame_numpy(data, starts, lo, hi, stop, seq)


def event_types(data: bytes, starts: array[int]) -> bytes:
    """The type byte of every event (:func:`dump_frames.event_types`, one numpy gather)."""
    if _np is None or len(starts) < 4096:
        return dump_frames.event_types(data, starts)
    st = _np.frombuffer(starts, _np.int64)
    return bytes(_np.frombuffer(data, _np.uint8)[st + 4].tobytes())


def max_event_size(starts: array[int], end: int) -> int:
    """The largest event (:func:`dump_frames.max_event_size`, one numpy diff)."""
    if _np is None or len(starts) < 4096:
        return dump_frames.max_event_size(starts, end)
    return int(_np.diff(_np.frombuffer(starts, _np.int64), append=end).max())


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
