"""semi-sync: an ACK with the right file and position for each flagged event and none for
unflagged ones; a wrong magic byte."""

from __future__ import annotations

from mock_master.conformance.catalogue.common import BOTH, scenario, txn_stream
from mock_master.conformance.grade import judge_clean_end, judge_rows
from mock_master.conformance.judges import mock_violations, noticed_error
from mock_master.conformance.model import NEEDS_SEMI_SYNC, Case, Check, Setup, Verdict
from mock_master.conformance.observe import Observation


def _acks(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 4)
    return Setup(scenario(flavor, b.build(), ack_every_transaction=True, ack_timeout=3.0),
                 expected=exp)


def _judge_acks(obs: Observation) -> list[Check]:
    checks = mock_violations(obs, only=("ACK",))
    req = [tuple(a) for c in obs.clients for a in c.get("acks_requested", [])]
    got = [tuple(a) for c in obs.clients for a in c.get("acks", [])]
    if not req:
        checks.append(Check(Verdict.FAIL, "the mock master asked for no ACK: the client did "
                            "not enable semi-sync (rpl_semi_sync_slave_enabled)"))
    missing = [r for r in req if r not in got]
    if missing:
        checks.append(Check(Verdict.FAIL, f"no ACK for {len(missing)} flagged event(s): "
                            + ", ".join(f"{f}:{p}" for f, p in missing[:4])))
    extra = [g for g in got if g not in req]
    if extra:
        checks.append(Check(Verdict.FAIL, "ACKs for events the mock did not flag: "
                            + ", ".join(f"{f}:{p}" for f, p in extra[:4])))
    acks = obs.client_packets("semi_sync_ack")
    if req and not missing and not extra:
        times = ", ".join(f"+{p.at:.3f}s" for p in acks[:4])
        checks.append(Check(Verdict.PASS, f"{len(got)} ACK(s), one per flagged event, each "
                            f"with its file and end position ({times})"))
    return checks + judge_clean_end(obs) + judge_rows(obs)


def _bad_magic(flavor: str) -> Setup:
    from binlogscope.wire.binlog.types import EventType as E
    from mock_master.conformance.streams import event_number
    from mock_master.scenario.faults import Action

    b, exp = txn_stream(flavor, 3)
    at = event_number(b, E.TABLE_MAP_EVENT, 2)
    return Setup(scenario(flavor, b.build(), actions=[Action("bad_semisync_magic", at=at)]),
                 expected=exp)


def _big_flagged(flavor: str) -> Setup:
    """A 17 MB statement (a DDL's own transaction: the event that ends it is the one flagged
    for an ACK) between two row transactions: its semi-sync header is on the first of its two
    packets only."""
    from mock_master.conformance.catalogue.common import SCHEMA
    from mock_master.conformance.streams import CaseBuilder

    b = CaseBuilder(flavor)
    b, exp1 = txn_stream(flavor, 1, b=b)
    b.query("CREATE TABLE big_comment (id INT) COMMENT='' /* " + "x" * (17 * 1024 * 1024)
            + " */", schema=SCHEMA)
    b, exp2 = txn_stream(flavor, 1, b=b, table="t_after")
    return Setup(scenario(flavor, b.build(), ack_every_transaction=True, ack_timeout=5.0),
                 expected=exp1 + exp2, timeout=60)


CASES: list[Case] = [
    Case("semisync/ack-each-flagged-event", "ACK every flagged event, nothing else",
         "negotiates semi-sync and sends one ACK (file, end position) for each event whose "
         "semi-sync header asks for one, none for the others", _acks, _judge_acks,
         flavors=BOTH, needs=(NEEDS_SEMI_SYNC,)),
    Case("semisync/ack-multi-packet-event", "ACK a flagged 17 MB event whose semi-sync header "
         "is on its first packet only",
         "joins the continuation packets (they carry no semi-sync header) and ACKs the event "
         "with its end position", _big_flagged, _judge_acks, flavors=BOTH,
         needs=(NEEDS_SEMI_SYNC,)),
    Case("semisync/bad-magic", "a semi-sync header with a wrong magic byte",
         "stops with an error (MySQL's replica: 'Missing magic number for semi-sync packet')",
         _bad_magic, lambda o: noticed_error(o, "the bad semi-sync magic"), flavors=BOTH,
         needs=(NEEDS_SEMI_SYNC,), links=("https://github.com/cybozu-go/moco/pull/333",)),
]
