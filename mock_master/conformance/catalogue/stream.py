"""stream: stream control - ROTATE, ERR mid-stream (1236 variants, a shutdown), disconnects
mid-transaction and mid-event, a TCP cut inside an event's packet (a correct client resumes
with nothing lost or repeated), a corrupt checksum, a duplicated event, a slow drip."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from binlogscope.wire.binlog.types import EventType as E
from mock_master.conformance.catalogue.common import BOTH, scenario, txn_stream
from mock_master.conformance.grade import judge_clean_end, judge_rows, judge_values
from mock_master.conformance.judges import (
    exactly_once,
    noticed_error,
    reconnected,
    resume_position,
)
from mock_master.conformance.model import NEEDS_VALUES, Case, Check, Setup, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.streams import CaseBuilder, event_number
from mock_master.scenario.faults import Action


def _rotate(flavor: str) -> Setup:
    b = CaseBuilder(flavor)
    b, exp1 = txn_stream(flavor, 2, b=b)
    b.rotate()
    b, exp2 = txn_stream(flavor, 2, b=b, table="t_after_rotate")
    return Setup(scenario(flavor, b.build()), expected=exp1 + exp2)


ROWS = -1  # the flavour's WRITE_ROWS event (v1 MariaDB, v2 MySQL)


def _fault(kind: str, event: int, occurrence: int = 2, **args: Any
           ) -> Callable[[str], Setup]:
    def build(flavor: str) -> Setup:
        b, exp = txn_stream(flavor, 3)
        code = event if event != ROWS else (E.WRITE_ROWS_EVENT_V1 if flavor == "mariadb"
                                            else E.WRITE_ROWS_EVENT)
        at = event_number(b, code, occurrence)
        return Setup(scenario(flavor, b.build(), actions=[Action(kind, at=at, args=args)]),
                     expected=exp, facts={"at": at})
    return build


def _error_judge(what: str) -> Callable[[Observation], list[Check]]:
    def judge(obs: Observation) -> list[Check]:
        if reconnected(obs):
            return [*exactly_once(obs), Check(Verdict.PASS, f"{what}: reconnected and resumed")]
        checks = noticed_error(obs, what)
        # the rows before the error must have been delivered
        first = obs.setup.expected[:1]
        got = obs.rows()
        if obs.has_adapter and first and not got:
            checks.append(Check(Verdict.FAIL, "the rows sent before the error were not "
                                "reported"))
        return checks
    return judge


def _resume(obs: Observation) -> list[Check]:
    """Cut mid-transaction or mid-event: resume with nothing lost or repeated, else at least
    say the stream broke."""
    if reconnected(obs):
        if not obs.has_adapter:  # judged on the wire: where it asked to resume
            return resume_position(obs)
        n = len({p.conn for p in obs.dumps()})
        return [*exactly_once(obs), *resume_position(obs),
                Check(Verdict.PASS, f"reconnected ({n} dump connections)")]
    checks = noticed_error(obs, "the connection was cut")
    if checks[0].verdict == Verdict.PASS:
        return [Check(Verdict.NON_STRICT, "the client reported the cut but did not resume "
                      f"(exit status {obs.exit_code})")]
    return checks


def _corrupt(obs: Observation) -> list[Check]:
    at = obs.setup.facts["at"]
    errors = [str(e.get("message", "")) for e in obs.of_type("error")]
    if errors:
        return [Check(Verdict.PASS, f"reported the corrupt event (#{at}): {errors[0][:160]}")]
    if obs.exit_code not in (0, None):
        return [Check(Verdict.PASS, f"stopped at the corrupt event (#{at}), exit status "
                      f"{obs.exit_code}")]
    return [Check(Verdict.NON_STRICT, "the CRC32 mismatch went unnoticed (the client does "
                  "not verify checksums): the event's rows were delivered")]


def _duplicate(obs: Observation) -> list[Check]:
    n = len(obs.rows())
    want = len(obs.setup.expected)
    if n == want + 1:
        return [Check(Verdict.PASS, "the duplicated rows event was reported twice (the "
                      "client trusts the stream)")]
    if n == want:
        return [Check(Verdict.PASS, "the duplicated rows event was reported once (the client "
                      "dropped the repeat)")]
    return [Check(Verdict.PASS, f"{n} row events reported for {want} + 1 duplicate")]


def _drip(flavor: str) -> Setup:
    b, exp = txn_stream(flavor, 3)
    return Setup(scenario(flavor, b.build(), actions=[
        Action("slow_drip", bytes_per_second=1500)]), expected=exp, timeout=30)


def _1236(msg: str) -> Callable[[str], Setup]:
    return _fault("send_error", E.TABLE_MAP_EVENT, 2, code=1236, message=msg)


_ERRS = {
    "err-1236-purged": "Could not find first log file name in binary log index file",
    "err-1236-impossible-position": "Client requested master to start replication from "
    "impossible position",
    "err-1236-truncated": "binlog truncated in the middle of event; consider out of disk space "
    "on master",
}

CASES: list[Case] = [
    Case("stream/rotate-real", "a real ROTATE to the next file mid-stream",
         "follows the ROTATE into the next file (its FORMAT_DESCRIPTION) and decodes on",
         _rotate, judge_values, flavors=BOTH, needs=(NEEDS_VALUES,)),
    *[Case(f"stream/{name}", f"ERR 1236 mid-stream: {msg[:60]}",
           "reports the error (an error line or a non-zero exit) after the rows before it; "
           "never ends as if the binlog had ended", _1236(msg), _error_judge("ERR 1236"),
           flavors=BOTH) for name, msg in _ERRS.items()],
    Case("stream/server-shutdown", "ERR 1053 (server shutdown in progress) mid-stream",
         "reports the shutdown or reconnects; never ends silently",
         _fault("send_error", E.TABLE_MAP_EVENT, 2, code=1053,
                message="Server shutdown in progress"), _error_judge("ERR 1053"),
         flavors=BOTH),
    Case("stream/disconnect-mid-transaction", "the connection closed after a TABLE_MAP, "
         "inside a transaction",
         "resumes from the last transaction boundary: every row reported exactly once",
         _fault("disconnect_after_event", E.TABLE_MAP_EVENT, 2), _resume, flavors=BOTH),
    Case("stream/disconnect-mid-event", "a rows event cut short (its packet holds only the "
         "first half of it), then the connection closed",
         "resumes with nothing lost or repeated, or reports the broken stream (a replica "
         "that stops on the corrupt event is non-strict here: it does not resume)",
         _fault("truncate_event", ROWS, 2), _resume, flavors=BOTH),
    Case("stream/tcp-cut-mid-packet", "the TCP connection closed inside a rows event's "
         "packet (its length header promises bytes that never come)",
         "notices the short read and resumes with nothing lost or repeated, or reports the "
         "broken connection; never ends as if the binlog had ended",
         _fault("cut_packet", ROWS, 2), _resume, flavors=BOTH),
    Case("stream/corrupt-checksum", "a rows event with a wrong CRC32",
         "a verifying client stops at the event and does not deliver it",
         _fault("corrupt_checksum_at", ROWS, 2), _corrupt, flavors=BOTH,
         needs=(NEEDS_VALUES,)),
    Case("stream/duplicate-event", "a rows event sent twice", "recorded: whether the client "
         "reports the repeat", _fault("duplicate_event", ROWS, 1), _duplicate,
         flavors=BOTH, needs=(NEEDS_VALUES,), informational=True),
    Case("stream/slow-drip", "the stream at 1500 bytes/s", "waits for partial packets: every "
         "row reported", _drip, lambda o: judge_clean_end(o) + judge_rows(o), flavors=BOTH,
         needs=(NEEDS_VALUES,)),
]
