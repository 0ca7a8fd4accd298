"""GTID: MariaDB domain-server-seq starts, an unknown domain, a purged position; MySQL GTID
set starts."""

from __future__ import annotations

from mock_master.conformance.catalogue.common import scenario, txn_stream
from mock_master.conformance.grade import judge_values
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
    Case("gtid/mariadb-unknown-domain", "a MariaDB GTID start in a domain the binlog never had",
         "recorded: what the client does when the source (like MariaDB without "
         "gtid_strict_mode) accepts a position in an unknown domain", _unknown_domain,
         _recorded, flavors=("mariadb",), needs=(NEEDS_GTID,), informational=True),
    Case("gtid/mariadb-ahead-of-master", "a MariaDB GTID start beyond the master's binlog "
         "(a replica ahead of it: 0-1-9 where the binlog ends at 0-1-3)",
         "reports the server's ERR 1236 ('... which is not in the master's binlog')", _ahead,
         lambda o: noticed_error(o, "ERR 1236 for a position ahead of the master"),
         flavors=("mariadb",), needs=(NEEDS_GTID,)),
    Case("gtid/mariadb-purged", "a MariaDB GTID start older than the oldest binlog",
         "reports the server's ERR 1236 (the GTIDs it needs were purged)", _purged,
         lambda o: noticed_error(o, "ERR 1236 for a purged position"), flavors=("mariadb",),
         needs=(NEEDS_GTID,),
         links=("https://github.com/alibaba/canal/issues/1010",
                "https://github.com/go-mysql-org/go-mysql/issues/537")),
]
