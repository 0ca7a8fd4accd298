"""pytest plugin: the ``replication_proxy`` fixture (registered through the ``pytest11`` entry
point, beside the mock master's ``mock_master`` fixture).

Put :class:`~binlogscope.drivers.proxy.relay.ReplicationProxy` between the code under test and a
real
(or mock) server, optionally with fault actions, and look at what went over the wire::

    def test_my_connector_survives_a_cut(replication_proxy):
        rp = replication_proxy("db-host:3306", actions=["disconnect_after_event at=40"])
        run_connector(host=rp.host, port=rp.port, ...)       # the connector dials the proxy
        rp.stop()                                             # (also done at the test's end)
        assert any("disconnect_after_event" in n for n in rp.notes)
        rows = [e for e in rp.binlog_events() if e.type_name.startswith("WRITE_ROWS")]

The factory takes the upstream (``"HOST:PORT"`` or ``(host, port)``), ``actions`` (the
``--action`` strings, or :class:`~binlogscope.drivers.proxy.faults.RelayAction` objects),
``scenario`` (a TOML/YAML file with ``[[actions]]``), ``record`` (a pcapng path), ``tls`` and
the listen address (default ``127.0.0.1``, a free port). ``tls=True`` terminates the TLS of
clients that ask for it with a self-signed certificate generated for the test (``rp.tls_cert``:
its file, for a client that verifies; removed at the end) and speaks TLS upstream without
verifying; a :class:`~binlogscope.drivers.proxy.tls.TlsSettings` sets certificate, key and
upstream verification (``binlogscope proxy``'s ``--tls-cert``/``--ssl-mode``...). Without it a
TLS session is relayed opaque. The relay runs in its own process and a thread
decodes here as it relays (``error`` says so if the relay process died); ``items``
holds every :class:`~binlogscope.drivers.items.SourceItem` (per connection ``flow``,
decoded packets as ``event``, fault and close notes as ``note``). Every proxy is stopped (and
its decoding drained) when the test ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.faults import RelayAction, load_actions, parse_action
from binlogscope.drivers.proxy.relay import ProxyError, ReplicationProxy, parse_hostport
from binlogscope.drivers.proxy.tls import TlsSettings, generate_certificate
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.binlog.decoded import DecodedEvent


class RunningProxy:
    """A started proxy and what it decoded so far."""

    def __init__(self, upstream: str | tuple[str, int], *,
                 actions: Sequence[str | RelayAction] = (), scenario: str | Path | None = None,
                 record: str | Path | None = None, host: str = "127.0.0.1",
                 port: int = 0, tls: bool | TlsSettings = False) -> None:
        up = parse_hostport(upstream) if isinstance(upstream, str) else upstream
        acts = load_actions(scenario) if scenario is not None else []
        acts += [parse_action(a) if isinstance(a, str) else a for a in actions]
        #: the generated certificate clients see with ``tls=True`` (None otherwise)
        self.tls_cert: Path | None = None
        settings = tls if isinstance(tls, TlsSettings) else None
        if tls is True:
            cert, key, _ = generate_certificate(names=(host,))
            self.tls_cert = cert
            settings = TlsSettings(str(cert), str(key), server_hostname=up[0])
        self.proxy = ReplicationProxy((host, port), up, record=record, actions=acts,
                                      tls=settings)
        self.host = host
        self.port = self.proxy.start()
        self.items: list[SourceItem] = []
        #: why decoding ended early (the relay process died), or None
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._decode, name="replication-proxy-decode",
                                        daemon=True)
        self._thread.start()

    def _decode(self) -> None:
        try:
            for batch in self.proxy.batches(stop=self._stop.is_set):
                self.items.extend(batch)
        except ProxyError as exc:  # the relay process died: say so, keep what was decoded
            self.error = str(exc)

    def stop(self) -> None:
        """Stop relaying (open connections are closed) and finish decoding what was relayed."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(30)
            if self.tls_cert is not None:
                import shutil

                shutil.rmtree(self.tls_cert.parent, ignore_errors=True)

    @property
    def connections(self) -> int:
        return self.proxy.connections

    @property
    def notes(self) -> list[str]:
        """The notes: faults fired, who closed each connection, decode stops."""
        return [i.text or "" for i in list(self.items) if i.kind in ("note", "error")]

    def packets(self) -> list[PacketDecoded]:
        """Every decoded packet, both directions, in relay order."""
        return [i.event for i in list(self.items) if isinstance(i.event, PacketDecoded)]

    def binlog_events(self) -> list[DecodedEvent]:
        """The binlog events the clients were sent (heartbeats included)."""
        return [p.binlog_event for p in self.packets() if p.binlog_event is not None]


@pytest.fixture
def replication_proxy() -> Iterator[Callable[..., RunningProxy]]:
    started: list[RunningProxy] = []

    def factory(upstream: str | tuple[str, int], **kw: Any) -> RunningProxy:
        rp = RunningProxy(upstream, **kw)
        started.append(rp)
        return rp

    try:
        yield factory
    finally:
        for rp in started:
            rp.stop()


__all__ = ["RunningProxy", "replication_proxy"]
