"""What the mock master records: per client (:class:`ClientLog`) and per run (:class:`RunLog`).

Tests assert on these; ``--log FILE`` writes the run log as JSON when the server stops.
:class:`Closed` is the control-flow exception a connection ends with.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from binlogscope.render.json_out import dumps, dumps_pretty


def dumps_json(value: Any, *, indent: bool = False) -> bytes:
    """JSON bytes of the mock master's logs and recordings, written by binlogscope's one JSON
    serializer (:mod:`binlogscope.render.json_out`); ``indent``: the indented run log (ends
    with a newline)."""
    return dumps_pretty(value) if indent else dumps(value)


class Closed(Exception):  # noqa: N818  (control flow, not an error)
    """The client went away (or we closed on purpose)."""


@dataclass
class ClientLog:
    """What one client did (the per-run log a test asserts on)."""

    id: int
    peer: str
    user: str | None = None
    auth_plugin: str | None = None
    tls: bool = False
    authenticated: bool = False
    queries: list[str] = field(default_factory=list)
    unknown_queries: list[str] = field(default_factory=list)
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


@dataclass
class RunLog:
    clients: list[ClientLog] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        return [f"client {c.id}: {v}" for c in self.clients for v in c.violations]

    @property
    def unknown_queries(self) -> list[str]:
        return [q for c in self.clients for q in c.unknown_queries]

    def to_dict(self) -> dict[str, Any]:
        return {"clients": [asdict(c) for c in self.clients], "notes": list(self.notes)}

    def write(self, path: str | Path) -> None:
        Path(path).write_bytes(dumps_json(self.to_dict(), indent=True))
