"""What a client connection needs of the server, and what a connection's prepared statements
need of the connection.

:class:`mock_master.serve.connection.Connection` (and its IO base,
:class:`mock_master.serve.netio.ClientIO`) sees the server only as a :class:`ConnectionServer`;
:class:`mock_master.serve.prepared.PreparedStatements` sees its connection only as a
:class:`StatementHost`. So the server module imports the connection, never the reverse, and the
members listed here are all the connection reaches.
"""

from __future__ import annotations

import ssl
from typing import Any, Protocol

from binlogscope.session import Session
from mock_master.answers.base import Answer
from mock_master.answers.queries import Answerer
from mock_master.dump.host import DumpServer
from mock_master.runlog import ClientLog, RunLog
from mock_master.scenario.scenarios import User
from mock_master.schema.sources import SchemaKnowledge


class ConnectionServer(DumpServer, Protocol):
    """The mock master, as one of its client connections sees it (a dump's view too)."""

    version: str
    variables: dict[str, Any]
    users: dict[str, User]
    #: caching_sha2_password: the users whose full authentication succeeded (fast path next)
    sha2_cache: set[str]
    ssl_context: ssl.SSLContext | None
    answerer: Answerer
    log: RunLog

    def note(self, text: str) -> None: ...

    def limit(self, name: str) -> float: ...

    def knowledge(self) -> SchemaKnowledge: ...

    def rsa_key(self) -> Any: ...

    def claim_server_id(self, conn: Any, server_id: int) -> None: ...

    def close_client(self, client_id: int, why: str) -> bool:
        """Close connection ``client_id`` (KILL); False: no such connection."""
        ...


class StatementHost(Protocol):
    """The connection, as its prepared statements see it."""

    log: ClientLog
    session: Session
    m: ConnectionServer

    def send(self, value: Any) -> None: ...

    def send_raw(self, payload: bytes) -> None: ...

    def status_flags(self, extra: int = 0) -> int: ...

    def answer_query(self, q: str, *, log: bool = True) -> Answer | None: ...
