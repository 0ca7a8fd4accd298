"""``export --jobs N`` with binlog files cut into units at transaction starts
(export/split.py): the dataset, the ``errors`` rows, the messages and the exit code are
``--jobs 1``'s on real MariaDB and MySQL files with and without checksums, on a file cut into
several units, on a cut that was no event boundary (bytes in a statement that look like a GTID
event), on a damaged file, and after Ctrl-C inside a cut input and ``--resume``."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import binlogscope.export.parallel as parallel
import binlogscope.export.split as split
from binlogscope.cli.main import main
from binlogscope.drivers.binlog_file import read_binlog_file, transaction_starts
from binlogscope.export.arrow import read_state
from binlogscope.export.core import JOBS_STAGING
from binlogscope.export.split import Unit
from binlogscope.export.task import InputReport
from binlogscope.wire.binlog.control_events import XidEvent
from binlogscope.wire.binlog.encode_events import (
    encode_event,
    encode_gtid,
    encode_value_event,
    format_description,
)
from binlogscope.wire.binlog.encode_query import encode_query, query_event
from binlogscope.wire.binlog.gtid_events import GtidEvent
from tests.export.datasets import assert_same_dataset, assert_same_errors
from tests.helpers import CAPTURES, FIXTURES

REPO = Path(__file__).resolve().parents[2]
JAVA = FIXTURES / "osheroff__mysql-binlog-connector-java/src/test/resources"
BLACKBEAM = FIXTURES / "blackbeam__rust_mysql_common/test-data/binlogs"
#: real files with GTID events: (file, what it is)
REAL = [
    (CAPTURES / "pcap-mariadb-replica.binlog", "MariaDB 10.11, CRC32"),
    (CAPTURES / "pcap-compressed-zlib.binlog", "MariaDB 10.11, CRC32, compressed events"),
    (FIXTURES / "zalora__binlog-parser/data/fixtures/mysql-bin.07", "MariaDB 10.0, no checksums"),
    (JAVA / "mysql-bin.checksum-crc32", "MySQL 5.7.21, CRC32"),
    (JAVA / "mysql-bin.checksum-none", "MySQL 5.7.20, no checksums"),
    (BLACKBEAM / "bug27213339-bin.000001", "MySQL 5.7.22, CRC32"),
    (BLACKBEAM / "json.binlog.000001", "MySQL 8.0.22, JSON"),
    (BLACKBEAM / "vector.binlog", "MySQL 9.0.1"),
    (FIXTURES / "rust-us__mysql-cdc-rs/tests/events/8.0/02_query_bigger/binlog.000733",
     "MySQL 8.0.31, anonymous GTIDs"),
    (FIXTURES / "apecloud__mysql-binlog-connector-rust/tests/parse_file_tests/mysql-bin.000057",
     "MySQL 8.0.31, TRANSACTION_PAYLOAD"),
    (FIXTURES / "alibaba__canal/parse/src/test/resources/binlog/tsdb/mysql-bin.000003",
     "MySQL 5.7.19, DDL"),
]
TS = 1_700_000_000


@pytest.fixture
def small_units(monkeypatch: pytest.MonkeyPatch) -> list[tuple[list[Unit], str | None]]:
    """Units of a few hundred bytes (the fixtures are small); every input's verdict (its units
    and :func:`split.verified`'s answer), as the parent saw them."""
    monkeypatch.setattr(split, "MIN_UNIT", 256)
    monkeypatch.setattr(split, "UNIT_COST", 16)
    verdicts: list[tuple[list[Unit], str | None]] = []
    original = parallel.verified

    def spy(units: list[tuple[Unit, InputReport]]) -> str | None:
        answer = original(units)
        verdicts.append(([u for u, _ in units], answer))
        return answer

    monkeypatch.setattr(parallel, "verified", spy)
    return verdicts


def _export(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["export", *argv], out=out, err=err)
    return rc, out.getvalue(), err.getvalue()


def _same_as_one_process(tmp_path: Path, inputs: list[str], jobs: int,
                         name: str = "many") -> tuple[int, str]:
    """Export ``inputs`` with one process and with ``jobs``: the same dataset, errors rows,
    exit code, messages and counts line."""
    rc1, out1, err1 = _export(*inputs, "--out", str(tmp_path / f"{name}-one"), "-j", "1")
    rcn, outn, errn = _export(*inputs, "--out", str(tmp_path / name), "-j", str(jobs))
    assert rcn == rc1 and errn == err1 and "Traceback" not in errn
    assert outn.split(" to ")[0] == out1.split(" to ")[0]
    assert_same_dataset(tmp_path / f"{name}-one", tmp_path / name)
    assert_same_errors(tmp_path / f"{name}-one", tmp_path / name)
    assert not (tmp_path / name / JOBS_STAGING).exists()
    return rcn, errn


@pytest.mark.parametrize(("path", "what"), REAL, ids=[w for _, w in REAL])
def test_a_cut_file_exports_as_one_process_does(
        tmp_path: Path, small_units: list[tuple[list[Unit], str | None]], path: Path,
        what: str) -> None:
    rc, _ = _same_as_one_process(tmp_path, [str(path)], 4)
    assert rc == 0
    [(units, answer)] = small_units  # (the file was cut, and its units' reads were kept)
    assert len(units) >= (3 if path.stat().st_size > 4000 else 2) and answer is None, (
        what, units, answer)
    assert [u.start for u in units[1:]] == [u.stop for u in units[:-1]]


def test_several_inputs_cut_into_several_units_each(
        tmp_path: Path, small_units: list[tuple[list[Unit], str | None]]) -> None:
    """Three inputs over 4 workers: each cut (the big one into 4 units or more); the MariaDB
    workload's old
    temporal columns (their decimals from an earlier CREATE TABLE) make its units doubtful:
    it is read whole, with the same rows."""
    inputs = [str(JAVA / "mysql-bin.checksum-crc32"), str(CAPTURES / "mariadb-10.11-workload"
                                                          ".000001"),
              str(JAVA / "mysql-bin.checksum-none")]
    _same_as_one_process(tmp_path, inputs, 4)
    assert [len(units) >= 2 for units, _ in small_units] == [True] * 3
    assert len(small_units[1][0]) >= 4
    answers = [answer for _, answer in small_units]
    assert answers[0] is None and answers[2] is None
    assert answers[1] is not None and "temporal columns of the old format" in answers[1]
    state = read_state(tmp_path / "many")
    assert state is not None and state["checkpoint"] == 3  # (one checkpoint per input)


# ----------------------------------------------------------------------------- fake cuts

def _fake_chain(at: int, crc: bool, valid: bool, n: int) -> bytes:
    """Bytes that look like a GTID event at offset ``at`` of a file and ``n - 1`` XID events
    after it, each ``log_pos`` its end offset (``valid``: with correct CRC32s)."""
    out = bytearray()
    sid = "3e11fa47-71ca-11e1-9e33-c80aa9429562"
    for k in range(n):
        body = (encode_gtid(GtidEvent(f"{sid}:999", 1, sid, 999)) if k == 0
                else (7000 + k).to_bytes(8, "little"))
        size = 19 + len(body) + (4 if crc else 0)
        raw = bytearray(encode_event(33 if k == 0 else 16, body, timestamp=TS,
                                     log_pos=at + len(out) + size, checksum=crc))
        if crc and not valid:
            raw[-1] ^= 0xFF
        out += raw
    return bytes(out)


class _File:
    """A binlog file built event by event, each ``log_pos`` its end offset."""

    def __init__(self, crc: bool = True) -> None:
        self.crc = crc
        self.out = bytearray(b"\xfebin")

    def put(self, value: Any) -> None:
        size = len(encode_value_event(value, timestamp=TS, checksum=self.crc))
        self.out += encode_value_event(value, timestamp=TS, log_pos=len(self.out) + size,
                                       checksum=self.crc)

    def query(self, body: bytes) -> None:
        size = 19 + len(body) + (4 if self.crc else 0)
        self.out += encode_event(2, body, timestamp=TS, log_pos=len(self.out) + size,
                                 checksum=self.crc)


def _crafted(path: Path, *, crc: bool, valid: bool, chain: int) -> int:
    """A MySQL 5.7 binlog of 21 transactions (GTID, BEGIN, INSERT, XID); the 11th's INSERT
    holds a long string literal that ends with :func:`_fake_chain`; the file's middle falls
    inside that literal. Returns the fake GTID's offset."""
    f = _File(crc)
    sid = "4e11fa47-71ca-11e1-9e33-c80aa9429562"
    f.put(format_description("5.7.20-log", checksum=crc))
    fake_at = 0
    for n in range(1, 22):
        f.put(GtidEvent(f"{sid}:{n}", 1, sid, n))
        f.query(encode_query(query_event("BEGIN", "test")))
        head = encode_query(query_event("INSERT INTO t VALUES ('", "test"))
        literal = b"x" * 8
        if n == 11:
            fill = b"y" * 3000
            fake_at = len(f.out) + 19 + len(head) + len(fill)
            literal = fill + _fake_chain(fake_at, crc, valid, chain)
        f.query(head + literal + b"')")
        f.put(XidEvent(100 + n))
    path.write_bytes(bytes(f.out))
    return fake_at


@pytest.mark.parametrize(("crc", "valid", "chain"), [
    (False, True, 16),  # no checksums: a long enough chain of fake headers is taken
    (True, True, 3),  # checksums, but the fake events carry correct CRC32s: taken
    (True, False, 3),  # checksums that do not verify: refused
], ids=["no-crc-fake-chain", "crc-fake-with-valid-crcs", "crc-fake-refused"])
def test_a_cut_inside_a_statement_loses_and_repeats_nothing(
        tmp_path: Path, small_units: list[tuple[list[Unit], str | None]], crc: bool,
        valid: bool, chain: int) -> None:
    path = tmp_path / "fake.000001"
    fake = _crafted(path, crc=crc, valid=valid, chain=chain)
    size = path.stat().st_size
    starts = transaction_starts(path, [size // 2])
    cut = starts[0] if starts else None
    # (the planner cuts 2 units at the middle: the start found there)
    assert (cut == fake) == valid, (cut, fake)
    if not valid:  # the next real transaction instead
        assert cut is not None and cut > fake
    rc, _ = _same_as_one_process(tmp_path, [str(path)], 2)
    assert rc == 0
    [(units, answer)] = small_units
    assert [u.stop for u in units[:-1]] == [cut]
    if valid:  # the read before the fake cut ended elsewhere: the input was read whole
        assert answer is not None and "stopped at" in answer
    else:
        assert answer is None


def test_transaction_start_needs_a_chain_without_checksums(tmp_path: Path) -> None:
    """Without checksums a fake GTID followed by fewer chained headers than asked is no
    start: the finder goes on to the next real transaction."""
    path = tmp_path / "short.000001"
    fake = _crafted(path, crc=False, valid=True, chain=5)
    starts = transaction_starts(path, [path.stat().st_size // 2])
    cut = starts[0] if starts else None
    assert cut is not None and cut > fake


# ----------------------------------------------------------------------------- damage

def test_a_damaged_cut_file_reports_as_one_process_does(
        tmp_path: Path, small_units: list[tuple[list[Unit], str | None]]) -> None:
    """A checksum mismatch in the second half and a truncated last event: the same rows, the
    same ``errors`` rows, the same damage line and exit code."""
    data = bytearray((JAVA / "mysql-bin.checksum-crc32").read_bytes())
    data[len(data) * 3 // 4] ^= 0xFF
    damaged = tmp_path / "damaged.000001"
    damaged.write_bytes(bytes(data[: len(data) - 20]))
    rc, err = _same_as_one_process(tmp_path, [str(damaged)], 3)
    assert rc == 1 and "damaged.000001: damaged" in err
    [(units, answer)] = small_units
    assert len(units) >= 2 and answer is not None  # (read whole)


# ----------------------------------------------------------------------------- Ctrl-C

_RUN = """
import sys
import binlogscope.export.split as split
split.MIN_UNIT, split.UNIT_COST = 16 << 10, 1 << 8
from binlogscope.cli.main import main
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_inside_a_cut_input_keeps_whole_inputs_and_resumes(tmp_path: Path) -> None:
    """Ctrl-C while the units of a cut input are being read: exit 130, no staging left, the
    note claims only whole inputs; ``--resume`` finishes with ``--jobs 1``'s dataset."""
    big = tmp_path / "big.000001"
    f = _File()
    sid = "5e11fa47-71ca-11e1-9e33-c80aa9429562"
    f.put(format_description("5.7.20-log"))
    for n in range(1, 8_001):
        f.put(GtidEvent(f"{sid}:{n}", 1, sid, n))
        f.query(encode_query(query_event("BEGIN", "test")))
        f.query(encode_query(query_event(f"INSERT INTO t VALUES ({n}, 'row {n}')", "test")))
        f.put(XidEvent(n))
    big.write_bytes(bytes(f.out))
    inputs = [str(JAVA / "mysql-bin.checksum-crc32"), str(big)]
    with pytest.MonkeyPatch.context() as mp:  # (the big input is cut: the settings of _RUN)
        mp.setattr(split, "MIN_UNIT", 16 << 10)
        mp.setattr(split, "UNIT_COST", 1 << 8)
        units = split.plan_units([(i, p, Path(p).stat().st_size) for i, p in enumerate(inputs)],
                                 2, "file")
    assert len([u for u in units if u.index == 1]) >= 2
    ds = tmp_path / "ds"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
    proc = subprocess.Popen([sys.executable, "-c", _RUN, "export", *inputs, "--out", str(ds),
                             "-j", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env, start_new_session=True)
    deadline = time.monotonic() + 60
    staged = ds / JOBS_STAGING / "1"
    while not staged.is_dir() and time.monotonic() < deadline:
        time.sleep(0.005)  # (a unit of the big input is being written)
    assert proc.poll() is None, "the export ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.decode().splitlines() == [
        f"binlogscope: export: interrupted; {ds} holds everything up to the last checkpoint; "
        f"finish with: binlogscope export --resume --out {ds}"]
    assert not (ds / JOBS_STAGING).exists()
    state = read_state(ds)
    assert state is not None and not state["complete"]
    assert state["resume"]["offset"] is None and state["resume"]["input_index"] <= 1
    assert state["checkpoint"] == state["resume"]["input_index"]
    done = subprocess.run([sys.executable, "-c", _RUN, "export", "--resume", "--out", str(ds),
                           "-j", "2"], capture_output=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert _export(*inputs, "--out", str(tmp_path / "one"), "-j", "1")[0] == 0
    assert_same_dataset(tmp_path / "one", ds)
    final = read_state(ds)
    assert final is not None and final["complete"] and final["checkpoint"] == 2


# ----------------------------------------------------------------------------- the finder

def test_every_start_found_in_the_fixtures_is_a_real_transaction_start() -> None:
    """Every binlog of the shared fixtures probed every ~2 % of its size: each start found is
    the offset of a GTID event in the file's full read; files that must not be cut (relay
    logs, .gz, files without a FORMAT_DESCRIPTION) give None."""
    from tests.helpers import binlog_fixtures

    probed = cut = 0
    for path in binlog_fixtures():
        size = path.stat().st_size
        found = transaction_starts(path, list(range(5, size, max(1, size // 50))))
        if path.suffix == ".gz" or "relay" in path.name:
            assert found is None, path
            continue
        if not found:
            continue
        real = {ev.offset for ev in read_binlog_file(path, record=False)
                if ev.header is not None and ev.header.type_code in (33, 34, 42, 162)}
        assert set(found) <= real, (path, sorted(set(found) - real))
        probed += 1
        cut += len(found)
    assert probed >= 40 and cut >= 300, (probed, cut)
