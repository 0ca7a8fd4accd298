"""``binlogscope conformance fuzz``: serve mutated streams to a client, keep what broke it.

Bounded in count and time. The base is a small, valid stream (three one-row transactions);
each mutant changes one thing of one event and is served through the same runner as the
catalogue. The mutations (the CRC32 recomputed after each, so only a client that reads the
body can notice):

* ``byte`` - one body byte replaced (same length);
* ``type`` - the type code;
* ``size`` - the header's ``event_size`` off by a delta (the bytes sent unchanged);
* ``length`` - a length or count field inside the body (found in binlogscope's annotated tree
  of the event: ``column_count``, ``schema_name_length``, ``path_length``, a length-encoded
  integer, ...) given another value, the bytes around it unchanged: a length that lies;
* ``truncate`` - the body cut short by ``value`` bytes, ``event_size`` following;
* ``insert`` - bytes (``data``, hex) inserted at ``offset``, ``event_size`` following;
* ``delete`` - ``value`` bytes removed at ``offset``, ``event_size`` following;
* ``frame`` - the event intact, its packet's framing changed (the mock master's
  ``mangle_packet``): the length header or the sequence id off by ``value``, or the payload's
  first byte (the OK byte) set to ``value`` (``offset`` 0, 1, 2).

Every mutant is a row of the report (``--json``, ``--junit``, ``--html``): pass, or fail with
what happened. A mutant is kept when the client

* **hung**: still running at the time limit (a finite stream ended by EOF);
* **crashed**: killed by a signal, or a traceback on stderr with no ``error`` line (an
  adapter that reports the library's exception as an ``error`` line has not crashed);
* **changed its output silently**: the mutant is broken by binlogscope's own decoder (a decode
  error, or a type code no server writes without LOG_EVENT_IGNORABLE_F), yet the client exits
  0 with no ``error`` line and row events that differ from what it reported for the unmutated
  stream. (A mutant that is a valid stream - a row value byte changed, its CRC32 recomputed -
  may change the rows legitimately: not a finding.)

The harness itself never stops on a mutant: one the mock master cannot serve, or whose run
fails inside the harness, is a row too (``informational``, with the reason), and the fuzz
goes on. Each kept mutant is a single change; one that inserted, deleted or cut bytes is
minimised (halved while the client still does the same thing with it, a few runs at most).
It is written to ``--out DIR`` as a case file; ``binlogscope conformance run --corpus DIR``
runs them as cases ``fuzz/...`` (pass: the client reports an error or delivers exactly the
unmutated rows; fail otherwise).
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
from mock_master.conformance.catalogue.common import scenario, txn_stream
from mock_master.conformance.clients import Client
from mock_master.conformance.model import Case, Check, Result, Setup, Verdict
from mock_master.conformance.observe import Observation
from mock_master.conformance.runner import run_case
from mock_master.scenario.faults import Action

KINDS = ("byte", "type", "size", "length", "truncate", "insert", "delete", "frame")
#: frame mutations: ``offset`` names the packet field (the mock master's mangle_packet)
FRAME_FIELDS = ("length", "seq", "first_byte")
#: kinds that change the event's length (``event_size`` follows)
RESIZING = ("truncate", "insert", "delete")


@dataclass
class Mutation:
    flavor: str
    event: int  # index in the base file's events
    kind: str  # see KINDS
    offset: int  # byte/length/insert/delete: offset in the event; size: the delta
    value: int  # byte/type/frame first_byte: the new byte; truncate/delete: how many bytes;
    #           frame length/seq: the delta
    data: str = ""  # insert: the bytes inserted; length: the field's new bytes (hex)

    def to_dict(self) -> dict[str, Any]:
        d = {"flavor": self.flavor, "event": self.event, "kind": self.kind,
             "offset": self.offset, "value": self.value}
        if self.data:
            d["data"] = self.data
        return d

    @property
    def name(self) -> str:
        tail = f"-{self.data}" if self.data else ""
        return f"{self.flavor}-e{self.event}-{self.kind}-{self.offset}-{self.value}{tail}"[:120]


def _base(flavor: str) -> Any:
    b, exp = txn_stream(flavor, 3)
    return b, exp


def _mutate(ev: bytes, m: Mutation, checksum: bool) -> bytes:
    """``ev`` with ``m`` applied; the CRC32 (when the stream has them) recomputed."""
    body_end = len(ev) - (4 if checksum else 0)
    out = bytearray(ev[:body_end])
    if m.kind == "byte":
        out[m.offset] = m.value
    elif m.kind == "type":
        out[4] = m.value
    elif m.kind == "size":
        size = int.from_bytes(out[9:13], "little") + m.offset
        out[9:13] = max(0, size).to_bytes(4, "little")
    elif m.kind == "length":
        new = bytes.fromhex(m.data)
        out[m.offset:m.offset + len(new)] = new
    elif m.kind == "truncate":
        del out[max(HEADER_LEN, len(out) - m.value):]
    elif m.kind == "insert":
        out[m.offset:m.offset] = bytes.fromhex(m.data)
    elif m.kind == "delete":
        del out[m.offset:m.offset + m.value]
    if m.kind in RESIZING:
        out[9:13] = (len(out) + (4 if checksum else 0)).to_bytes(4, "little")
    if checksum:
        return add_crc32(bytes(out))
    return bytes(out) + ev[body_end:]


def length_fields(ev: bytes, checksum: bool, flavor: str,
                  tables: Any = None) -> list[tuple[int, int, int]]:
    """(offset, width, value) of the length and count fields in ``ev``'s body, read from
    binlogscope's annotated tree of it (a leaf named ``*length*``/``*_len``/``*count*`` or a
    length-encoded integer of at most 4 bytes)."""
    from binlogscope.wire.binlog.decode import decode_event
    from binlogscope.wire.binlog.types import ChecksumAlg

    ctx = DecodeContext(checksum_alg=ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32 if checksum
                        else ChecksumAlg.BINLOG_CHECKSUM_ALG_OFF, fde_seen=True,
                        verify_checksums=False,
                        server_version="10.11.19-MariaDB-log" if flavor == "mariadb"
                        else "8.0.45")
    if tables:
        ctx.tables.update(tables)
    try:
        d = decode_event(ev, ctx, record=True)
    except Exception:
        return []
    out: list[tuple[int, int, int]] = []
    stack = [d.node] if d.node is not None else []
    while stack:
        n = stack.pop()
        stack.extend(n.children or ())
        name = (n.name or "").lower()
        if n.children or n.offset < HEADER_LEN or not isinstance(n.value, int) \
                or isinstance(n.value, bool):
            continue
        width = n.end - n.offset
        lengthy = "length" in name or name.endswith("_len") or "count" in name \
            or (n.wire or "").startswith("int<lenenc>")
        if lengthy and 1 <= width <= 4:
            out.append((n.offset, width, int(n.value)))
    return sorted(out)


def _tables(b: Any) -> dict[int, Any]:
    return {t.table_id: t for t in b.tables.values()}


def corrupt(events: list[bytes], checksum: bool) -> str | None:
    """Why binlogscope's own decoder finds the stream broken (None: a valid stream, maybe
    with other values than the base): a decode error, or a type code no server writes that is
    not flagged LOG_EVENT_IGNORABLE_F (a replica must stop there: the decoder's error,
    wire.binlog.types.unknown_not_ignorable)."""
    dec = BinlogStreamDecoder(DecodeContext(verify_checksums=checksum), record=False,
                              encrypted_file=False)  # a served stream: sent decrypted
    dec.receive_data(BINLOG_MAGIC + b"".join(events))
    dec.receive_data(b"")
    for decoded in dec.events():
        if decoded.error:
            return decoded.error
    return None


def mutant_setup(m: Mutation) -> Setup:
    b, exp = _base(m.flavor)
    f = b.files[0]
    if m.kind == "frame":
        field = FRAME_FIELDS[m.offset]
        args = {"field": field, "value": m.value} if field == "first_byte" else {
            "field": field, "delta": m.value}
        # the fault counts events sent on the connection: 1 the fake ROTATE, 2 the FDE
        act = Action("mangle_packet", at=m.event + 2, args=args)
        return Setup(scenario(m.flavor, b.build(), actions=[act]), expected=exp, timeout=15,
                     facts={"mutation": m.to_dict(),
                            "corrupt": f"the packet of event {m.event}: {field} changed"})
    f.events[m.event] = _mutate(f.events[m.event], m, f.checksum)
    return Setup(scenario(m.flavor, b.build()), expected=exp, timeout=15,
                 facts={"mutation": m.to_dict(), "corrupt": corrupt(f.events, f.checksum)})


def random_mutation(rng: random.Random, flavor: str) -> Mutation:
    b, _ = _base(flavor)
    events = b.files[0].events
    i = rng.randrange(1, len(events))  # the FORMAT_DESCRIPTION (0) is left alone
    try:
        return _mutation_of(rng, flavor, b, i)
    except Exception:  # a mutation that cannot be drawn here: a plain byte change instead
        ev = events[i]
        off = rng.randrange(HEADER_LEN, max(HEADER_LEN + 1, len(ev) - 4))
        return Mutation(flavor, i, "byte", off, rng.randrange(256))


def _mutation_of(rng: random.Random, flavor: str, b: Any, i: int) -> Mutation:
    events = b.files[0].events
    ev = events[i]
    end = len(ev) - (4 if b.checksum else 0)
    kind = rng.choice(KINDS)
    if kind == "length":
        fields = length_fields(ev, b.checksum, flavor, _tables(b))
        if fields:
            off, width, value = rng.choice(fields)
            new = rng.choice([0, 1, value - 1, value + 1, value + 7, (1 << (8 * width)) - 1,
                              value * 2 + 3])
            new %= 1 << (8 * width)
            if new == value:
                new = (value + 1) % (1 << (8 * width))
            data = new.to_bytes(width, "little")
            if width == 1 and value < 251 and new >= 251:  # a length-encoded int stays one byte
                data = bytes((250,))
            return Mutation(flavor, i, kind, off, value, data.hex())
        kind = "byte"
    if kind == "byte":
        off = rng.randrange(HEADER_LEN, end) if end > HEADER_LEN else HEADER_LEN - 1
        return Mutation(flavor, i, kind, off, rng.randrange(256))
    if kind == "type":
        return Mutation(flavor, i, kind, 4, rng.randrange(256))
    if kind == "frame":
        field = rng.randrange(len(FRAME_FIELDS))
        if FRAME_FIELDS[field] == "first_byte":
            return Mutation(flavor, i, kind, field, rng.choice((0xFE, 0xFF, 0x01, 0xEF)))
        return Mutation(flavor, i, kind, field, rng.choice((-4, -1, 1, 2) if field == 0
                                                            else (-1, 1, 5)))
    if kind == "size":
        return Mutation(flavor, i, kind, rng.choice((-3, -1, 1, 2, 7, 1000)), 0)
    if kind == "truncate":
        return Mutation(flavor, i, kind, 0, rng.randint(1, max(1, end - HEADER_LEN)))
    off = rng.randrange(HEADER_LEN, end + 1)
    if kind == "insert":
        n = rng.choice((1, 2, 3, 8, 64))
        return Mutation(flavor, i, kind, off, n, rng.randbytes(n).hex())
    return Mutation(flavor, i, "delete", min(off, end - 1), rng.randint(1, max(1, end - off)))


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


def _not_served(m: Mutation, why: str) -> Result:
    """A mutant the harness could not run: a row of the report, not a stop."""
    return Result(f"fuzz/{m.name}", "fuzz", m.flavor, Verdict.INFORMATIONAL,
                  f"mutant: {m.kind} of event {m.event}",
                  [Check(Verdict.INFORMATIONAL, f"not run: {why}")],
                  {"mutation": m.to_dict()}, 0.0)


def run_mutant(m: Mutation, client: Client, base_rows: list[Any] | None) -> Result:
    """One mutant against ``client``: its graded result, whatever the mutant does to the
    harness (a mutant the mock master cannot load or serve is an informational row)."""
    try:
        mutant_setup(m).scenario.load_stream().reindex()
    except Exception as exc:
        return _not_served(m, f"the mock master cannot load it ({type(exc).__name__}: "
                           f"{str(exc)[:200]})")
    try:
        r = run_case(mutant_case(m, base_rows), client, m.flavor)
    except Exception as exc:
        return _not_served(m, f"the harness failed on it ({type(exc).__name__}: "
                           f"{str(exc)[:200]})")
    r.evidence["mutation"] = m.to_dict()
    return r


def _smaller(m: Mutation) -> Mutation | None:
    """The same mutation with half as many bytes (None: it is one byte already)."""
    if m.kind == "insert" and len(m.data) > 2:
        half = m.data[: (len(m.data) // 4) * 2 or 2]
        return Mutation(m.flavor, m.event, m.kind, m.offset, len(half) // 2, half)
    if m.kind in ("delete", "truncate") and m.value > 1:
        return Mutation(m.flavor, m.event, m.kind, m.offset, m.value // 2, m.data)
    return None


def minimise(m: Mutation, r: Result, client: Client, base_rows: list[Any] | None, *,
             tries: int = 4) -> tuple[Mutation, Result]:
    """A kept mutant that inserted, deleted or cut bytes, made smaller while the client
    still does the same thing with it (the same finding): at most ``tries`` more runs."""
    best_m, best_r = m, r
    for _ in range(tries):
        cand = _smaller(best_m)
        if cand is None:
            break
        r2 = run_mutant(cand, client, base_rows)
        if r2.verdict != best_r.verdict or r2.checks[0].text != best_r.checks[0].text:
            break
        best_m, best_r = cand, r2
    if best_m is not m:
        best_r.evidence["minimised_from"] = m.to_dict()
    return best_m, best_r


def fuzz(client: Client, *, flavors: tuple[str, ...], count: int, seconds: float,
         seed: int, out: Path | None,
         progress: Callable[[Mutation, str | None], None] | None = None
         ) -> list[tuple[Mutation, Result]]:
    """Run up to ``count`` mutants within ``seconds``; every (mutant, result), the kept ones
    (not pass, not informational) written to ``out``."""
    rng = random.Random(seed)
    bases = {f: _base_rows(client, f) for f in flavors}
    deadline = time.monotonic() + seconds
    done: list[tuple[Mutation, Result]] = []
    for i in range(count):
        if time.monotonic() > deadline:
            break
        flavor = flavors[i % len(flavors)]
        m = random_mutation(rng, flavor)
        r = run_mutant(m, client, bases[flavor])
        kept = r.verdict not in (Verdict.PASS, Verdict.INFORMATIONAL)
        if kept:
            m, r = minimise(m, r, client, bases[flavor])
        what = None if r.verdict == Verdict.PASS else r.checks[0].text
        if progress is not None:
            progress(m, what if kept else (None if what is None else f"({what})"))
        done.append((m, r))
        if kept and out is not None:
            out.mkdir(parents=True, exist_ok=True)
            (out / f"{m.name}.json").write_text(json.dumps(
                {"mutation": m.to_dict(), "finding": what, "client": client.name,
                 "base_rows": bases[flavor],
                 **({"minimised_from": r.evidence["minimised_from"]}
                    if "minimised_from" in r.evidence else {})},
                indent=2, default=str) + "\n")
    return done


def kept(results: list[tuple[Mutation, Result]]) -> list[tuple[Mutation, Result]]:
    return [(m, r) for m, r in results if r.verdict not in (Verdict.PASS,
                                                             Verdict.INFORMATIONAL)]


def load_corpus(directory: str | Path) -> list[Case]:
    """The kept mutants of ``directory`` as cases (``fuzz/<name>``)."""
    cases = []
    for p in sorted(Path(directory).glob("*.json")):
        d = json.loads(p.read_text())
        m = Mutation(**d["mutation"])
        base = d.get("base_rows")
        cases.append(mutant_case(m, [tuple(x) for x in base] if base is not None else None))
    return cases
