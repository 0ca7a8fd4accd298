"""The native kernel's ``file --json`` and ``--summary`` lines (``render/line_layout.py``,
``_native/_line.c``) against the Python path (``BINLOGSCOPE_PURE_PYTHON=1``: decode_event ->
shapes -> orjson; -> the text renderer), byte for byte: every fixture binlog and capture,
damaged copies (with and without valid checksums), files read in small chunks, and events
built with the wire encoders. Each test runs both outputs."""

from __future__ import annotations

import io
import json
import random
import struct
import zlib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from binlogscope.cli import file as file_cli
from binlogscope.drivers import binlog_file
from binlogscope.render.json_out import LineWriter
from binlogscope.render.line_layout import (
    BODY_LAYOUTS,
    event_lines,
    line_template,
    summary_lines,
)
from binlogscope.render.shapes import binlog_event_json
from binlogscope.wire.binlog.control_events import XidEvent
from binlogscope.wire.binlog.decoded import DecodedEvent
from binlogscope.wire.binlog.encode_events import (
    encode_event,
    encode_format_description,
    encode_mariadb_gtid,
    encode_xid,
    format_description,
)
from binlogscope.wire.binlog.gtid_events import MariadbGtidEvent
from binlogscope.wire.binlog.header import BINLOG_MAGIC, EventHeader
from binlogscope.wire.binlog.types import EventType
from tests.helpers import FIXTURES, binlog_fixtures, read_all
from tests.native_switch import NativeSwitch

CAPTURES = Path(__file__).resolve().parents[2] / "captures"
WORKLOAD = CAPTURES / "mariadb-10.11-workload.000001"
MARIADB = [*sorted(CAPTURES.glob("*.binlog")), WORKLOAD]
FILES = binlog_fixtures() + MARIADB


@pytest.fixture(autouse=True)
def _need_kernel(native: NativeSwitch) -> None:
    native.require()


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES)) if p.is_relative_to(FIXTURES) else p.name


class _Counting:
    """The kernel's writer, counting the events it took."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.taken = 0

    def __call__(self, buf: bytes, pos: int, base: int) -> Any:
        got = self.inner(buf, pos, base)
        self.taken += got is not None
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("inner", "taken"):
            object.__setattr__(self, name, value)
        else:
            setattr(self.inner, name, value)


OUTPUTS = ("json", "summary")


class _File(io.StringIO):
    """The command's output: a file, not a terminal."""

    def isatty(self) -> bool:
        return False


def _file_json(path: Path, output: str = "json") -> tuple[bytes, int, str, int]:
    """``file --json`` (or ``--summary``) ``--jobs 1 PATH`` as the command's per-input function
    writes it: the output's bytes, the status, the messages, the events the kernel wrote."""
    counted: list[_Counting] = []

    def counting(make: Any) -> Any:
        def lines_of(*a: Any) -> Any:
            got = make(*a)
            if got is None:
                return None
            counted.append(_Counting(got))
            return counted[-1]
        return lines_of

    out, err = _File(), io.StringIO()
    args = file_cli.file_args([str(path)], **{output: True})
    args.start_gtids = args.stop_gtids = args.mysql_gtids = None
    lines = LineWriter(out)
    with pytest.MonkeyPatch().context() as m:
        m.setattr(file_cli, "event_lines", counting(event_lines))
        m.setattr(file_cli, "summary_lines", counting(summary_lines))
        status = file_cli._one_file(str(path), args, None, (None, None), out, lines, err)
    lines.flush()
    return (out.getvalue().encode("utf-8"), status, err.getvalue(),
            sum(c.taken for c in counted))


def _both(path: Path, native: NativeSwitch) -> tuple[int, ...]:
    """Assert both paths write the same bytes, status and messages, for --json and for
    --summary; the events the kernel wrote for each."""
    took = []
    for output in OUTPUTS:
        fast, status, err, taken = _file_json(path, output)
        with native.off():
            pure, pure_status, pure_err, none = _file_json(path, output)
        assert none == 0
        assert fast == pure, output
        assert (status, err) == (pure_status, pure_err)
        took.append(taken)
    return tuple(took)


@pytest.mark.parametrize("path", FILES, ids=_id)
def test_kernel_lines_equal_pure(path: Path, native: NativeSwitch) -> None:
    taken = _both(path, native)
    if path == WORKLOAD:
        assert min(taken) > 50, "the kernel wrote no line: the test would prove nothing"


def test_kernel_lines_in_small_chunks(native: NativeSwitch, monkeypatch: pytest.MonkeyPatch
                                      ) -> None:
    """Events cut by the reads (chunks of 777 bytes) are written alike."""
    monkeypatch.setattr(binlog_file, "CHUNK", 777)
    assert min(_both(WORKLOAD, native)) > 50


def test_a_mismatching_byte_is_seen(native: NativeSwitch, tmp_path: Path) -> None:
    """The comparison is of bytes: one event's line changed by one byte fails it (the test
    above cannot pass by comparing nothing)."""
    for output in OUTPUTS:
        fast, _, _, _ = _file_json(WORKLOAD, output)
        with native.off():
            pure, _, _, _ = _file_json(WORKLOAD, output)
        assert fast == pure and fast.count(b"\n") > 100
        assert fast.replace(b"XID_EVENT", b"XID_EVENT ", 1) != pure


def _events(data: bytes) -> list[tuple[int, int]]:
    out, p = [], 4
    while p + 19 <= len(data):
        size = struct.unpack_from("<I", data, p + 9)[0]
        if size < 19:
            break
        out.append((p, size))
        p += size
    return out


@pytest.mark.parametrize("seed", range(6))
def test_kernel_lines_equal_pure_on_damaged_bytes(seed: int, native: NativeSwitch,
                                                  tmp_path: Path) -> None:
    data = bytearray(read_all(WORKLOAD))
    rnd = random.Random(seed)
    for _ in range(40):
        data[rnd.randrange(4, len(data))] = rnd.randrange(256)
    path = tmp_path / "damaged.000001"
    path.write_bytes(bytes(data))
    _both(path, native)


@pytest.mark.parametrize("seed", range(6))
def test_kernel_lines_equal_pure_on_damaged_bodies_with_valid_checksums(
        seed: int, native: NativeSwitch, tmp_path: Path) -> None:
    """Bytes changed inside bodies (GTID flags, padding, XIDs...) and each CRC32 made right
    again: the kernel sees verified events whose bodies its layouts may not cover."""
    data = bytearray(read_all(WORKLOAD))
    events = _events(bytes(data))
    rnd = random.Random(seed)
    for _ in range(60):
        p, size = rnd.choice(events[2:])
        if size <= 23:
            continue
        for _ in range(rnd.randrange(1, 4)):
            data[p + 19 + rnd.randrange(size - 23)] = rnd.randrange(256)
        struct.pack_into("<I", data, p + size - 4, zlib.crc32(bytes(data[p : p + size - 4])))
    path = tmp_path / "bodies.000001"
    path.write_bytes(bytes(data))
    _both(path, native)


def _binlog(events: list[bytes], checksum: bool = True) -> bytes:
    fde = encode_event(EventType.FORMAT_DESCRIPTION_EVENT, encode_format_description(
        format_description("10.11.6-MariaDB-log", checksum=checksum)), server_id=1,
        log_pos=0, checksum=checksum)
    out = bytearray(BINLOG_MAGIC)
    for raw in [fde, *events]:
        out += raw[:13] + struct.pack("<I", len(out) + len(raw)) + raw[17:]
        if checksum:  # (log_pos changed: the CRC32 again)
            struct.pack_into("<I", out, len(out) - 4, zlib.crc32(bytes(out[-len(raw):-4])))
    return bytes(out)


_GTID = st.builds(
    MariadbGtidEvent, gtid=st.just(""), seq_no=st.integers(0, 2**64 - 1),
    domain_id=st.integers(0, 2**32 - 1), server_id=st.just(0),
    flags2=st.integers(0, 255), commit_id=st.integers(0, 2**64 - 1),
    xa_format_id=st.integers(0, 5), xa_gtrid=st.binary(max_size=4),
    xa_bqual=st.binary(max_size=4), flags_extra=st.integers(0, 15),
    extra_engines=st.integers(0, 3), sa_seq_no=st.integers(0, 9))


@st.composite
def _event(draw: st.DrawFn) -> bytes:
    """A GTID or XID event (or a body cut short or padded), server id and header fields
    drawn."""
    kind = draw(st.sampled_from(["gtid", "xid", "text", "other"]))
    code: int
    if kind == "text":  # a statement: any text (quotes, controls, U+2028...) or any bytes
        code = draw(st.sampled_from([EventType.ANNOTATE_ROWS_EVENT,
                                     EventType.ROWS_QUERY_LOG_EVENT]))
        body = draw(st.one_of(st.text(max_size=40).map(
            lambda t: t.encode("utf-8", "surrogatepass")), st.binary(max_size=40)))
        return encode_event(code, body, server_id=draw(st.integers(0, 2**32 - 1)))
    if kind == "gtid":
        code, body = EventType.GTID_EVENT, encode_mariadb_gtid(draw(_GTID))
    elif kind == "xid":
        code, body = EventType.XID_EVENT, encode_xid(XidEvent(draw(st.integers(0, 2**64 - 1))))
    else:
        code = draw(st.sampled_from([EventType.QUERY_EVENT, EventType.ROTATE_EVENT, 250]))
        body = draw(st.binary(max_size=30))
    cut = draw(st.sampled_from([None, 0, 7, 12, 13, 20, 21]))
    if cut is not None:
        body = body[:cut]
    body += draw(st.sampled_from([b"", b"\0", b"\0\0\0", b"\x01"]))
    return encode_event(code, body, timestamp=draw(st.integers(0, 2**32 - 1)),
                        server_id=draw(st.integers(0, 2**32 - 1)),
                        flags=draw(st.integers(0, 2**16 - 1)))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(events=st.lists(_event(), max_size=8), checksum=st.booleans())
def test_kernel_lines_equal_pure_on_built_events(events: list[bytes], checksum: bool,
                                                 native: NativeSwitch, tmp_path: Path) -> None:
    if not checksum:  # (the trailer off: the same events without their CRC32)
        events = [e[:9] + struct.pack("<I", len(e) - 4) + e[13:-4] for e in events]
    path = tmp_path / "built.000001"
    path.write_bytes(_binlog(events, checksum))
    _both(path, native)


def test_template_is_the_shapes_keys() -> None:
    """The kernel's line has binlog_event_json's keys in its order, for every layout."""
    template = line_template("p", "b")
    assert template is not None
    pairs, end = template
    line = json.loads(b"".join(t + b"0" for t, _ in pairs) + end)
    assert line["file"] == "p" and line["binlog_file"] == "b"
    for code in BODY_LAYOUTS:
        ev = DecodedEvent(4, EventHeader(0, code, 1, 27, 31, 0), None, None, True)
        assert list(binlog_event_json(ev, "p")) == list(line)


def test_the_kernel_crc32_is_zlibs(native: NativeSwitch) -> None:
    from binlogscope import _native

    assert _native.kernel is not None
    crc = _native.kernel.EventLines.crc32
    rnd = random.Random(1)
    for n in (0, 1, 7, 8, 9, 63, 64, 1000):
        data = bytes(rnd.randrange(256) for _ in range(n))
        assert crc(data) == zlib.crc32(data)


def test_built_gtid_and_xid_are_the_kernels(native: NativeSwitch, tmp_path: Path) -> None:
    """A group-commit GTID and its XID, built with the encoders: both lines by the kernel
    (the built-events test above covers the declines), the same bytes as the Python path's."""
    gtid = MariadbGtidEvent("", 5, 1, 0, 0x0A, commit_id=9)
    path = tmp_path / "two.000001"
    path.write_bytes(_binlog([
        encode_event(EventType.GTID_EVENT, encode_mariadb_gtid(gtid), server_id=7),
        encode_event(EventType.XID_EVENT, encode_xid(XidEvent(3)), server_id=7)]))
    assert _both(path, native) == (2, 2)


def test_statement_texts_are_the_kernels_when_valid_utf8(native: NativeSwitch,
                                                         tmp_path: Path) -> None:
    """ANNOTATE_ROWS and ROWS_QUERY texts with quotes, backslashes, controls, U+2028, emoji
    and other non-ASCII characters are written by the kernel with the serializer's escapes;
    a text that is not UTF-8 (the decoder replaces its bytes) is the Python path's: the same
    bytes either way. In --summary, runs of spaces squeezed and long texts cut as the text
    renderer does."""
    texts = ['insert into t values ("a\\\\b", \'\\n\')\x00\x1f\x7f\u2028 \U0001f600',
             "x" * 300, "", "  a  b  " * 30, "select   1 " + " " * 400 + "x", "y" * 81,
             "z" * 80 + " w",
             # beyond ASCII: printable BMP characters are the kernel's (counted, cut and
             # squeezed by characters), whitespace (NBSP) and unprintable ones (a soft
             # hyphen) are the Python path's
             "käse€ " * 20, "ä" * 81, "é" * 80 + " w", "中文  查询 " * 30, "ü" * 400 + " x",
             "ü" * 78 + "  b" * 5, "a\u00a0b", "x\u00adx"]
    events = [encode_event(EventType.ANNOTATE_ROWS_EVENT, t.encode()) for t in texts]
    events += [encode_event(EventType.ROWS_QUERY_LOG_EVENT, b"\x05" + t.encode())
               for t in texts]
    events += [encode_event(EventType.ANNOTATE_ROWS_EVENT, b"caf\xe9 \xed\xa0\x80")]
    path = tmp_path / "texts.000001"
    path.write_bytes(_binlog(events))
    # (--summary's statement text in the kernel: printable ASCII and BMP characters only)
    assert _both(path, native) == (2 * len(texts), 2 * len(texts) - 6)


@settings(max_examples=300, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(), raw=st.binary())
def test_text_plain_is_escape_controls_leaving_all(text: str, raw: bytes,
                                                   native: NativeSwitch) -> None:
    """The kernel's check that lets --summary's lines skip the text stream holds exactly when
    escape_controls would change nothing (and the bytes are UTF-8)."""
    from binlogscope import _native
    from binlogscope.render.escape import escape_controls

    assert _native.kernel is not None
    plain = _native.kernel.EventLines.text_plain
    assert plain(text.encode("utf-8", "surrogatepass")) == (escape_controls(text) == text)
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        assert not plain(raw)
    else:
        assert plain(raw) == (escape_controls(decoded) == decoded)


def _summary_bytes(path: Path) -> bytes:
    """``file --summary`` into a real UTF-8 text stream under the escaping wrapper, as the
    command writes to standard output: the bytes it gets."""
    from binlogscope.render.escape import EscapingText

    raw = io.BytesIO()
    text = io.TextIOWrapper(raw, encoding="utf-8", write_through=False)
    out: Any = EscapingText(text)
    args = file_cli.file_args([str(path)], summary=True)
    args.start_gtids = args.stop_gtids = args.mysql_gtids = None
    lines = LineWriter(out)
    file_cli._one_file(str(path), args, None, (None, None), out, lines, io.StringIO())
    lines.flush()
    text.flush()
    return raw.getvalue()


def test_summary_into_a_byte_stream(native: NativeSwitch, tmp_path: Path) -> None:
    """Lines with nothing to escape go straight to the byte buffer, the others through the
    escaping text stream, in order: the bytes of the Python path (a statement with controls
    and a bidi override among plain ones)."""
    events = [encode_event(EventType.ANNOTATE_ROWS_EVENT, t.encode()) for t in (
        "select 1", "select '\x1b[2J' \u202e", "select 2")]
    built = tmp_path / "esc.000001"
    built.write_bytes(_binlog(events))
    for path in (WORKLOAD, built):
        fast = _summary_bytes(path)
        with native.off():
            assert _summary_bytes(path) == fast
        assert fast.count(b"\n") > 3
