"""Shared helpers for the client/server protocol decoders and encoders.

* :func:`flag_field` reads a little-endian bit set and records one child Node per known flag
  (``wire="bit"``, spanning the byte that holds the bit; value True/False). Bit children are
  annotations of their parent's bytes: they overlap by design and ``check_tiling`` does not
  descend into them.
* Sensitive values (scrambles, auth responses, passwords): the Node keeps the bytes (this is a
  byte-level viewer) but its ``doc`` starts with :data:`SENSITIVE` and :func:`is_sensitive`
  recognises it. :func:`redact` returns a copy of a tree with every sensitive value replaced,
  for exporters, recorders and screenshots. Typed values hide those fields from ``repr``.
* Encoding primitives (``lenenc_int``, ``lenenc_str``...) mirror the ByteReader's reads.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from enum import IntFlag

from binlogscope.wire.node import Node
from binlogscope.wire.reader import ByteReader

#: doc prefix that marks a Node whose value is a secret (password, scramble, auth response)
SENSITIVE = "[sensitive] "
#: Node names used for secrets in this package (all carry the :data:`SENSITIVE` doc prefix)
SENSITIVE_NAMES = frozenset({
    "auth_plugin_data_part_1", "auth_plugin_data_part_2", "auth_response",
    "plugin_provided_data", "auth_plugin_response", "password",
    # AuthMoreData's payload, except the one-byte caching_sha2 statuses (0x03 / 0x04)
    "authentication_method_data",
})
REDACTED = "<redacted>"


def is_sensitive(node: Node) -> bool:
    """True when ``node`` holds a secret (its doc starts with :data:`SENSITIVE`)."""
    return node.doc.startswith(SENSITIVE)


def redact(node: Node) -> Node:
    """A copy of ``node``'s tree with every sensitive value replaced by :data:`REDACTED`.

    Spans stay the same (the hex pane still shows where the secret was); values and display
    strings do not leak it.
    """
    children = tuple(redact(c) for c in node.children)
    if is_sensitive(node):
        return replace(node, value=REDACTED, display=f"{REDACTED} ({node.length} bytes)",
                       children=children)
    if children != node.children:
        return replace(node, children=children)
    return node


def redact_bytes(node: Node, raw: bytes) -> bytes:
    """``raw`` (the bytes ``node`` was decoded from) with sensitive leaves overwritten by 0x2A."""
    out = bytearray(raw)
    for _, n in node.walk():
        if is_sensitive(n) and not n.children:
            lo = n.offset - node.offset
            out[lo : lo + n.length] = b"*" * n.length
    return bytes(out)


def flag_field(
    r: ByteReader,
    name: str,
    nbytes: int,
    enum: type[IntFlag],
    *,
    doc: str = "",
    docs: dict[int, str] | None = None,
    shift: int = 0,
) -> int:
    """Read an ``nbytes`` little-endian flag set; children name each known flag.

    ``shift`` is the bit position of this field's bit 0 inside ``enum`` (16 for
    ``capability_flags_2``, whose bits are the high half of the capability set).
    """
    start = r.pos
    raw = r.take(nbytes, name)
    value = int.from_bytes(raw, "little")
    if r.record:
        full = value << shift
        kids: list[Node] = []
        base = r.base + start
        for member in enum:
            bit = member.value.bit_length() - 1
            local = bit - shift
            if not 0 <= local < nbytes * 8:
                continue
            on = bool(full & member.value)
            note = (docs or {}).get(member.value, "")
            kids.append(Node(member.name or hex(member.value), base + local // 8, 1, on, "bit",
                             f"{'set' if on else '-'} (bit {local}, 0x{1 << local:x})", note))
        names = [k.name for k in kids if k.value]
        known = 0
        for member in enum:
            local = member.value.bit_length() - 1 - shift
            if 0 <= local < nbytes * 8:
                known |= 1 << local
        if value & ~known:
            names.append(f"unknown bits 0x{value & ~known:x}")
        # (was "0x0000 0": a bare 0 read as a second value)
        display = f"0x{value:0{nbytes * 2}x} " + ("|".join(names) if names else "(none set)")
        r.add_node(Node(name, base, nbytes, value, f"int<{nbytes}>", display, doc, tuple(kids)))
    return value


# ---------------------------------------------------------------------------- encoding
_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")


def escaped(text: str) -> str:
    """``text`` with its control characters written as escapes (``\\x00``; a backslash
    doubled), so that a name holding a NUL or an escape sequence never reaches a terminal or a
    line-based tool raw (a dump file name a client NUL-terminated inside the field)."""
    if text.isprintable() and "\\" not in text:
        return text
    return "".join(c if c.isprintable() and c != "\\" else
                   ("\\\\" if c == "\\" else f"\\x{ord(c):02x}" if ord(c) < 0x100
                    else f"\\u{ord(c):04x}") for c in text)


def u8(v: int) -> bytes:
    return bytes((v & 0xFF,))


def u16(v: int) -> bytes:
    return _U16.pack(v & 0xFFFF)


def u24(v: int) -> bytes:
    return (v & 0xFFFFFF).to_bytes(3, "little")


def u32(v: int) -> bytes:
    return _U32.pack(v & 0xFFFFFFFF)


def u64(v: int) -> bytes:
    return _U64.pack(v)


def lenenc_int(v: int) -> bytes:
    """``int<lenenc>``: 1 byte below 251, else 0xFC + 2, 0xFD + 3 or 0xFE + 8 bytes."""
    if v < 0:
        raise ValueError(f"lenenc integers are unsigned, got {v}")
    if v < 0xFB:
        return bytes((v,))
    if v < 1 << 16:
        return b"\xfc" + v.to_bytes(2, "little")
    if v < 1 << 24:
        return b"\xfd" + v.to_bytes(3, "little")
    return b"\xfe" + v.to_bytes(8, "little")


def lenenc_bytes(v: bytes | None) -> bytes:
    """``string<lenenc>``; None becomes the 0xFB NULL marker (text result rows)."""
    if v is None:
        return b"\xfb"
    return lenenc_int(len(v)) + v


def lenenc_str(v: str | None) -> bytes:
    return lenenc_bytes(None if v is None else v.encode())


def nul_str(v: str | bytes) -> bytes:
    b = v.encode() if isinstance(v, str) else v
    if b"\0" in b:
        raise ValueError("string<NUL> cannot contain a NUL byte")
    return b + b"\0"
