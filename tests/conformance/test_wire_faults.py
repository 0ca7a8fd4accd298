"""The conformance cases' wire faults happen where they say: a TCP cut inside an event's packet
(the server's last bytes are a length header and part of its payload, then the connection
closes), judged on what the recording relay saw."""

from __future__ import annotations

from typing import Any

import pytest

from mock_master.conformance.catalogue import catalogue
from mock_master.conformance.clients import make_client
from mock_master.conformance.model import Case, Check, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.runner import run_case
from mock_master.diff.capture import SERVER

pytestmark = pytest.mark.network


def _frames(data: bytes) -> tuple[list[int], int]:
    """The payload lengths of the whole packets in ``data`` and how many bytes are left over."""
    pos, out = 0, []
    while pos + 4 <= len(data):
        n = int.from_bytes(data[pos:pos + 3], "little")
        if pos + 4 + n > len(data):
            break
        out.append(n)
        pos += 4 + n
    return out, len(data) - pos


@pytest.mark.parametrize("flavor", ["mariadb", "mysql"])
def test_the_tcp_cut_is_inside_an_event_packet(flavor: str) -> None:
    case = next(c for c in catalogue() if c.id == "stream/tcp-cut-mid-packet")
    seen: dict[str, Any] = {}

    def judge(obs: Observation) -> list[Check]:
        seen["server"] = obs.conversations[0].data(SERVER)
        seen["closed_by"] = obs.conversations[0].closed_by
        seen["faults"] = [f for c in obs.clients for f in c.get("faults", [])]
        return case.judge(obs)

    r = run_case(Case(case.id, case.title, case.expect, case.build, judge,
                      flavors=case.flavors), make_client("binlogscope"), flavor)
    whole, rest = _frames(seen["server"])
    assert whole, "no whole packet before the cut"
    assert rest > 4, "the connection did not end inside a packet"
    tail = seen["server"][-rest:]
    promised = int.from_bytes(tail[:3], "little")
    assert 0 < rest - 4 < promised, (rest, promised)
    assert tail[4] == 0x00 and tail[4 + 1 + 4] in (23, 30), "not an event packet (OK byte, type)"
    assert any("cut_packet" in f for f in seen["faults"])
    # the reference client resumes: every row once, at the end of the last whole event
    assert r.verdict == Verdict.PASS, r.checks
