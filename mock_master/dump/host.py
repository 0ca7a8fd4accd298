"""What a dump needs of the connection it runs on and of the server that serves it.

:class:`mock_master.dump.sender.Dump` sees its connection only as a :class:`DumpConnection` and
the server only as a :class:`DumpServer` (the serving side, ``mock_master.serve``, provides
both); so the dump package never imports the serving one, and the members listed here are all
it reaches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, Protocol

from binlogscope.drivers.scenario_files import Action
from binlogscope.session import Session
from mock_master.answers.base import QueryContext
from mock_master.history.sources import EventStream
from mock_master.runlog import ClientLog
from mock_master.scenario.scenarios import Scenario


class DumpConnection(Protocol):
    """The client connection a dump streams on."""

    #: what the run log keeps about this client
    log: ClientLog
    #: the client's session state (its user variables: checksum, heartbeat, GTID state...)
    ctx: QueryContext
    #: binlogscope's sans-IO session of the connection (semi-sync negotiated, dump ended)
    session: Session
    #: the client sent COM_REGISTER_SLAVE
    registered: bool
    closed: bool
    #: semi-sync: seconds before a requested ACK counts as missing; the ACKs still owed
    #: ((file, pos) -> when asked); set when an ACK arrives; switched to async after a timeout
    ack_timeout: float
    pending_acks: dict[tuple[str, int], float]
    ack_event: asyncio.Event
    semi_fallback: bool

    def write(self, data: bytes | bytearray | memoryview) -> None: ...

    async def drain(self) -> None: ...

    def close(self, why: str) -> None: ...

    def status_flags(self, extra: int = 0) -> int:
        """The status flags of an OK/EOF now (autocommit)."""
        ...

    def start_stream_reader(self) -> None:
        """Read the client while the dump streams (ACKs, COM_QUIT)."""
        ...


class DumpServer(Protocol):
    """The mock master, as a dump sees it."""

    stream: EventStream
    flavor: str
    scenario: Scenario
    server_id: int
    #: (major, minor, patch) of the served version
    version_tuple: tuple[int, int, int]
    #: framed wire images of whole files, shared by clients with the same settings
    images: dict[tuple[Any, ...], tuple[list[Any], int, int]]
    #: notified when events are appended (a blocking dump waits on it); None before start()
    new_events: asyncio.Condition | None

    def server_uuid(self) -> str: ...

    def actions_for(self, conn_id: int) -> list[Action]: ...

    async def restart(self, seconds: float) -> None: ...

    def spawn(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run ``coro`` as a task the server cancels when it stops."""
        ...
