"""incidents: named cases that reproduce what real clients met, each with the public issues
it reproduces (a hostile master that is still a correct one)."""

from __future__ import annotations

from binlogscope.wire.binlog.control_events import StopEvent
from binlogscope.wire.binlog.encode_events import add_crc32, encode_header, encode_stop
from binlogscope.wire.binlog.header import HEADER_LEN, peek_header
from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue.common import BOTH, scenario, txn_stream
from mock_master.conformance.grade import judge_clean_end, judge_rows, judge_values
from mock_master.conformance.judges import exactly_once, mock_violations, resume_position
from mock_master.conformance.model import (
    NEEDS_GTID,
    NEEDS_VALUES,
    Case,
    Check,
    Setup,
    Verdict,
)
from mock_master.conformance.observe import Observation
from mock_master.conformance.streams import CaseBuilder, event_number, file_offsets
from mock_master.history.sources import BinlogFile
from mock_master.scenario.faults import Action


def _mid_file(flavor: str) -> Setup:
    """Start at the second transaction: the server's first event is a fake ROTATE naming
    the requested position."""
    b, exp = txn_stream(flavor, 3)
    gtid = E.GTID_EVENT if flavor == "mariadb" else E.GTID_LOG_EVENT
    i = event_number(b, gtid, 2) - 2
    pos = file_offsets(b)[i]
    return Setup(scenario(flavor, b.build()), start=(b.files[0].name, pos), expected=exp[1:],
                 facts={"start": pos})


def _positions(obs: Observation) -> list[Check]:
    """The reported positions (when the adapter reports them) are never 0 or before the
    start: a fake ROTATE's log_pos 0 is not a position."""
    checks = judge_values(obs)
    start = obs.setup.facts.get("start", 4)
    bad = [ln for ln in obs.rows() if isinstance(ln.get("log_pos"), int)
           and ln["log_pos"] < start]
    if bad:
        checks.append(Check(Verdict.FAIL, f"a row event reported at log_pos {bad[0]['log_pos']}"
                            f", before the start {start} (the fake ROTATE's 0 taken as a "
                            "position?)"))
    return checks


def _end_of_file(flavor: str) -> Setup:
    """Start at the exact end of the first file: the server answers with a fake ROTATE into
    the next one."""
    b = CaseBuilder(flavor)
    b, _ = txn_stream(flavor, 1, b=b)
    b.rotate()
    b, exp = txn_stream(flavor, 2, b=b, table="t2")
    size = 4 + sum(len(e) for e in b.files[0].events)
    return Setup(scenario(flavor, b.build()), start=(b.files[0].name, size), expected=exp)


def _stop_no_rotate(flavor: str) -> Setup:
    """A server that was shut down: the file ends with STOP, the next file has no ROTATE
    before it."""
    b = CaseBuilder(flavor)
    b, exp1 = txn_stream(flavor, 2, b=b)
    b.raw(E.STOP_EVENT, encode_stop(StopEvent()))
    b._new_file(2)  # the restart: a new file, no ROTATE in the old one
    b, exp2 = txn_stream(flavor, 2, b=b, table="t_after_restart")
    return Setup(scenario(flavor, b.build()), expected=exp1 + exp2)


def _log_pos_zero(flavor: str) -> Setup:
    """MariaDB 11.4: events written through the transaction cache carry log_pos 0; only the
    GTID and the commit have a real end position."""
    b, exp = txn_stream(flavor, 3)
    for f in b.files:
        out: list[bytes] = []
        inside = False
        for ev in f.events:
            t = ev[4]
            if t == E.GTID_EVENT:
                inside = True
            elif t == E.XID_EVENT:
                inside = False
            elif inside:
                h = peek_header(ev)
                h.log_pos = 0
                body = ev[HEADER_LEN:-4] if f.checksum else ev[HEADER_LEN:]
                ev = encode_header(h) + body
                ev = add_crc32(ev) if f.checksum else ev
            out.append(ev)
        f.events[:] = out
    st = b.build()
    st.files = [BinlogFile(f.name, list(f.events), f.checksum) for f in st.files]
    return Setup(scenario(flavor, st), expected=exp)


def _zero_logpos_judge(obs: Observation) -> list[Check]:
    return judge_values(obs)


def _ef_timestamp(flavor: str) -> Setup:
    """Events whose timestamp's low bytes are EF 01 - the semi-sync magic and 'ACK wanted' -
    to a client that did not negotiate semi-sync."""
    ts = (1_700_000_000 & ~0xFFFF) | 0x01EF
    b = CaseBuilder(flavor, timestamp=ts)
    b, exp = txn_stream(flavor, 3, b=b)
    return Setup(scenario(flavor, b.build()), expected=exp)


def _ef_judge(obs: Observation) -> list[Check]:
    checks = mock_violations(obs, only=("ACK",))
    acks = obs.client_packets("semi_sync_ack")
    if acks:
        checks.append(Check(Verdict.FAIL, f"{len(acks)} ACK(s) sent although semi-sync was "
                            "not negotiated: the timestamp's 0xEF byte was taken for the "
                            "semi-sync magic"))
    return checks + judge_clean_end(obs) + judge_rows(obs)


def _not_negotiated(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 2)
    return Setup(scenario(flavor, b.build(), actions=[
        Action("semisync_without_negotiation")]), expected=exp)


def _not_negotiated_judge(obs: Observation) -> list[Check]:
    rows = judge_rows(obs)
    stopped = obs.exit_code not in (0, None) or bool(obs.of_type("error"))
    if stopped:
        return [Check(Verdict.PASS, "stopped: the event packets did not start with the OK "
                      "byte 0x00 (a semi-sync header that was never negotiated)")]
    if all(c.verdict == Verdict.PASS for c in rows):
        return [Check(Verdict.NON_STRICT, "read the rows through a semi-sync header it never "
                      "negotiated (it guesses by the 0xEF byte)")]
    return rows


def _long_name(flavor: str) -> Setup:
    b = CaseBuilder(flavor, basename="binlog-" + "x" * 180)
    b, exp1 = txn_stream(flavor, 1, b=b)
    b.rotate()
    b, exp2 = txn_stream(flavor, 1, b=b, table="t2")
    return Setup(scenario(flavor, b.build()), expected=exp1 + exp2)


def _compressed(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 3)
    return Setup(scenario(flavor, b.build(), actions=[Action("compress_transaction")]),
                 expected=exp)


def _half_open(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 2)
    at = event_number(b, E.XID_EVENT, 1) + 1
    # the client is configured as a user who wants a dead link noticed: heartbeats every 3 s
    # and a read timeout of 6 s (each preset's own flags; {heartbeat} in a command)
    return Setup(scenario(flavor, b.build(), actions=[Action("stall", at=at)]),
                 expected=exp, timeout=45, heartbeat=HALF_OPEN_HEARTBEAT)


HALF_OPEN_HEARTBEAT = 3.0


def _half_open_judge(obs: Observation) -> list[Check]:
    if not obs.dumps():
        return [Check(Verdict.FAIL, "the client never got to the dump request: the case did "
                      "not happen")]
    hb = [q for q in obs.queries() if "heartbeat_period" in q.lower()]
    asked = (f"it asked for heartbeats ({hb[0][:80]!r})" if hb
             else "it asked for no heartbeats")
    if obs.timed_out:
        why = ("but did not act on their absence" if hb else "and has no read timeout")
        return [Check(Verdict.FAIL, f"still waiting after {obs.setup.timeout:g} s of "
                      f"silence: {asked} {why}")]
    end = max((p.at for p in obs.packets), default=0.0)
    when = (f"exit status {obs.exit_code}, last packet +{end:.1f}s, {obs.seconds:.1f}s in "
            f"all; {asked}")
    if len({p.conn for p in obs.dumps()}) > 1:
        # only the first connection stalls: a reconnection gets the rest of the stream
        rows = exactly_once(obs) if obs.has_adapter else resume_position(obs)
        return [Check(Verdict.PASS, f"noticed the silent connection and reconnected ({when})"),
                *rows]
    if obs.exit_code not in (0, None) or obs.of_type("error"):
        return [Check(Verdict.PASS, f"noticed the silent connection and reported it ({when})")]
    return [Check(Verdict.FAIL, "ended without an error and without reconnecting although the "
                  f"stream never ended (no EOF packet came): the silence taken for the end "
                  f"({when})")]


NEW_UUID = "6f1c2a3b-0d4e-11ef-9a3c-0242ac120002"


def _primary_switch(flavor: str) -> Setup:
    """The new primary after a failover: other binlog file names, another server_uuid /
    server_id, the old primary's transactions replicated into its binlog with their GTIDs,
    then its own. A client that resumes by GTID from the old primary's 1-2 gets transaction 3
    and the new one."""
    import uuid

    b = CaseBuilder(flavor, basename="db2-bin")
    b, old = txn_stream(flavor, 3, b=b)
    b.server_id = 2
    if flavor == "mysql":
        b.server_uuid = uuid.UUID(NEW_UUID)
        b.seq = 0
    b, new = txn_stream(flavor, 1, b=b, table="t_new_primary")
    gtid = "0-1-2" if flavor == "mariadb" else "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-2"
    sc = scenario(flavor, b.build(), server_id=2,
                  server_uuid=NEW_UUID if flavor == "mysql" else None)
    return Setup(sc, gtid=gtid, expected=old[2:] + new)


def _checksum_names(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 1)
    return Setup(scenario(flavor, b.build(), server_version="8.4.3"), expected=exp)


def _checksum_names_judge(obs: Observation) -> list[Check]:
    qs = " ".join(obs.queries()).lower()
    names = [n for n in ("@master_binlog_checksum", "@source_binlog_checksum") if n in qs]
    return [Check(Verdict.PASS, "sets " + (" and ".join(names) if names else "neither name"))]


CASES: list[Case] = [
    Case("incidents/fake-rotate-mid-file", "a start mid-file: the fake ROTATE (log_pos 0, "
         "timestamp 0) names the requested position",
         "the fake ROTATE does not reset the client's position: rows after the start, "
         "reported at their real positions", _mid_file, _positions, flavors=BOTH,
         needs=(NEEDS_VALUES,),
         links=("https://github.com/julien-duponchelle/python-mysql-replication/issues/9",
                "https://github.com/julien-duponchelle/python-mysql-replication/pull/579",
                "https://github.com/osheroff/mysql-binlog-connector-java/issues/126")),
    Case("incidents/fake-rotate-end-of-file", "a start at the exact end of a file",
         "the server's fake ROTATE into the next file is followed: its rows reported",
         _end_of_file, judge_values, flavors=BOTH, needs=(NEEDS_VALUES,),
         links=("https://github.com/go-mysql-org/go-mysql/pull/428",
                "https://github.com/go-mysql-org/go-mysql/issues/752")),
    Case("incidents/restart-stop-no-rotate", "a server restart: STOP at the end of a file, "
         "no ROTATE, then the next file",
         "the client goes on into the next file (the server sends a fake ROTATE)",
         _stop_no_rotate, judge_values, flavors=BOTH, needs=(NEEDS_VALUES,),
         links=("https://github.com/go-mysql-org/go-mysql/pull/428",)),
    Case("incidents/mariadb-11.4-log-pos-0", "MariaDB 11.4: log_pos 0 on the events inside "
         "a transaction", "rows with log_pos 0 are still rows: every one reported",
         _log_pos_zero, _zero_logpos_judge, flavors=("mariadb",), needs=(NEEDS_VALUES,),
         links=("https://github.com/go-mysql-org/go-mysql/issues/893",
                "https://github.com/go-mysql-org/go-mysql/issues/901",
                "https://github.com/go-mysql-org/go-mysql/pull/1052")),
    Case("incidents/compressed-transactions-zero-rows", "binlog_transaction_compression=ON: "
         "every transaction in a TRANSACTION_PAYLOAD",
         "the rows inside the payloads are reported (not zero rows with the position moving "
         "on)", _compressed, judge_values, flavors=("mysql",), needs=(NEEDS_VALUES,),
         links=("https://github.com/zendesk/maxwell/pull/2254",
                "https://github.com/block/spirit/pull/1064")),
    Case("incidents/half-open-no-heartbeats", "the master goes silent mid-stream (no "
         "heartbeats, the TCP connection left open)",
         "configured with heartbeats every 3 s and a read timeout of 6 s (each preset's "
         "flags, {heartbeat} in a command), notices the dead connection and reconnects or "
         "reports it; never waits for ever, never takes the silence for the end", _half_open,
         _half_open_judge, flavors=BOTH,
         links=("https://github.com/go-mysql-org/go-mysql/issues/82",
                "https://github.com/zendesk/maxwell/pull/1643",
                "https://github.com/debezium/debezium/pull/7461",
                "https://github.com/estuary/connectors/pull/707")),
    Case("incidents/0xef-in-timestamp", "timestamps whose low bytes are EF 01 (the semi-sync "
         "magic) without semi-sync",
         "a client that did not negotiate semi-sync never looks for its header: no ACK, "
         "rows intact", _ef_timestamp, _ef_judge, flavors=BOTH, needs=(NEEDS_VALUES,),
         links=("https://github.com/go-mysql-org/go-mysql/pull/15",)),
    Case("incidents/semisync-header-not-negotiated", "a semi-sync header the client never "
         "negotiated", "stops: the packet does not start with the OK byte",
         _not_negotiated, _not_negotiated_judge, flavors=BOTH),
    Case("incidents/long-binlog-name", "binlog file names of 194 characters (ROTATE and the "
         "fake ROTATE)", "long names followed across the ROTATE", _long_name, judge_values,
         flavors=BOTH, needs=(NEEDS_VALUES,)),
    Case("incidents/primary-switch", "after a failover: a new primary with other file names "
         "and another server_uuid, the same GTIDs",
         "a GTID resume from the old primary's position gets the rest of its transactions and "
         "the new primary's: nothing lost, nothing repeated", _primary_switch, judge_values,
         flavors=BOTH, needs=(NEEDS_GTID, NEEDS_VALUES),
         links=("https://github.com/shyiko/mysql-binlog-connector-java/issues/144",
                "https://github.com/shyiko/mysql-binlog-connector-java/issues/207",
                "https://github.com/go-mysql-org/go-mysql/issues/731")),
    Case("incidents/checksum-variable-names", "a MySQL 8.4 source: which checksum variable "
         "the client sets", "recorded: @master_binlog_checksum and/or "
         "@source_binlog_checksum (MySQL 8.0.26 renamed it; a client may set both)",
         _checksum_names, _checksum_names_judge, flavors=("mysql",), informational=True,
         links=("https://github.com/go-mysql-org/go-mysql/pull/1003",
                "https://github.com/wal-g/wal-g/pull/1474")),
]
