"""framing: the exact-0xFFFFFF payload followed by an empty packet, events over several
packets."""

from __future__ import annotations

from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue.common import BOTH, scenario, txn_stream
from mock_master.conformance.grade import judge_values
from mock_master.conformance.model import NEEDS_VALUES, Case, Setup
from mock_master.conformance.streams import event_number
from mock_master.scenario.faults import Action

MAX_PAYLOAD = 0xFFFFFF


def _split(size: int) -> object:
    def build(flavor: str) -> Setup:
        b, exp = txn_stream(flavor, 2)
        # before the second transaction's GTID (counted in the source stream: 1 = first event)
        gtid = E.GTID_EVENT if flavor == "mariadb" else E.GTID_LOG_EVENT
        at = event_number(b, gtid, 2) - 1
        return Setup(scenario(flavor, b.build(), actions=[Action("split_packet", at=at,
                                                                 size=size)]),
                     expected=exp, timeout=60)
    return build


CASES: list[Case] = [
    Case("framing/exact-0xffffff", "an event whose packet payload is exactly 0xFFFFFF bytes",
         "reads the empty packet that must follow a 0xFFFFFF-byte payload, and goes on",
         _split(MAX_PAYLOAD - 1), judge_values, flavors=BOTH,  # type: ignore[arg-type]
         needs=(NEEDS_VALUES,)),
    Case("framing/multi-packet", "a 17 MB event over two packets",
         "joins the continuation packets into one event", _split(17 * 1024 * 1024),  # type: ignore[arg-type]
         judge_values, flavors=BOTH, needs=(NEEDS_VALUES,)),
]
