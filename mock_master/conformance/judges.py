"""Judges of protocol behaviour, read from the wire (and the mock master's run log).

Each returns checks (:class:`~mock_master.conformance.model.Check`); a case combines them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from binlogscope.wire.binlog import bodies
from binlogscope.wire.binlog.header import is_artificial
from binlogscope.wire.binlog.types import EventType, is_heartbeat
from mock_master.conformance.grade import judge_clean_end, judge_rows
from mock_master.conformance.model import Check, Verdict
from mock_master.conformance.observe import Observation
from mock_master.diff.capture import CLIENT

#: command bytes a replication client may send after logging in (0xEF: a semi-sync ACK)
COMMANDS = {0x01: "COM_QUIT", 0x02: "COM_INIT_DB", 0x03: "COM_QUERY", 0x0E: "COM_PING",
            0x11: "COM_CHANGE_USER", 0x12: "COM_BINLOG_DUMP", 0x15: "COM_REGISTER_SLAVE",
            0x16: "COM_STMT_PREPARE", 0x17: "COM_STMT_EXECUTE", 0x19: "COM_STMT_CLOSE",
            0x1B: "COM_SET_OPTION", 0x1E: "COM_BINLOG_DUMP_GTID", 0x1F: "COM_RESET_CONNECTION",
            0xEF: "semi-sync ACK"}

Judge = Callable[[Observation], list[Check]]


def client_framing(obs: Observation) -> list[Check]:
    """Every command packet's length header equals the bytes the client wrote for it.

    Read per connection from the client's writes as the relay received them: after the login,
    a packet that ends inside a write must be followed, in that write, by another whole
    command packet (sequence id 0, a known command byte); anything else is bytes the length
    header did not count."""
    checks: list[Check] = []
    for conv in obs.conversations:
        logged_in = False
        for who, data, _ in conv.chunks:
            if who != CLIENT:
                continue
            pos = 0
            while pos + 4 <= len(data):
                n = int.from_bytes(data[pos:pos + 3], "little")
                seq = data[pos + 3]
                end = pos + 4 + n
                cmd = data[pos + 4] if n else None
                if seq == 0 and cmd in COMMANDS:
                    logged_in = True
                if end > len(data):
                    break  # continued in the next write
                rest = data[end:]
                if rest and logged_in and seq == 0 and cmd in COMMANDS:
                    ok = (len(rest) >= 5 and rest[3] == 0 and rest[4] in COMMANDS
                          and int.from_bytes(rest[:3], "little") + 4 <= len(rest))
                    if not ok:
                        checks.append(Check(Verdict.FAIL, (
                            f"connection {conv.index}: {COMMANDS.get(cmd or 0, hex(cmd or 0))}'s "
                            f"length header says {n} bytes, but the client wrote {len(rest) + n} "
                            f"with it ({len(rest)} more: {rest[:16].hex(' ')})")))
                        break
                pos = end
    return checks


def dump_sent(obs: Observation) -> list[Check]:
    if not obs.dumps():
        return [Check(Verdict.FAIL, "the client never sent a dump request")]
    return []


def mock_violations(obs: Observation, *, only: tuple[str, ...] = ()) -> list[Check]:
    """What the mock master logged as the client's protocol violations (``only``: those
    containing one of these texts)."""
    out = []
    for c in obs.clients:
        for v in c.get("violations", []):
            if not only or any(o in v for o in only):
                out.append(Check(Verdict.FAIL, f"connection {c.get('id')}: the mock master "
                                 f"logged: {v}"))
    return out


def noticed_error(obs: Observation, what: str) -> list[Check]:
    """The client reported the server's error: an error line or a non-zero exit. Exiting 0 as
    if the stream had ended is a silent loss."""
    if not obs.dumps():
        return [Check(Verdict.FAIL, f"{what}: the client never got to the dump request (exit "
                      f"status {obs.exit_code}): the case did not happen")]
    if obs.timed_out:
        return [Check(Verdict.FAIL, f"{what}: the client was still running at the time limit "
                      "(it did not notice)")]
    if obs.exit_code == 0 and not obs.of_type("error"):
        return [Check(Verdict.FAIL, f"{what}: the client exited 0 as if the stream had ended "
                      "normally (nothing reported)")]
    return [Check(Verdict.PASS, f"{what}: the client reported it (exit status "
                  f"{obs.exit_code})")]


def exactly_once(obs: Observation) -> list[Check]:
    """Each expected row reported exactly once, across reconnections (no loss, no repeat)."""
    exp = obs.setup.expected
    if not obs.has_adapter:
        return [Check(Verdict.UNIMPLEMENTED, "the client reports no values (no adapter)")]
    want = [(e.kind, e.table.table, tuple(r if not isinstance(r, tuple) else r[:1]))
            for e in exp for r in e.rows]
    got: list[tuple[str, str, tuple[object, ...]]] = []
    for ln in obs.rows():
        for r in ln.get("rows") or []:
            img = r.get("after") or r.get("before") or {}
            first = (next(iter(img.values())) if isinstance(img, dict) and img else
                     (img[0] if isinstance(img, list) and img else None))
            got.append((str(ln.get("type")), str(ln.get("table")), (first,)))
    missing = [w for w in want if w not in got]
    repeated = sorted({g for g in got if got.count(g) > 1}, key=str)
    checks = []
    if missing:
        checks.append(Check(Verdict.FAIL, f"{len(missing)} row(s) never reported: "
                            + ", ".join(f"{k} {t} id={i[0]}" for k, t, i in missing[:5])))
    if repeated:
        checks.append(Check(Verdict.FAIL, "row(s) reported more than once: "
                            + ", ".join(f"{k} {t} id={i[0]}" for k, t, i in repeated[:5])))
    if not checks:
        checks.append(Check(Verdict.PASS, f"all {len(want)} row(s) reported exactly once"))
    return checks


def reconnected(obs: Observation) -> bool:
    """The client sent a dump request on more than one connection (a control connection,
    e.g. python-mysql-replication's for information_schema, is not a reconnection)."""
    return len({p.conn for p in obs.dumps()}) > 1


def values_and_framing(obs: Observation) -> list[Check]:
    return judge_clean_end(obs) + judge_rows(obs) + client_framing(obs)


def resume_position(obs: Observation) -> list[Check]:
    """Where each reconnection's COM_BINLOG_DUMP starts, against what the client had received
    on the connection before: the end of the last whole event received, or the last
    transaction boundary before it (the partial transaction read again). Anything later loses
    events; anything earlier repeats whole transactions."""
    dumps = [p for p in obs.dumps() if p.kind == "com_binlog_dump"]
    checks: list[Check] = []
    for prev, cur in itertools.pairwise(dumps):
        start = int(getattr(prev.p.value, "binlog_pos", 4) or 4)
        ends: list[int] = []
        bounds = [start]
        for p in obs.events_sent(prev.conn):
            ev = p.p.binlog_event
            if ev is None or ev.header is None or p.p.error:
                continue
            h = ev.header
            if is_artificial(h) or h.log_pos == 0 or is_heartbeat(h.type_code):
                continue
            ends.append(h.log_pos)
            if h.type_code == EventType.XID_EVENT or (
                    h.type_code == EventType.QUERY_EVENT
                    and "BEGIN" not in (bodies.statement(ev) or "BEGIN").upper()):
                bounds.append(h.log_pos)
        got = max(ends, default=start)
        boundary = max((b for b in bounds if b <= got), default=start)
        pos = int(getattr(cur.p.value, "binlog_pos", 0) or 0)
        where = f"connection {cur.conn} resumed at {pos}"
        if pos == got:
            checks.append(Check(Verdict.PASS, f"{where}: the end of the last whole event it "
                                "had received"))
        elif pos == boundary:
            checks.append(Check(Verdict.PASS, f"{where}: the last transaction boundary (the "
                                f"partial transaction up to {got} read again)"))
        elif pos > got:
            checks.append(Check(Verdict.FAIL, f"{where}, past the {got} it had received: "
                                "events lost"))
        else:
            checks.append(Check(Verdict.FAIL, f"{where}, before the last transaction boundary "
                                f"{boundary} it had received: whole transactions repeated"))
    return checks
