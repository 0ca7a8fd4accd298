"""The dump's fast path: a file's events as a framed wire image.

A client whose settings change no event of a file (no fault, no stripped checksum, no dummy
events, a MariaDB capability that converts none of its types) is sent the file as one framed
image: packets made straight from the file's bytes (:func:`frame_and_send`, a 5-byte packet
header per event, nothing decoded) or, where some events change, from the events one by one
(:func:`build_image`). Images are kept on the server (``images``: a list of buffers, the number
of events, the next sequence id) for the clients with the same settings, up to
:data:`IMAGE_CACHE_BYTES`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

from binlogscope.wire.binlog.dump_frames import frame_event_list
from binlogscope.wire.binlog.types import is_mariadb_only
from binlogscope.wire.framing import MAX_PAYLOAD
from mock_master.dump import mariadb_compat as mc
from mock_master.dump.host import DumpConnection
from mock_master.history.framing import frame_events
from mock_master.history.sources import FDE

#: how much framed wire image the server keeps for fast replays
IMAGE_CACHE_BYTES = 2 << 30
#: events framed per step (a few MB of a typical binlog)
CHUNK_EVENTS = 1 << 14

#: an image: its buffers, how many events it holds, the sequence id after it
Image = tuple[list[Any], int, int]


def build_image(events: Sequence[bytes], ei: int, n: int, seq: int, plain: bool,
                transform: Callable[[bytes], bytes | None]) -> tuple[bytes, int, int]:
    """The framed packets of ``events[ei:n]``: each through ``transform`` (None: not sent)
    where it may change for the client (all of them unless ``plain``; the FORMAT_DESCRIPTION
    and MariaDB's own types always)."""

    def served() -> Iterator[bytes]:
        for k in range(ei, n):
            ev: bytes | None = events[k]
            if not plain or events[k][4] == FDE or is_mariadb_only(events[k][4]):
                ev = transform(events[k])
            if ev is not None:
                yield ev

    return frame_event_list(served(), seq)


def raw_ok(f: Any, ei: int, *, changes_events: bool, mariadb: bool, capability: int,
           annotate: bool) -> bool:
    """Can events ei.. of file ``f`` be framed straight from its bytes for a client (no event
    of theirs changes - ``changes_events``: a stripped checksum or dummy events - and none
    needs several packets)?"""
    if f.data is None or changes_events:
        return False
    if f.max_event_size() + 1 >= MAX_PAYLOAD:
        return False
    changed = {FDE}  # only event 0 may be the FDE (sent fixed by the dump)
    if mariadb:
        changed |= mc.changed_types(capability, annotate)
    types = f.types()
    return not any(types.find(t, max(ei, 1)) >= 0 for t in changed)


def keep(images: dict[tuple[Any, ...], Image], key: tuple[Any, ...], img: Image) -> None:
    """Keep ``img`` for the clients with the same settings, and at most
    :data:`IMAGE_CACHE_BYTES` of images in all (the oldest go first)."""
    images[key] = img
    while sum(sum(len(b) for b in v[0]) for v in images.values()) > IMAGE_CACHE_BYTES \
            and len(images) > 1:
        images.pop(next(iter(images)))


async def send_buffers(conn: DumpConnection, buffers: list[Any]) -> None:
    """Write an image's buffers, in steps the client can drain."""
    step = 4 << 20
    for data in buffers:
        view = memoryview(data)
        for k in range(0, len(view), step):
            conn.write(view[k:k + step])
            await conn.drain()


async def frame_and_send(conn: DumpConnection, f: Any, ei: int, seq: int,
                         fde_fixed: bytes) -> Image:
    """Frame events ei.. of a file read from disk straight from its bytes (one 5-byte packet
    header each, nothing decoded) and send them as they are framed (event 0, a
    FORMAT_DESCRIPTION, as ``fde_fixed``); the buffers become the file's wire image for later
    clients."""
    parts: list[Any] = []
    n = f.count
    i = ei
    if i == 0 and n and f.event(0)[4] == FDE:
        fde, _, seq = frame_event_list([fde_fixed], seq)
        parts.append(fde)
        conn.write(fde)
        i = 1
    pending: Any = None
    while i < n:
        j = min(i + CHUNK_EVENTS, n)
        buf, seq = frame_events(f.data, f.starts, i, j, f.end, seq)
        # the next chunk is framed while the client reads this one
        if pending is not None:
            await conn.drain()
        parts.append(buf)
        conn.write(buf)
        pending = buf
        i = j
    await conn.drain()
    return parts, n - ei, seq


__all__ = ["CHUNK_EVENTS", "IMAGE_CACHE_BYTES", "Image", "build_image", "frame_and_send", "keep",
           "raw_ok", "send_buffers"]
