"""``binlogscope conformance fuzz``: serve mutated streams to a client, keep what broke it.

Bounded in count and time. The base is a small, valid stream (three one-row transactions);
each mutant changes one thing of one event - a body byte (the CRC32 recomputed, so only a
client that reads the body can notice), the type code, or the event_size field - and is
served through the same runner as the catalogue. A mutant is kept when the client

* **hung**: still running at the time limit (a finite stream ended by EOF);
* **crashed**: killed by a signal, or a traceback on stderr with no ``error`` line (an
  adapter that reports the library's exception as an ``error`` line has not crashed);
* **changed its output silently**: the mutant is broken by binlogscope's own decoder (a decode
  error, or a type code no server writes without LOG_EVENT_IGNORABLE_F), yet the client exits
  0 with no ``error`` line and row events that differ from what it reported for the unmutated
  stream. (A mutant that is a valid stream - a row value byte changed, its CRC32 recomputed -
  may change the rows legitimately: not a finding.)

Each kept mutant is a single change (so it is already minimal) and is written to ``--out DIR``
as a case file; ``binlogscope conformance run --corpus DIR`` runs them as cases ``fuzz/...``
(pass: the client reports an error or delivers exactly the unmutated rows; fail otherwise).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from binlogscope.wire.binlog.context import DecodeContext
from binlogscope.wire.binlog.encode_events import add_crc32
from binlogscope.wire.binlog.header import BINLOG_MAGIC, HEADER_LEN
from binlogscope.wire.binlog.stream import BinlogStreamDecoder
from binlogscope.wire.binlog.types import EventType
from mock_master.conformance.catalogue.common import scenario, txn_stream
from mock_master.conformance.clients import Client
from mock_master.conformance.model import Case, Check, Result, Setup, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.runner import run_case

KINDS = ("byte", "type", "size")


@dataclass
class Mutation:
    flavor: str
    event: int  # index in the base file's events
    kind: str  # byte | type | size
    offset: int  # byte: offset in the event; size: the delta
    value: int

    def to_dict(self) -> dict[str, Any]:
        return {"flavor": self.flavor, "event": self.event, "kind": self.kind,
                "offset": self.offset, "value": self.value}

    @property
    def name(self) -> str:
        return f"{self.flavor}-e{self.event}-{self.kind}-{self.offset}-{self.value}"


def _base(flavor: str) -> Any:
    b, exp = txn_stream(flavor, 3)
    return b, exp


def _mutate(ev: bytes, m: Mutation, checksum: bool) -> bytes:
    out = bytearray(ev)
    if m.kind == "byte":
        out[m.offset] = m.value
    elif m.kind == "type":
        out[4] = m.value
    else:
        size = int.from_bytes(out[9:13], "little") + m.offset
        out[9:13] = max(0, size).to_bytes(4, "little")
    if checksum:
        return add_crc32(bytes(out[:-4]))
    return bytes(out)


def corrupt(events: list[bytes], checksum: bool) -> str | None:
    """Why binlogscope's own decoder finds the stream broken (None: a valid stream, maybe
    with other values than the base): a decode error, or a type code no server writes that is
    not flagged LOG_EVENT_IGNORABLE_F (a replica must stop there)."""
    dec = BinlogStreamDecoder(DecodeContext(verify_checksums=checksum), record=False)
    dec.receive_data(BINLOG_MAGIC + b"".join(events))
    dec.receive_data(b"")
    for decoded in dec.events():
        if decoded.error:
            return decoded.error
    for raw in events:
        try:
            EventType(raw[4])
        except ValueError:
            if not int.from_bytes(raw[17:19], "little") & 0x80:
                return f"event type {raw[4]} is unknown and not flagged ignorable"
    return None


def mutant_setup(m: Mutation) -> Setup:
    b, exp = _base(m.flavor)
    f = b.files[0]
    f.events[m.event] = _mutate(f.events[m.event], m, f.checksum)
    return Setup(scenario(m.flavor, b.build()), expected=exp, timeout=15,
                 facts={"mutation": m.to_dict(), "corrupt": corrupt(f.events, f.checksum)})


def random_mutation(rng: random.Random, flavor: str) -> Mutation:
    b, _ = _base(flavor)
    events = b.files[0].events
    i = rng.randrange(1, len(events))  # the FORMAT_DESCRIPTION (0) is left alone
    ev = events[i]
    kind = rng.choice(KINDS)
    if kind == "byte":
        end = len(ev) - (4 if b.checksum else 0)
        off = rng.randrange(HEADER_LEN, end) if end > HEADER_LEN else HEADER_LEN - 1
        return Mutation(flavor, i, kind, off, rng.randrange(256))
    if kind == "type":
        return Mutation(flavor, i, kind, 4, rng.randrange(256))
    return Mutation(flavor, i, kind, rng.choice((-3, -1, 1, 2, 7, 1000)), 0)


def _rows(obs: Observation) -> list[Any]:
    return [(ln.get("type"), ln.get("table"), ln.get("rows")) for ln in obs.rows()]


def finding(obs: Observation, base_rows: list[Any] | None) -> str | None:
    """What the mutant did to the client: hang, crash, silent-change, or None."""
    if obs.timed_out:
        return "hang"
    errors = obs.of_type("error")
    if obs.exit_code is not None and obs.exit_code < 0:
        return "crash"
    if "Traceback" in obs.stderr and not errors:
        return "crash"
    if (obs.exit_code == 0 and not errors and base_rows is not None and obs.has_adapter
            and obs.setup.facts.get("corrupt") and _rows(obs) != base_rows):
        return "silent-change"
    return None


def _judge_for(base_rows: list[Any] | None) -> Callable[[Observation], list[Check]]:
    def judge(obs: Observation) -> list[Check]:
        what = finding(obs, base_rows)
        if what is None:
            errs = [str(e.get("message", ""))[:120] for e in obs.of_type("error")]
            return [Check(Verdict.PASS, "reported the broken event: " + errs[0] if errs else
                          f"exit status {obs.exit_code}, the unmutated rows")]
        return [Check(Verdict.FAIL, {"hang": "still running at the time limit",
                                     "crash": "crashed (a traceback or a signal, no error "
                                     "reported)",
                                     "silent-change": "exit 0, no error, and other rows than "
                                     "for the unmutated stream"}[what])]
    return judge


def mutant_case(m: Mutation, base_rows: list[Any] | None) -> Case:
    return Case(f"fuzz/{m.name}", f"mutant: {m.kind} of event {m.event} "
                f"({m.offset}, {m.value})",
                "reports an error, or delivers exactly the rows of the unmutated stream; never "
                "hangs, crashes or changes its output silently",
                lambda flavor: mutant_setup(m), _judge_for(base_rows), flavors=(m.flavor,))


def _base_rows(client: Client, flavor: str) -> list[Any] | None:
    holder: dict[str, Any] = {}

    def judge(obs: Observation) -> list[Check]:
        holder["rows"] = _rows(obs)
        return []

    def build(f: str) -> Setup:
        b, exp = _base(f)
        return Setup(scenario(f, b.build()), expected=exp)

    run_case(Case("fuzz/base", "the unmutated stream", "", build, judge, flavors=(flavor,)),
             client, flavor)
    return holder.get("rows") if client.adapter != "none" else None


def fuzz(client: Client, *, flavors: tuple[str, ...], count: int, seconds: float,
         seed: int, out: Path | None,
         progress: Callable[[Mutation, str | None], None] | None = None
         ) -> list[tuple[Mutation, Result]]:
    """Run up to ``count`` mutants within ``seconds``; the kept ones (written to ``out``)."""
    rng = random.Random(seed)
    bases = {f: _base_rows(client, f) for f in flavors}
    deadline = time.monotonic() + seconds
    kept: list[tuple[Mutation, Result]] = []
    for i in range(count):
        if time.monotonic() > deadline:
            break
        flavor = flavors[i % len(flavors)]
        m = random_mutation(rng, flavor)
        r = run_case(mutant_case(m, bases[flavor]), client, flavor)
        what = None if r.verdict == Verdict.PASS else r.checks[0].text
        if progress is not None:
            progress(m, what)
        if r.verdict != Verdict.PASS:
            kept.append((m, r))
            if out is not None:
                out.mkdir(parents=True, exist_ok=True)
                (out / f"{m.name}.json").write_text(json.dumps(
                    {"mutation": m.to_dict(), "finding": what, "client": client.name,
                     "base_rows": bases[flavor]}, indent=2, default=str) + "\n")
    return kept


def load_corpus(directory: str | Path) -> list[Case]:
    """The kept mutants of ``directory`` as cases (``fuzz/<name>``)."""
    cases = []
    for p in sorted(Path(directory).glob("*.json")):
        d = json.loads(p.read_text())
        m = Mutation(**d["mutation"])
        base = d.get("base_rows")
        cases.append(mutant_case(m, [tuple(x) for x in base] if base is not None else None))
    return cases
