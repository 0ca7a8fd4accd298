"""ByteReader: reads little-endian MySQL wire types from a buffer and records a Node per field.

The same decoder functions run in two modes:

* ``record=True`` - every read appends a :class:`~binlogscope.wire.node.Node` with its absolute
  offset and length (the annotated tree for the TUI, ``--tree`` and teaching output);
* ``record=False`` - nothing but the values is built (the fast path for export, benchmarks,
  ``--json``).

Because both modes execute the very same decode code, their values cannot drift apart.

Reading past the end raises :class:`ShortRead`; the caller (``decode_event``,
``decode_packet``) turns that into an error node with :meth:`ByteReader.partial`, so a
truncated or corrupt input yields every field up to the damage and never a traceback.

Offsets: ``pos`` is the index into ``buf``; ``base`` is the absolute offset of ``buf[0]`` in the
source, so Node offsets are ``base + pos``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from binlogscope.wire.node import Node, make_node

_U16 = struct.Struct("<H")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_I8 = struct.Struct("<b")
_I16 = struct.Struct("<h")
_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")
_F32 = struct.Struct("<f")
_F64 = struct.Struct("<d")


class DecodeError(ValueError):
    """A decode failure at a known absolute offset ("at offset N: ...")."""

    def __init__(self, offset: int, message: str) -> None:
        super().__init__(f"at offset {offset}: {message}")
        self.offset = offset
        self.message = message


class ShortRead(DecodeError):  # noqa: N818  (the public name since the first release)
    """The buffer ended before a field did."""

    def __init__(self, offset: int, needed: int, available: int, name: str) -> None:
        super().__init__(
            offset, f"truncated: {name!r} needs {needed} bytes, only {available} left"
        )
        self.needed = needed
        self.available = available


class _Frame:
    __slots__ = ("children", "display", "doc", "name", "start", "value", "wire")

    def __init__(
        self, name: str, start: int, doc: str, display: str, value: Any, wire: str
    ) -> None:
        self.name = name
        self.start = start
        self.doc = doc
        self.display = display
        self.value = value
        self.wire = wire
        self.children: list[Node] = []


class ByteReader:
    """A cursor over ``buf[pos:end]`` that optionally records a Node per read."""

    __slots__ = ("_stack", "base", "buf", "end", "pos", "record")

    def __init__(
        self,
        buf: bytes | bytearray | memoryview,
        *,
        base: int = 0,
        record: bool = True,
        start: int = 0,
        end: int | None = None,
    ) -> None:
        self.buf = buf
        self.pos = start
        self.end = len(buf) if end is None else end
        self.base = base  # absolute offset of buf[0] in the source
        self.record = record
        self._stack: list[_Frame] = [_Frame("", start, "", "", None, "")] if record else []

    # ----------------------------------------------------------------- position helpers
    @property
    def offset(self) -> int:
        """Absolute offset of the cursor."""
        return self.base + self.pos

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def at_end(self) -> bool:
        return self.pos >= self.end

    def take(self, n: int, name: str = "field") -> bytes:
        """Consume ``n`` raw bytes without recording (for custom leaves, see :meth:`leaf`)."""
        p = self.pos
        if n < 0 or p + n > self.end:
            raise ShortRead(self.base + p, n, self.end - p, name)
        self.pos = p + n
        return bytes(self.buf[p : p + n])

    def peek_u8(self) -> int | None:
        return self.buf[self.pos] if self.pos < self.end else None

    def peek(self, n: int) -> bytes:
        return bytes(self.buf[self.pos : min(self.pos + n, self.end)])

    # ----------------------------------------------------------------- recording
    def _add(self, name: str, start: int, value: Any, wire: str, doc: str, display: str) -> None:
        self._stack[-1].children.append(
            make_node(name, self.base + start, self.pos - start, value, wire, display, doc, (),
                      None)
        )

    def leaf(
        self, name: str, start: int, value: Any, *, wire: str = "", doc: str = "", display: str = ""
    ) -> Any:
        """Record a leaf spanning ``buf[start:pos]`` (after a custom read via :meth:`take`)."""
        if self.record:
            self._add(name, start, value, wire, doc, display)
        return value

    def add_node(self, node: Node) -> None:
        """Attach an already built Node (e.g. decoded from a decompressed buffer)."""
        if self.record:
            self._stack[-1].children.append(node)

    def begin(
        self, name: str, *, doc: str = "", display: str = "", value: Any = None, wire: str = ""
    ) -> None:
        """Open a group; the fields read until :meth:`end_group` become its children."""
        if self.record:
            self._stack.append(_Frame(name, self.pos, doc, display, value, wire))

    def end_group(self, *, value: Any = None, display: str | None = None) -> None:
        if not self.record:
            return
        f = self._stack.pop()
        self._stack[-1].children.append(
            make_node(f.name, self.base + f.start, self.pos - f.start,
                      f.value if value is None else value, f.wire,
                      f.display if display is None else display, f.doc, tuple(f.children), None)
        )

    @contextmanager
    def group(
        self, name: str, *, doc: str = "", display: str = "", value: Any = None
    ) -> Iterator[None]:
        """``with r.group("post_header"): ...`` - nest the fields read inside."""
        self.begin(name, doc=doc, display=display, value=value)
        yield
        self.end_group()

    def set_group_value(self, value: Any, display: str = "") -> None:
        """Set the value/display of the innermost open group."""
        if self.record and len(self._stack) > 1:
            self._stack[-1].value = value
            if display:
                self._stack[-1].display = display

    def mark(self) -> int:
        """How many nodes the innermost open group has (for :meth:`since`)."""
        return len(self._stack[-1].children) if self.record else 0

    def since(self, mark: int) -> tuple[Node, ...]:
        """The nodes added to the innermost open group after :meth:`mark` returned ``mark``."""
        return tuple(self._stack[-1].children[mark:]) if self.record else ()

    def children(self) -> list[Node]:
        """The nodes recorded so far at the outermost level."""
        return list(self._stack[0].children) if self._stack else []

    def finish(
        self, name: str, *, doc: str = "", display: str = "", value: Any = None,
        start: int | None = None, error: str | None = None,
    ) -> Node:
        """Close every group and return the root Node covering ``start..pos``."""
        while len(self._stack) > 1:
            self.end_group()
        root = self._stack[0]
        s = root.start if start is None else start
        return make_node(name, self.base + s, self.pos - s, value, "", display, doc,
                         tuple(root.children), error)

    def partial(self, name: str, exc: BaseException, *, doc: str = "", display: str = "") -> Node:
        """After a failed decode: close open groups, claim the unread rest as an error leaf.

        The error leaf covers the bytes from the cursor to ``end`` (possibly zero bytes), so the
        tree still tiles the buffer, and the message names the absolute offset.
        """
        message = _message(exc, self.base + self.pos)
        rest = max(self.end - self.pos, 0)
        # the error belongs at the deepest open group
        self._stack[-1].children.append(
            Node("error", self.base + self.pos, rest, bytes(self.buf[self.pos : self.pos + rest]),
                 "", "", "bytes that could not be decoded", (), message)
        )
        self.pos += rest
        return self.finish(name, doc=doc, display=display, error=message)

    # ----------------------------------------------------------------- integers
    def u8(self, name: str, *, doc: str = "", display: str = "") -> int:
        p = self.pos
        if p >= self.end:
            raise ShortRead(self.base + p, 1, 0, name)
        v = self.buf[p]
        self.pos = p + 1
        if self.record:
            self._add(name, p, v, "int<1>", doc, display)
        return v

    def u16(self, name: str, *, doc: str = "", display: str = "") -> int:
        p = self.pos
        if p + 2 > self.end:
            raise ShortRead(self.base + p, 2, self.end - p, name)
        v: int = _U16.unpack_from(self.buf, p)[0]
        self.pos = p + 2
        if self.record:
            self._add(name, p, v, "int<2>", doc, display)
        return v

    def u24(self, name: str, *, doc: str = "", display: str = "") -> int:
        return self.uint(name, 3, doc=doc, display=display)

    def u32(self, name: str, *, doc: str = "", display: str = "") -> int:
        p = self.pos
        if p + 4 > self.end:
            raise ShortRead(self.base + p, 4, self.end - p, name)
        v: int = _U32.unpack_from(self.buf, p)[0]
        self.pos = p + 4
        if self.record:
            self._add(name, p, v, "int<4>", doc, display)
        return v

    def u48(self, name: str, *, doc: str = "", display: str = "") -> int:
        return self.uint(name, 6, doc=doc, display=display)

    def u64(self, name: str, *, doc: str = "", display: str = "") -> int:
        p = self.pos
        if p + 8 > self.end:
            raise ShortRead(self.base + p, 8, self.end - p, name)
        v: int = _U64.unpack_from(self.buf, p)[0]
        self.pos = p + 8
        if self.record:
            self._add(name, p, v, "int<8>", doc, display)
        return v

    def uint(self, name: str, n: int, *, doc: str = "", display: str = "") -> int:
        """Unsigned little-endian integer of ``n`` bytes."""
        p = self.pos
        if p + n > self.end:
            raise ShortRead(self.base + p, n, self.end - p, name)
        v = int.from_bytes(self.buf[p : p + n], "little")
        self.pos = p + n
        if self.record:
            self._add(name, p, v, f"int<{n}>", doc, display)
        return v

    def sint(self, name: str, n: int, *, doc: str = "", display: str = "") -> int:
        """Signed little-endian integer of ``n`` bytes."""
        p = self.pos
        if p + n > self.end:
            raise ShortRead(self.base + p, n, self.end - p, name)
        v = int.from_bytes(self.buf[p : p + n], "little", signed=True)
        self.pos = p + n
        if self.record:
            self._add(name, p, v, f"sint<{n}>", doc, display)
        return v

    def uint_be(self, name: str, n: int, *, doc: str = "", display: str = "") -> int:
        """Unsigned big-endian integer (used by a few row formats: DATETIME2, TIME2...)."""
        p = self.pos
        if p + n > self.end:
            raise ShortRead(self.base + p, n, self.end - p, name)
        v = int.from_bytes(self.buf[p : p + n], "big")
        self.pos = p + n
        if self.record:
            self._add(name, p, v, f"int_be<{n}>", doc, display)
        return v

    def lenenc(self, name: str, *, doc: str = "", display: str = "") -> int | None:
        """Length-encoded integer; 0xFB (NULL in result rows) returns None."""
        p = self.pos
        v = self._lenenc_raw(name)
        if self.record:
            self._add(name, p, v, "int<lenenc>", doc, display)
        return v

    def _lenenc_raw(self, name: str) -> int | None:
        p = self.pos
        if p >= self.end:
            raise ShortRead(self.base + p, 1, 0, name)
        first = self.buf[p]
        if first < 0xFB:
            self.pos = p + 1
            return first
        if first == 0xFB:
            self.pos = p + 1
            return None
        size = {0xFC: 2, 0xFD: 3, 0xFE: 8}.get(first)
        if size is None:
            raise DecodeError(self.base + p,
                              f"{name!r}: 0xFF is not a valid length-encoded integer")
        if p + 1 + size > self.end:
            raise ShortRead(self.base + p, 1 + size, self.end - p, name)
        self.pos = p + 1 + size
        return int.from_bytes(self.buf[p + 1 : p + 1 + size], "little")

    def packed_int(self, name: str, *, doc: str = "", display: str = "") -> int:
        """Binlog "packed integer" (same encoding as lenenc; 0xFB is not NULL there)."""
        p = self.pos
        v = self._lenenc_raw(name)
        if v is None:
            v = 251
        if self.record:
            self._add(name, p, v, "packed_int", doc, display)
        return v

    def f32(self, name: str, *, doc: str = "", display: str = "") -> float:
        p = self.pos
        if p + 4 > self.end:
            raise ShortRead(self.base + p, 4, self.end - p, name)
        v: float = _F32.unpack_from(self.buf, p)[0]
        self.pos = p + 4
        if self.record:
            self._add(name, p, v, "float<4>", doc, display)
        return v

    def f64(self, name: str, *, doc: str = "", display: str = "") -> float:
        p = self.pos
        if p + 8 > self.end:
            raise ShortRead(self.base + p, 8, self.end - p, name)
        v: float = _F64.unpack_from(self.buf, p)[0]
        self.pos = p + 8
        if self.record:
            self._add(name, p, v, "float<8>", doc, display)
        return v

    # ----------------------------------------------------------------- bytes and strings
    def raw(self, name: str, n: int, *, doc: str = "", display: str = "", wire: str = "") -> bytes:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise ShortRead(self.base + p, n, self.end - p, name)
        v = bytes(self.buf[p : p + n])
        self.pos = p + n
        if self.record:
            self._add(name, p, v, wire or f"string<{n}>", doc, display)
        return v

    def rest(self, name: str, *, doc: str = "", display: str = "") -> bytes:
        """All bytes up to ``end`` (``string<EOF>``)."""
        p = self.pos
        v = bytes(self.buf[p : self.end])
        self.pos = self.end
        if self.record:
            self._add(name, p, v, "string<EOF>", doc, display)
        return v

    def fixed_str(
        self, name: str, n: int, *, doc: str = "", encoding: str = "utf-8", strip_nul: bool = False
    ) -> str:
        p = self.pos
        if n < 0 or p + n > self.end:
            raise ShortRead(self.base + p, n, self.end - p, name)
        b = bytes(self.buf[p : p + n])
        self.pos = p + n
        if strip_nul:
            b = b.split(b"\0", 1)[0]
        v = b.decode(encoding, "replace")
        if self.record:
            self._add(name, p, v, f"string<{n}>", doc, "")
        return v

    def rest_str(self, name: str, *, doc: str = "", encoding: str = "utf-8") -> str:
        p = self.pos
        v = bytes(self.buf[p : self.end]).decode(encoding, "replace")
        self.pos = self.end
        if self.record:
            self._add(name, p, v, "string<EOF>", doc, "")
        return v

    def nul_str(self, name: str, *, doc: str = "", encoding: str = "utf-8") -> str:
        """NUL-terminated string (``string<NUL>``); the NUL is part of the field's span."""
        p = self.pos
        buf = self.buf
        if isinstance(buf, memoryview):
            idx = bytes(buf[p : self.end]).find(b"\0")
            idx = -1 if idx < 0 else p + idx
        else:
            idx = buf.find(b"\0", p, self.end)
        if idx < 0:
            raise DecodeError(self.base + p, f"{name!r}: no NUL terminator before the end")
        v = bytes(buf[p:idx]).decode(encoding, "replace")
        self.pos = idx + 1
        if self.record:
            self._add(name, p, v, "string<NUL>", doc, "")
        return v

    def lenenc_bytes(self, name: str, *, doc: str = "", display: str = "") -> bytes | None:
        """``string<lenenc>`` as bytes (None for the 0xFB NULL marker)."""
        p = self.pos
        n = self._lenenc_raw(name)
        if n is None:
            v: bytes | None = None
        else:
            if self.pos + n > self.end:
                raise ShortRead(self.base + self.pos, n, self.end - self.pos, name)
            v = bytes(self.buf[self.pos : self.pos + n])
            self.pos += n
        if self.record:
            self._add(name, p, v, "string<lenenc>", doc, display)
        return v

    def lenenc_str(self, name: str, *, doc: str = "", encoding: str = "utf-8") -> str | None:
        p = self.pos
        n = self._lenenc_raw(name)
        if n is None:
            v: str | None = None
        else:
            if self.pos + n > self.end:
                raise ShortRead(self.base + self.pos, n, self.end - self.pos, name)
            v = bytes(self.buf[self.pos : self.pos + n]).decode(encoding, "replace")
            self.pos += n
        if self.record:
            self._add(name, p, v, "string<lenenc>", doc, "")
        return v

    # ----------------------------------------------------------------- bounds
    @contextmanager
    def bounded(self, n: int, name: str = "field") -> Iterator[None]:
        """Temporarily limit reads to the next ``n`` bytes (a sub-structure of known size)."""
        if self.pos + n > self.end:
            raise ShortRead(self.base + self.pos, n, self.end - self.pos, name)
        saved = self.end
        self.end = self.pos + n
        try:
            yield
        finally:
            self.end = saved


def _message(exc: BaseException, offset: int) -> str:
    if isinstance(exc, DecodeError):
        return str(exc)
    return f"at offset {offset}: {type(exc).__name__}: {exc}"
