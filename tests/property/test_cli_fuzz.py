"""Bounded mutation fuzzing through the CLI entry points (issue #16: every bad input is one line).

Shipped captures and a varied subset of the fixture binlogs are damaged - bit flips, truncations,
inserted and deleted bytes, a length field set huge - with a seeded RNG (each case is
reproducible from its id: ``<file>-<seed>``), then run in-process through ``binlogscope pcap
--json/--plain/--summary`` and ``binlogscope file --json/--brief/--tree/--summary``. For every run:

- no traceback, no exception out of ``main``, no hang (a per-run timer), no memory blow-up
  (the ``--json`` run's peak allocation is traced);
- exit status 0 or 1 and at most one stderr line, which starts with ``binlogscope:``;
- ``pcap --json -`` (the damaged capture on standard input) prints what the file's run prints;
- ``--json``: what comes before the damage is kept - the events (binlogs) or the packets of the
  frames (captures) that end before the first damaged byte equal the undamaged run's.

Cases that fail because of bugs in code this test does not own are listed in :data:`KNOWN` and
marked ``xfail(strict=True)`` with the bug named.
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import signal
import struct
import sys
import traceback
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from binlogscope.cli.main import main
from tests.helpers import CAPTURES, FIXTURES
from tests.native_switch import NativeSwitch

pytestmark = pytest.mark.timeout(600, method="thread")

_BB = "blackbeam__rust_mysql_common/test-data/binlogs/"
BINLOGS = [FIXTURES / p for p in (
    "osheroff__mysql-binlog-connector-java/src/test/resources/mysql-bin.checksum-crc32",
    _BB + "json.binlog.000001",
    _BB + "mariadb-bin.000001",
    _BB + "transaction_compression.000001",
    _BB + "mysql-enum-string-set.000001",
    _BB + "binlog_transaction_with_GTID_TAG.000001",
    _BB + "update-partial-row.binlog",
    "rust-us__mysql-cdc-rs/tests/events/8.0/02_query_bigger/binlog.000733",
    "rust-us__mysql-cdc-rs/tests/events/5.7/29_row_query/log.bin",
    "zalora__binlog-parser/data/fixtures/mysql-bin.07",
)] + [CAPTURES / "mariadb-10.11-workload.000001"]
PCAPS = [
    *sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng")),
    FIXTURES / "deepflowio__deepflow/agent/resources/test/flow_generator/mysql/mysql-error.pcap",
    FIXTURES / "zeek__zeek/testing/btest/Traces/mysql/mysql-9.0.0-query-attributes.pcap",
]
SEEDS = range(24)
#: the damage of seed ``s`` is ``HOW[s % len(HOW)]``
HOW = ("flip", "truncate", "insert", "delete", "huge", "flip", "tiny", "huge", "flip", "delete")
MODES = {"file": (["--json"], ["--brief"], ["--tree"], ["--summary"]),
         "pcap": (["--json"], ["--plain"], ["--summary"])}
#: seconds one run may take (the inputs are small: a run takes well under a second)
RUN_TIMEOUT = 20.0
#: what one run may allocate at its peak (no memory blow-up on a huge length field)
MAX_PEAK_BYTES = 100 << 20

#: ``<file>-<seed>`` -> the bug (in code owned elsewhere) that makes that case fail
KNOWN: dict[str, str] = {}


@dataclass(slots=True)
class Mutation:
    data: bytes
    at: int  # the first damaged byte
    what: str


# ------------------------------------------------------------------------ structure of inputs
def _binlog_events(data: bytes) -> list[int]:
    """Offsets of the events of a binlog (v4 header walk)."""
    out, pos = [], 4
    while pos + 19 <= len(data):
        size = struct.unpack_from("<I", data, pos + 9)[0]
        if size < 19:
            break
        out.append(pos)
        pos += size
    return out


def _pcap_frames(data: bytes) -> list[tuple[int, int, int]]:
    """(start, end, length-field offset) of each frame record / pcapng packet block."""
    out: list[tuple[int, int, int]] = []
    if data[:4] == b"\x0a\x0d\x0d\x0a":
        pos = 0
        while pos + 12 <= len(data):
            btype, blen = struct.unpack_from("<II", data, pos)
            if blen < 12:
                break
            if btype in (2, 3, 6):  # packet blocks: one frame each
                out.append((pos, pos + blen, pos + 4))
            pos += blen
        return out
    pos = 24
    while pos + 16 <= len(data):
        n = struct.unpack_from("<I", data, pos + 8)[0]
        out.append((pos, pos + 16 + n, pos + 8))
        pos += 16 + n
    return out


def mutate(data: bytes, kind: str, seed: int) -> Mutation:
    """The seed's damage: which one and where follow from ``random.Random(seed)`` alone."""
    rng = random.Random(f"{kind}-{seed}-{len(data)}")
    head = 4 if kind == "file" else 24
    how = HOW[seed % len(HOW)]
    at = rng.randrange(head, len(data))
    if how == "flip":
        b = bytearray(data)
        b[at] ^= 1 << rng.randrange(8)
        return Mutation(bytes(b), at, f"bit flip at {at}")
    if how == "truncate":
        return Mutation(data[:at], at, f"cut at {at}")
    if how == "insert":
        n = rng.randrange(1, 9)
        return Mutation(data[:at] + rng.randbytes(n) + data[at:], at, f"{n} bytes inserted at {at}")
    if how == "delete":
        n = rng.randrange(1, 9)
        return Mutation(data[:at] + data[at + n :], at, f"{n} bytes deleted at {at}")
    # a length field set huge (or tiny): an event's event_size, a record's caplen, a block's
    # length
    huge = rng.choice([0xFFFFFFFF, 0xFFFFFFF0, 0x7FFFFFFF, 1 << 30, len(data) * 4 + 4])
    if how == "tiny":  # (an event of 19-23 bytes; a frame or block of a few bytes)
        huge = rng.randrange(19, 24) if kind == "file" else rng.randrange(0, 24)
    b = bytearray(data)
    if kind == "file":
        events = _binlog_events(data)[1:] or [4]
        ev = rng.choice(events)
        struct.pack_into("<I", b, ev + 9, huge)
        return Mutation(bytes(b), ev, f"event_size of the event at {ev} set to {huge}")
    frames = _pcap_frames(data)[1:]
    start, _, field = rng.choice(frames)
    endian = ">" if data[:4] in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d") else "<"
    struct.pack_into(endian + "I", b, field, huge)
    return Mutation(bytes(b), start, f"length of the frame at {start} set to {huge}")


# ------------------------------------------------------------------------ running the CLI
class _Hang(BaseException):
    pass


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise _Hang


@dataclass(slots=True)
class Run:
    rc: Any
    out: str
    err: str
    crash: str | None  # the traceback when an exception left main()
    peak: int = 0  # bytes allocated at the peak (when traced)


class _Stdin(io.TextIOWrapper):
    """Standard input holding ``data`` (``binlogscope pcap -``)."""

    def __init__(self, data: bytes) -> None:
        super().__init__(io.BytesIO(data))

    def isatty(self) -> bool:
        return False


def run_cli(argv: list[str], *, trace: bool = False, stdin: bytes | None = None) -> Run:
    """``main(argv)`` in-process; ``trace``: measure its peak allocation (``Run.peak``);
    ``stdin``: what standard input holds."""
    out, err = io.StringIO(), io.StringIO()
    saved_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = _Stdin(stdin)
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, RUN_TIMEOUT)
    crash = None
    rc: Any = None
    peak = 0
    if trace:
        tracemalloc.start()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv, out, err)
    except _Hang:
        crash = f"hang: more than {RUN_TIMEOUT} s"
    except SystemExit as exc:
        rc = exc.code
    except BaseException:  # (any escape is the finding)
        crash = traceback.format_exc()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        sys.stdin = saved_stdin
        if trace:
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
    return Run(rc, out.getvalue(), err.getvalue(), crash, peak)


def _json_lines(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        obj = json.loads(line)
        obj.pop("file", None)
        out.append(obj)
    return out


def _kept_before(kind: str, good: Run, bad: Run, original: bytes, at: int) -> None:
    """The damaged run's ``--json`` starts with everything of the undamaged run before ``at``."""
    want_all, got = _json_lines(good.out), _json_lines(bad.out)
    if kind == "file":
        want = [o for o in want_all if o["offset"] + o["event_size"] <= at]
    else:
        ends = {i + 1: end for i, (_, end, _) in enumerate(_pcap_frames(original))}
        whole = {n for n, end in ends.items() if end <= at}
        first_bad = min((n for n in ends if n not in whole), default=len(ends) + 1)
        # packets that start and (as the next packet's frame shows) end in intact frames
        want = []
        for i, o in enumerate(want_all):
            nxt = want_all[i + 1]["frame"] if i + 1 < len(want_all) else first_bad
            if o["frame"] in whole and nxt < first_bad:
                want.append(o)
        got = [o for o in got if o.get("frame", first_bad) < first_bad]
    assert got[: len(want)] == want, "output before the damage changed or was lost"


#: (kind, file name, its bytes) -> the undamaged file's ``--json`` run: the same for every seed
#: of that file (the run is deterministic and ``_json_lines`` drops the one path-bearing key),
#: so it runs once per file, not once per case (24 times)
_UNDAMAGED: dict[tuple[str, str, bytes], Run] = {}


def _undamaged_json(kind: str, good_file: Path) -> Run:
    key = (kind, good_file.name, good_file.read_bytes())
    if key not in _UNDAMAGED:
        _UNDAMAGED[key] = run_cli([kind, "--json", str(good_file)])
    return _UNDAMAGED[key]


def _cases() -> Iterator[Any]:
    for kind, paths in (("file", BINLOGS), ("pcap", PCAPS)):
        for path in paths:
            for seed in SEEDS:
                cid = f"{path.name}-{seed}"
                marks = [pytest.mark.xfail(strict=True, reason=KNOWN[cid])] if cid in KNOWN else []
                yield pytest.param(kind, path, seed, id=cid, marks=marks)


@pytest.mark.parametrize(("kind", "path", "seed"), list(_cases()))
def test_damaged_input_through_the_cli(tmp_path: Path, kind: str, path: Path, seed: int,
                                       native: NativeSwitch) -> None:
    original = path.read_bytes()
    m = mutate(original, kind, seed)
    good_file = tmp_path / "good" / path.name
    bad_file = tmp_path / "bad" / path.name
    good_file.parent.mkdir()
    bad_file.parent.mkdir()
    good_file.write_bytes(original)
    bad_file.write_bytes(m.data)
    problems = []
    for mode in MODES[kind]:
        bad = run_cli([kind, *mode, str(bad_file)], trace=mode == ["--json"])
        where = f"{kind} {' '.join(mode)} ({m.what})"
        if bad.crash is not None:
            problems.append(f"{where}: {bad.crash.strip().splitlines()[-1]}\n{bad.crash}")
            continue
        if "Traceback" in bad.err or "Traceback" in bad.out:
            problems.append(f"{where}: a traceback was printed\n{bad.err[-2000:]}")
            continue
        try:  # what a strict UTF-8 stdout takes (no lone surrogates from undecodable bytes)
            bad.out.encode("utf-8")
        except UnicodeEncodeError as exc:
            problems.append(f"{where}: the output is not valid UTF-8: {exc}")
        if bad.peak > MAX_PEAK_BYTES:
            problems.append(f"{where}: {bad.peak:,} bytes allocated at the peak")
        err_lines = bad.err.strip().splitlines()
        if bad.rc not in (0, 1) or len(err_lines) > 1 or not all(
                x.startswith("binlogscope:") for x in err_lines):
            problems.append(f"{where}: exit {bad.rc}, stderr {err_lines[:3]}")
            continue
        if kind == "pcap" and mode == ["--json"]:  # the same capture read from a pipe
            piped = run_cli([kind, *mode, "-"], stdin=m.data)
            if (piped.rc, piped.out, piped.crash) != (bad.rc, bad.out, None) or len(
                    piped.err.strip().splitlines()) > 1:
                problems.append(f"{where}: 'pcap --json -' differs from the file's run: rc "
                                f"{piped.rc}, {piped.err.strip()[:300]} {piped.crash or ''}")
        if mode == ["--json"] and native.loaded:
            with native.off():
                pure = run_cli([kind, *mode, str(bad_file)])
            if (pure.rc, pure.out, pure.err, pure.crash) != (bad.rc, bad.out, bad.err, None):
                problems.append(f"{where}: the pure-Python run differs from the native one")
        if mode == ["--json"]:
            good = _undamaged_json(kind, good_file)
            try:
                _kept_before(kind, good, bad, original, m.at)
            except AssertionError as exc:
                problems.append(f"{where}: {exc}")
    assert not problems, "\n\n".join(problems)
