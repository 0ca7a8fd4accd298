"""Compact storage for one short string per row (summaries of millions of events)."""

from __future__ import annotations

from array import array
from itertools import accumulate


class TextColumn:
    """Many short strings in one UTF-8 buffer plus an array of end offsets.

    A Python ``str`` per event costs ~50 bytes of object header before its text; an index of a
    1 GB binlog (11 million events) held that way needs over 1 GB. Here each string costs its
    UTF-8 bytes plus 8.
    """

    __slots__ = ("_buf", "_ends")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._ends = array("Q")

    def append(self, text: str) -> None:
        self._buf += text.encode("utf-8", "surrogateescape")
        self._ends.append(len(self._buf))

    def extend(self, texts: list[str]) -> None:
        """:meth:`append` each of ``texts`` (one join and one store when they are ASCII)."""
        joined = "".join(texts)
        if joined.isascii():
            ends = list(accumulate(map(len, texts), initial=len(self._buf)))
            self._buf += joined.encode("ascii")
        else:
            parts = [t.encode("utf-8", "surrogateescape") for t in texts]
            ends = list(accumulate(map(len, parts), initial=len(self._buf)))
            self._buf += b"".join(parts)
        self._ends.extend(ends[1:])

    def extend_bytes(self, text: bytes, ends: array[int]) -> None:
        """Strings given as their UTF-8 ``text`` one after the other and the end of each in
        it (the native kernel's summaries: ``inspector/sources/packet_index.py``)."""
        base = len(self._buf)
        self._buf += text
        self._ends.extend(map(base.__add__, ends) if base else ends)

    def __len__(self) -> int:
        return len(self._ends)

    def __getitem__(self, index: int) -> str:
        end = self._ends[index]
        start = self._ends[index - 1] if index > 0 else 0
        return self._buf[start:end].decode("utf-8", "surrogateescape")
