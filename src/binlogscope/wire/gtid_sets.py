"""MySQL GTID sets with tags (8.3+): the text form and the binary encoding, as the live replica
sends them in COM_BINLOG_DUMP_GTID and as PREVIOUS_GTIDS holds them.

Text (MySQL's ``Gtid_set`` syntax): ``uuid[:tag]:interval[:interval...][:tag:interval...]``,
sets joined by commas; an interval is ``n`` or ``a-b`` (inclusive); a tag (a letter or ``_``,
then letters, digits and ``_``, at most 32, lower-cased) applies to the intervals after it.

Binary (``Gtid_set::encode``): ``n_sids<8>`` then per (uuid, tag) ``uuid<16>``, in the tagged
format the tag as a serialization-library length and its bytes, ``n_intervals<8>`` and each
interval as ``start<8> end<8>`` (end exclusive). The tagged format is used when a tag is
present: then ``n_sids`` carries the format (1) in its first and last byte and the count in the
six between (``Gtid_set::encode_nsids_format``); sets without tags keep the old format, which
every server reads.
"""

from __future__ import annotations

import re
import struct
import uuid
from collections.abc import Iterable

from binlogscope.wire.binlog.gtid_events import varlen_bytes

#: a GTID tag as MySQL accepts it (``Tag::is_character_valid``, ``tag_max_length`` 32)
TAG = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,31}")
_INTERVAL = re.compile(r"(\d+)(?:-(\d+))?")
TAGGED_FORMAT = 1

#: (uuid, tag) -> intervals [start, end) in order
GtidSetMap = dict[tuple[uuid.UUID, str], list[tuple[int, int]]]


def parse_gtid_set(text: str) -> GtidSetMap:
    """``uuid:1-5:7,uuid2:tag:1-3`` as {(uuid, tag): [(start, end)]} (end exclusive),
    intervals sorted and merged; raises ValueError naming the bad part."""
    out: GtidSetMap = {}
    for part in text.replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        sid_text, *items = part.split(":")
        try:
            sid = uuid.UUID(sid_text.strip())
        except ValueError:
            raise ValueError(f"GTID set {part!r}: {sid_text!r} is not a UUID") from None
        tag = ""
        for item in (i.strip() for i in items):
            m = _INTERVAL.fullmatch(item)
            if m:
                a = int(m.group(1))
                b = int(m.group(2) or a)
                if a < 1 or b < a:
                    raise ValueError(f"GTID set {part!r}: bad interval {item!r}")
                out.setdefault((sid, tag), []).append((a, b + 1))
            elif TAG.fullmatch(item):
                tag = item.lower()
            else:
                raise ValueError(f"GTID set {part!r}: {item!r} is neither an interval nor a tag")
    return {k: _merged(v) for k, v in sorted(out.items(), key=lambda kv: (str(kv[0][0]),
                                                                          kv[0][1]))}


def _merged(ivs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ivs):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def format_gtid_set(entries: Iterable[tuple[uuid.UUID | str, str,
                                            Iterable[tuple[int, int]]]]) -> str:
    """The text form of (uuid, tag, [(start, end)]) entries; a uuid's untagged intervals
    first, then each tag with its intervals (``uuid:1-5:tag:1-2``)."""
    out: list[str] = []
    last = None
    for sid, tag, ivs in entries:
        iv = ":".join(f"{a}" if b - a == 1 else f"{a}-{b - 1}" for a, b in ivs)
        piece = f"{tag}:{iv}" if tag and iv else tag or iv
        if str(sid) == last and out:
            out[-1] += f":{piece}" if piece else ""
        else:
            out.append(f"{sid}:{piece}" if piece else str(sid))
            last = str(sid)
    return ",".join(out)


def encode_gtid_set(entries: Iterable[tuple[uuid.UUID | str, str, Iterable[tuple[int, int]]]],
                    *, tagged: bool | None = None) -> bytes:
    """The binary encoding of (uuid, tag, [(start, end)]) entries: the tagged format when a
    tag is present (or ``tagged``), the untagged one otherwise."""
    items = [(s if isinstance(s, uuid.UUID) else uuid.UUID(s), t, list(ivs))
             for s, t, ivs in entries]
    if tagged is None:
        tagged = any(t for _, t, _ in items)
    elif not tagged and any(t for _, t, _ in items):
        raise ValueError("a GTID set with tags has only the tagged encoding")
    n = len(items)
    if tagged:
        out = [struct.pack("<Q", TAGGED_FORMAT | n << 8 | TAGGED_FORMAT << 56)]
    else:
        out = [struct.pack("<Q", n)]
    for sid, tag, ivs in items:
        out.append(sid.bytes)
        if tagged:
            raw = tag.encode("ascii")
            out.append(varlen_bytes(len(raw)) + raw)
        out.append(struct.pack("<Q", len(ivs)))
        out.extend(struct.pack("<qq", a, b) for a, b in ivs)
    return b"".join(out)


def is_tagged_format(first8: bytes) -> bool:
    """The first 8 bytes of an encoded set say the tagged format (format 1 in the first and
    the last byte)."""
    return len(first8) == 8 and first8[0] == TAGGED_FORMAT and first8[7] == TAGGED_FORMAT


__all__ = ["TAG", "TAGGED_FORMAT", "GtidSetMap", "encode_gtid_set", "format_gtid_set",
           "is_tagged_format", "parse_gtid_set"]
