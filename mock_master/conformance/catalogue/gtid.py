"""GTID: MariaDB domain-server-seq starts, an unknown domain, a purged position, strict mode
(a start in a hole, seq_no out of order); MySQL GTID set starts."""

from __future__ import annotations

from mock_master.conformance.catalogue.common import scenario, txn_stream
from mock_master.conformance.grade import judge_clean_end, judge_values
from mock_master.conformance.judges import noticed_error
from mock_master.conformance.model import NEEDS_GTID, NEEDS_VALUES, Case, Check, Setup, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.streams import CaseBuilder
from mock_master.history.sources import EventStream


def _start_after_first(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 3)
    gtid = "0-1-1" if flavor == "mariadb" else f"{b.server_uuid}:1"
    return Setup(scenario(flavor, b.build()), gtid=gtid, expected=exp[1:])


def _unknown_domain(flavor: str) -> Setup:
    b, _exp = txn_stream(flavor, 2)
    return Setup(scenario(flavor, b.build()), gtid="7-7-5", expected=[])


def _ahead(flavor: str) -> Setup:
    """A replica ahead of its master: it asks for 0-1-9 where the binlog ends at 0-1-3."""
    b, _ = txn_stream(flavor, 3)
    return Setup(scenario(flavor, b.build()), gtid="0-1-9", expected=[])


def _purged(flavor: str) -> Setup:
    """Two files, the first purged: a start before the second file's GTID_LIST is gone."""
    b = CaseBuilder(flavor)
    b, _ = txn_stream(flavor, 2, b=b)
    b.rotate()
    b, _exp = txn_stream(flavor, 2, b=b, table="t2")
    st = b.build()
    st = EventStream(st.files[1:])
    return Setup(scenario(flavor, st), gtid="0-1-1", expected=[])


def _recorded(obs: Observation) -> list[Check]:
    errs = [str(e.get("message", ""))[:160] for e in obs.of_type("error")]
    return [Check(Verdict.PASS, f"exit status {obs.exit_code}, {len(obs.rows())} row "
                  f"event(s), {len(obs.events_sent())} event(s) sent"
                  + (f", error: {errs[0]}" if errs else ""))]


def _mysql_purged(flavor: str) -> Setup:
    """MySQL: the oldest binlog left starts with PREVIOUS_GTIDS uuid:1-2 (the file with
    transactions 1-2 was purged); a client asking from uuid:1 needs transaction 2."""
    from binlogscope.wire.binlog.encode_events import encode_event, encode_previous_gtids
    from binlogscope.wire.binlog.gtid_events import (
        GtidInterval,
        GtidSetEntry,
        PreviousGtidsEvent,
    )
    from binlogscope.wire.binlog.types import EventType as E
    from mock_master.history.sources import rebase

    b = CaseBuilder(flavor)
    b, _ = txn_stream(flavor, 2, b=b)
    b.rotate()
    b, _ = txn_stream(flavor, 2, b=b, table="t2")
    st = b.build()
    st = EventStream(st.files[1:])
    sid = str(b.server_uuid)
    prev = PreviousGtidsEvent(f"{sid}:1-2", [GtidSetEntry(sid, "", [GtidInterval(1, 3)])])
    f = st.files[0]
    i = next(k for k, ev in enumerate(f.events) if ev[4] == E.PREVIOUS_GTIDS_LOG_EVENT)
    f.events[i] = encode_event(E.PREVIOUS_GTIDS_LOG_EVENT, encode_previous_gtids(prev),
                               timestamp=b.timestamp, server_id=b.server_id,
                               checksum=f.checksum)
    rebase(st)
    return Setup(scenario(flavor, st), gtid=f"{sid}:1", expected=[])


def _strict_announced(obs: Observation) -> bool | None:
    """What the client said of @slave_gtid_strict_mode (None: nothing)."""
    said = None
    for q in obs.queries():
        low = q.lower().replace(" ", "")
        if "@slave_gtid_strict_mode=" in low:
            said = "@slave_gtid_strict_mode=1" in low or "@slave_gtid_strict_mode=on" in low
    return said


def _hole(flavor: str) -> Setup:
    """0-1-1, 0-1-2, then 0-1-4, 0-1-5 (no 0-1-3: a hole); the client starts at 0-1-3."""
    b = CaseBuilder(flavor)
    b, _ = txn_stream(flavor, 2, b=b)
    b.seq = 3
    b, exp2 = txn_stream(flavor, 2, b=b, table="t_after_hole")
    return Setup(scenario(flavor, b.build()), gtid="0-1-3", expected=exp2, gtid_strict=True)


def _hole_judge(obs: Observation) -> list[Check]:
    """Strict mode announced: the server's ERR 1236 ('... missing the GTID 0-1-3 ... GTID
    strict mode is enabled') must be reported. Not announced: the server (MariaDB without
    strict mode) starts at the next GTID, 0-1-4, and the rows after it are the client's."""
    strict = _strict_announced(obs)
    if strict:
        return noticed_error(obs, "ERR 1236 for a GTID start in a hole (strict mode)")
    said = ("@slave_gtid_strict_mode=0" if strict is False
            else "no @slave_gtid_strict_mode")
    return [Check(Verdict.PASS, f"not in strict mode ({said}): the server started at 0-1-4"),
            *judge_values(obs)]


def _out_of_order(flavor: str) -> Setup:
    """seq_no 1, 2, 5, 3, 6 in one domain (a master without gtid_strict_mode writes what
    SET gtid_seq_no asks for), read from the file's start: no transaction may be dropped for
    having a lower seq_no than one already seen."""
    b = CaseBuilder(flavor)
    b, exp = txn_stream(flavor, 2, b=b)
    for seq, table in ((4, "t5"), (2, "t3"), (5, "t6")):
        b.seq = seq
        b, more = txn_stream(flavor, 1, b=b, table=table)
        exp += more
    return Setup(scenario(flavor, b.build()), expected=exp)


def _out_of_order_judge(obs: Observation) -> list[Check]:
    errs = [str(e.get("message", "")) for e in obs.of_type("error")]
    tail = obs.stderr.lower()
    if (obs.exit_code not in (0, None) or errs) and (
            "order" in tail or "strict" in tail
            or any("order" in e.lower() or "strict" in e.lower() for e in errs)):
        return [Check(Verdict.PASS, "stopped at the out-of-order GTID 0-1-3 after 0-1-5 (GTID "
                      "strict mode on the client's side)")]
    checks = judge_values(obs) if obs.has_adapter else judge_clean_end(obs)
    if obs.has_adapter and all(c.verdict == Verdict.PASS for c in checks):
        checks.append(Check(Verdict.PASS, "every transaction reported in the binlog's order, "
                            "0-1-3 after 0-1-5 included"))
    return checks


def _tagged_start(flavor: str) -> Setup:
    """uuid:1-2 untagged, uuid:mytag:1-2 tagged, then one untagged; the client starts from
    ``uuid:1-2:mytag:1`` (a MySQL 8.3+ GTID set with a tag): it gets mytag:2 and uuid:3."""
    b = CaseBuilder(flavor, server_version="9.6.0")
    b, _ = txn_stream(flavor, 2, b=b)
    b.tag = "mytag"
    b, tagged = txn_stream(flavor, 2, b=b, table="t_tagged")
    b.tag = ""
    b, last = txn_stream(flavor, 1, b=b, table="t_after")
    return Setup(scenario(flavor, b.build()), gtid=f"{b.server_uuid}:1-2:mytag:1",
                 expected=tagged[1:] + last)


def _gtid_in_dialog(obs: Observation) -> list[Check]:
    return judge_values(obs)


CASES: list[Case] = [
    Case("gtid/mysql-purged", "a MySQL GTID set start that needs purged transactions",
         "reports the server's ERR 1236 ('... purged required binary logs ...')", _mysql_purged,
         lambda o: noticed_error(o, "ERR 1236 for purged GTIDs"), flavors=("mysql",),
         needs=(NEEDS_GTID,),
         links=("https://github.com/alibaba/canal/issues/1010",
                "https://github.com/go-mysql-org/go-mysql/issues/537")),
    Case("gtid/start-after-first", "a GTID start (MariaDB 0-1-1 / MySQL uuid:1)",
         "the dump starts after the given GTID: the first transaction is not reported, the "
         "others are", _start_after_first, _gtid_in_dialog, flavors=("mariadb", "mysql"),
         needs=(NEEDS_GTID, NEEDS_VALUES)),
    Case("gtid/mysql-tagged-start", "a MySQL GTID set start with a tag (uuid:1-2:mytag:1, "
         "MySQL 8.3+)", "the tagged set sent in COM_BINLOG_DUMP_GTID (the tagged encoding): "
         "mytag:1 and uuid:1-2 not reported, mytag:2 and uuid:3 are",
         _tagged_start, _gtid_in_dialog, flavors=("mysql",),
         needs=(NEEDS_GTID, NEEDS_VALUES)),
    Case("gtid/mariadb-unknown-domain", "a MariaDB GTID start in a domain the binlog never had",
         "recorded: what the client does when the source (like MariaDB without "
         "gtid_strict_mode) accepts a position in an unknown domain", _unknown_domain,
         _recorded, flavors=("mariadb",), needs=(NEEDS_GTID,), informational=True),
    Case("gtid/mariadb-ahead-of-master", "a MariaDB GTID start beyond the master's binlog "
         "(a replica ahead of it: 0-1-9 where the binlog ends at 0-1-3)",
         "reports the server's ERR 1236 ('... which is not in the master's binlog')", _ahead,
         lambda o: noticed_error(o, "ERR 1236 for a position ahead of the master"),
         flavors=("mariadb",), needs=(NEEDS_GTID,)),
    Case("gtid/mariadb-strict-mode-hole", "a MariaDB GTID start at 0-1-3 where the binlog has "
         "0-1-2 and 0-1-4 but no 0-1-3 (a client in GTID strict mode)",
         "in strict mode (@slave_gtid_strict_mode=1) the server ends the dump with ERR 1236 "
         "('... missing the GTID 0-1-3 ... GTID strict mode is enabled') and the client "
         "reports it; not in strict mode the dump starts at 0-1-4 and its rows are reported",
         _hole, _hole_judge, flavors=("mariadb",), needs=(NEEDS_GTID,),
         links=("https://mariadb.com/kb/en/gtid/#gtid_strict_mode",)),
    Case("gtid/mariadb-out-of-order-seq-no", "MariaDB seq_no out of order in one domain "
         "(0-1-5 then 0-1-3, written without gtid_strict_mode)",
         "every transaction reported in the binlog's order (none dropped as 'already seen'), "
         "or, a client in GTID strict mode, stops at the out-of-order GTID and says so",
         _out_of_order, _out_of_order_judge, flavors=("mariadb",)),
    Case("gtid/mariadb-purged", "a MariaDB GTID start older than the oldest binlog",
         "reports the server's ERR 1236 (the GTIDs it needs were purged)", _purged,
         lambda o: noticed_error(o, "ERR 1236 for a purged position"), flavors=("mariadb",),
         needs=(NEEDS_GTID,),
         links=("https://github.com/alibaba/canal/issues/1010",
                "https://github.com/go-mysql-org/go-mysql/issues/537")),
]
