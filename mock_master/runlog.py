"""What the mock master records: per client (:class:`ClientLog`) and per run (:class:`RunLog`).

Tests assert on these; ``--log FILE`` writes the run log as JSON when the server stops.
:class:`Closed` is the control-flow exception a connection ends with.

Both are bounded, so a long run or a flood of clients cannot grow them without end: each
recorded list of a client keeps its newest :data:`MAX_ITEMS` entries (query texts are cut at
:data:`MAX_TEXT` characters) and counts what it dropped in ``dropped``; the run keeps every open
client and the newest ``max_closed`` closed ones (``clients_dropped`` counts the others, and
their violations stay counted in :attr:`RunLog.violations`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from binlogscope.render.json_out import dumps, dumps_pretty

#: entries each recorded list of one client keeps (the oldest go first)
MAX_ITEMS = 1000
#: characters of one recorded query or message (the rest is replaced by a marker)
MAX_TEXT = 4096
#: closed clients a run log keeps (open ones are always kept)
MAX_CLOSED = 1000

T = TypeVar("T")


def dumps_json(value: Any, *, indent: bool = False) -> bytes:
    """JSON bytes of the mock master's logs and recordings, written by binlogscope's one JSON
    serializer (:mod:`binlogscope.render.json_out`); ``indent``: the indented run log (ends
    with a newline)."""
    return dumps_pretty(value) if indent else dumps(value)


def clip(text: str, limit: int = MAX_TEXT) -> str:
    """``text`` cut to ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text)} characters]"


class Closed(Exception):  # noqa: N818  (control flow, not an error)
    """The client went away (or we closed on purpose)."""


class Bounded(list[T]):
    """A list that keeps its newest ``maxlen`` items; strings are clipped to ``MAX_TEXT``.
    What it drops is counted in ``counts[name]`` (the owning :class:`ClientLog`'s ``dropped``)."""

    def __init__(self, items: Iterable[T] = (), *, maxlen: int = MAX_ITEMS, name: str = "",
                 counts: dict[str, int] | None = None) -> None:
        super().__init__(items)
        self.maxlen = maxlen
        self.name = name
        self.counts = counts if counts is not None else {}

    def append(self, item: T) -> None:
        if isinstance(item, str) and len(item) > MAX_TEXT:
            item = clip(item)  # type: ignore[assignment]
        super().append(item)
        self._trim()

    def extend(self, items: Iterable[T]) -> None:
        for item in items:
            self.append(item)

    def __iadd__(self, items: Iterable[T]) -> Bounded[T]:  # type: ignore[override,misc]
        self.extend(items)
        return self

    def _trim(self) -> None:
        over = len(self) - self.maxlen
        if over > 0:
            del self[:over]
            self.counts[self.name] = self.counts.get(self.name, 0) + over


_BOUNDED = ("queries", "unknown_queries", "unknown_commands", "acks_requested", "acks", "faults",
            "violations", "errors")


@dataclass
class ClientLog:
    """What one client did (the per-run log a test asserts on)."""

    id: int
    peer: str
    user: str | None = None
    auth_plugin: str | None = None
    tls: bool = False
    #: the compressed protocol (CLIENT_COMPRESS) was negotiated
    compressed: bool = False
    #: its algorithm: zlib, or zstd (MySQL flavour 8.0.18+)
    compression: str | None = None
    authenticated: bool = False
    queries: list[str] = field(default_factory=list)
    unknown_queries: list[str] = field(default_factory=list)
    #: commands the server does not know, as "0xNN COM_NAME"
    unknown_commands: list[str] = field(default_factory=list)
    register: dict[str, Any] | None = None
    dump: dict[str, Any] | None = None
    user_vars: dict[str, Any] = field(default_factory=dict)
    events_sent: int = 0
    bytes_sent: int = 0
    heartbeats_sent: int = 0
    acks_requested: list[list[Any]] = field(default_factory=list)
    acks: list[list[Any]] = field(default_factory=list)
    faults: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    closed_by: str | None = None
    started: float = field(default_factory=time.time)
    ended: float | None = None
    #: entries dropped per list (its oldest) since the list reached its bound
    dropped: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for name in _BOUNDED:
            object.__setattr__(self, name, Bounded(getattr(self, name), name=name,
                                                    counts=self.dropped))

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "dump" and isinstance(value, dict):
            # a file name sent NUL-padded is logged as the name
            value = {k: v.rstrip("\0") if isinstance(v, str) else v for k, v in value.items()}
        elif name in _BOUNDED and not isinstance(value, Bounded) and "dropped" in self.__dict__:
            value = Bounded(value, name=name, counts=self.dropped)
        object.__setattr__(self, name, value)


@dataclass
class RunLog:
    clients: list[ClientLog] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: closed clients dropped from ``clients`` (the oldest first) and the violations they had
    clients_dropped: int = 0
    violations_dropped: int = 0
    max_closed: int = MAX_CLOSED

    def __post_init__(self) -> None:
        self.notes = Bounded(self.notes, name="notes")
        self._closed: list[ClientLog] = []

    def closed(self, clog: ClientLog) -> None:
        """``clog``'s connection ended: keep it among the newest ``max_closed`` closed ones."""
        self._closed.append(clog)
        over = len(self._closed) - self.max_closed
        if over > 0:
            old = self._closed[:over]
            del self._closed[:over]
            for c in old:  # the oldest closed ones: near the front of the list
                i = next((k for k, x in enumerate(self.clients) if x is c), None)
                if i is not None:
                    del self.clients[i]
            self.clients_dropped += over
            self.violations_dropped += sum(len(c.violations) for c in old)

    @property
    def violations(self) -> list[str]:
        out = [f"client {c.id}: {v}" for c in self.clients for v in c.violations]
        if self.violations_dropped:
            out.append(f"{self.violations_dropped} violation(s) of {self.clients_dropped} "
                       "closed client(s) no longer kept in the log")
        return out

    @property
    def unknown_queries(self) -> list[str]:
        return [q for c in self.clients for q in c.unknown_queries]

    def to_dict(self) -> dict[str, Any]:
        return {"clients": [asdict(c) for c in self.clients], "notes": list(self.notes),
                "clients_dropped": self.clients_dropped,
                "violations_dropped": self.violations_dropped}

    def write(self, path: str | Path) -> None:
        Path(path).write_bytes(dumps_json(self.to_dict(), indent=True))
