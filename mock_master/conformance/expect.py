"""Expectations for CI users of the mock master: assertions over its run log, from the same
machinery as the conformance cases.

::

    from mock_master.conformance.expect import (
        expect_queries, expect_resumed_at, expect_every_flagged_event_acked, expect_exactly_once)

    def test_my_connector(mock_master):
        mm = mock_master(binlogs=[...], ack_every_transaction=True,
                         actions=[Action("disconnect_after_event", at=12)])
        rows = run_my_connector(mm.host, mm.port)
        expect_queries(mm.log, ["SET @master_binlog_checksum*", "SHOW MASTER STATUS"])
        expect_resumed_at(mm.log, "mysql-bin.000001", 569)      # the second dump's start
        expect_every_flagged_event_acked(mm.log)
        expect_exactly_once(rows, key=lambda r: r["id"])

Each raises ``AssertionError`` with what the log holds (the query log, the dump requests, the
ACKs asked for and received), so a failing test says what the client did.

The run log (``mm.log``, :class:`mock_master.serve.runlog.RunLog`): ``clients`` is one
:class:`~mock_master.serve.runlog.ClientLog` per connection, in the order they were accepted;
its fields are attributes (``c.queries``, never ``c["queries"]``): ``id``, ``peer``, ``user``,
``auth_plugin``, ``tls``, ``compressed``, ``authenticated``, ``queries`` (every COM_QUERY text,
in order), ``unknown_queries`` (those the mock had no answer for), ``unknown_commands``,
``register`` (COM_REGISTER_SLAVE's fields, a dict, or None), ``dump`` (the dump request, a dict:
``command``, ``server_id``, ``file``, ``pos``, ``flags``, ``gtid_state``; None when the
connection sent none), ``user_vars`` (the ``SET @x`` values), ``events_sent``, ``bytes_sent``,
``heartbeats_sent``, ``acks_requested`` and ``acks`` (``[file, end position]`` pairs),
``faults`` (the fault actions that fired), ``violations`` (protocol errors the mock saw),
``errors``, ``closed_by``, ``started``/``ended`` (epoch seconds), ``dropped`` (entries a bounded
list dropped). ``register`` and ``dump`` are the only dicts.
"""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any


def _clients(log: Any) -> list[Any]:
    return list(getattr(log, "clients", log))


def query_log(log: Any) -> list[tuple[int, str]]:
    """Every query of every connection, in order: ``(connection id, text)``."""
    return [(c.id, q) for c in _clients(log) for q in c.queries]


def query_counts(log: Any) -> Counter[str]:
    """How many times each query text was sent (whitespace runs folded)."""
    return Counter(" ".join(q.split()) for _, q in query_log(log))


def expect_queries(log: Any, patterns: Sequence[str], *, ordered: bool = True,
                   connection: int | None = None, times: dict[str, int] | None = None) -> None:
    """The client sent queries matching ``patterns`` (shell patterns, case-insensitive), in
    this order when ``ordered`` (other queries may come between), on connection id
    ``connection`` or any; ``times``: a pattern -> exactly how many matching queries."""
    qs = [q for cid, q in query_log(log) if connection is None or cid == connection]

    def match(p: str, q: str) -> bool:
        return fnmatch.fnmatchcase(" ".join(q.split()).lower(), p.lower())

    shown = "\n".join(f"  {i}: {q}" for i, q in enumerate(qs)) or "  (none)"
    i = 0
    for p in patterns:
        if ordered:
            while i < len(qs) and not match(p, qs[i]):
                i += 1
            if i == len(qs):
                raise AssertionError(f"no query matching {p!r} (in order) in the query log:\n"
                                     f"{shown}")
            i += 1
        elif not any(match(p, q) for q in qs):
            raise AssertionError(f"no query matching {p!r} in the query log:\n{shown}")
    for p, n in (times or {}).items():
        got = sum(match(p, q) for q in qs)
        if got != n:
            raise AssertionError(f"{got} queries match {p!r}, {n} expected:\n{shown}")


def dumps(log: Any) -> list[dict[str, Any]]:
    """The dump requests, one per connection that sent one, in order."""
    return [dict(c.dump, connection=c.id) for c in _clients(log) if c.dump]


def expect_resumed_at(log: Any, file: str, pos: int, *, dump: int = -1) -> None:
    """The ``dump``-th dump request (default: the last, i.e. the resume) starts at
    ``file``:``pos``."""
    ds = dumps(log)
    if not ds:
        raise AssertionError("the client sent no dump request")
    d = ds[dump]
    if (d.get("file"), d.get("pos")) != (file, pos):
        listed = "\n".join(f"  connection {x['connection']}: {x.get('file')}:{x.get('pos')}"
                           f" gtid={x.get('gtid_state')}" for x in ds)
        raise AssertionError(f"dump request {dump} starts at {d.get('file')}:{d.get('pos')}, "
                             f"not {file}:{pos}; the dump requests:\n{listed}")


def expect_every_flagged_event_acked(log: Any, *, at_least_one: bool = True) -> None:
    """Every event the mock master flagged for a semi-sync ACK got one with its file and end
    position, and no ACK came for an event it did not flag."""
    req = [(c.id, tuple(a)) for c in _clients(log) for a in c.acks_requested]
    got = {(c.id, tuple(a)) for c in _clients(log) for a in c.acks}
    if at_least_one and not req:
        raise AssertionError("the mock master flagged no event for an ACK: did the client "
                             "enable semi-sync (and does the scenario ask for ACKs)?")
    missing = [r for r in req if r not in got]
    extra = sorted(got - set(req))
    bad = [v for c in _clients(log) for v in c.violations if "ACK" in v]
    if missing or extra or bad:
        raise AssertionError(f"ACKs missing for {missing[:5]}, unrequested ACKs {extra[:5]}, "
                             f"violations {bad[:5]}")


def expect_no_violations(log: Any) -> None:
    """The mock master saw no protocol violation from any client."""
    v = [f"connection {c.id}: {x}" for c in _clients(log) for x in c.violations]
    if v:
        raise AssertionError("protocol violations:\n" + "\n".join(v))


def expect_exactly_once(delivered: Iterable[Any], *, key: Callable[[Any], Hashable] = repr,
                        expected: Iterable[Hashable] | None = None) -> None:
    """Nothing the client delivered came twice (``key`` names an item: a primary key, a
    (file, pos)); with ``expected``, nothing is missing either."""
    keys = [key(x) for x in delivered]
    twice = [k for k, n in Counter(keys).items() if n > 1]
    if twice:
        raise AssertionError(f"delivered more than once: {twice[:10]}")
    if expected is not None:
        missing = [k for k in expected if k not in set(keys)]
        if missing:
            raise AssertionError(f"never delivered: {missing[:10]}")


def append_transaction(mm: Any, builder: Any, table: Any, rows: list[Any], *,
                       kind: str = "insert") -> str:
    """One line in a test: a transaction (GTID, BEGIN, one rows event of ``kind``, XID) on
    ``table`` appended to what ``mm`` serves; blocking dumps send it at once. ``builder`` is
    the :class:`~mock_master.history.builder.EventBuilder` (or
    :class:`~mock_master.conformance.streams.CaseBuilder`) whose ``build()`` the scenario
    serves; it goes on numbering GTIDs and positions from there. Returns the GTID."""
    events = builder.files[-1].events
    n = len(events)
    gtid = str(builder.begin())
    if hasattr(builder, "rows"):
        builder.rows(kind, table, rows)
    else:
        getattr(builder, kind)(table, rows)
    builder.commit()
    new = list(events[n:])
    # the builder's file is the served file: hand the events to the server (which fixes their
    # positions and wakes the blocking dumps) instead of leaving them appended behind its back
    del events[n:]
    mm.append_events(new)
    return gtid
