"""``pcap --json`` and ``pcap --brief`` with the server event packets' lines written by the
native kernel (``render/line_layout.py`` ``packet_lines``, ``brief_lines``,
``session/packets.py`` ``stream_run``, ``drivers/capture/lines.py``) against the Python path
(``BINLOGSCOPE_PURE_PYTHON``: a ``PacketDecoded`` per packet -> ``capture_item_json`` -> the
serializer, ``capture_item_text``), byte for byte: every capture in ``captures/`` and the
shared fixtures, and damaged copies (flipped bytes, cut frames, dropped/swapped/duplicated
frames). Each test runs both outputs and checks that the kernel wrote lines where it should
(the MariaDB stream captures)."""

from __future__ import annotations

import io
import random
import struct
from pathlib import Path
from typing import Any

import pytest

from binlogscope.cli import pcap as pcap_cli
from binlogscope.cli.main import main
from binlogscope.drivers.items import Flow
from binlogscope.render import line_layout
from binlogscope.render.line_layout import packet_template
from tests.helpers import FIXTURES
from tests.native_switch import NativeSwitch

CAPTURES = Path(__file__).resolve().parents[3] / "captures"
OURS = sorted(p for p in CAPTURES.iterdir() if p.suffix in (".pcap", ".pcapng"))
#: the MariaDB replication streams of ours that are not compressed (the kernel writes them)
STREAMS = [p for p in OURS if "compressed" not in p.name]
SHARED = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".pcap", ".pcapng")
                and p.stat().st_size < (3 << 20))


@pytest.fixture(autouse=True)
def _need_kernel(native: NativeSwitch) -> None:
    native.require()


def _id(p: Path) -> str:
    return str(p.relative_to(FIXTURES)) if p.is_relative_to(FIXTURES) else p.name


class _Counting:
    """The kernel's writer, counting the packets it wrote."""

    def __init__(self, inner: Any) -> None:
        object.__setattr__(self, "inner", inner)
        object.__setattr__(self, "taken", 0)

    def __call__(self, buf: bytes, pos: int, base: int) -> Any:
        got = self.inner(buf, pos, base)
        object.__setattr__(self, "taken", self.taken + (got is not None))
        return got

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.inner, name, value)


def _pcap_json(path: Path, *extra: str, mode: str = "--json") -> tuple[bytes, int, str, int]:
    """``pcap --json PATH`` (``mode``: or ``--brief``) in process: the output's bytes, status,
    messages and the packets the kernel wrote."""
    counted: list[_Counting] = []
    maker = "packet_lines" if mode == "--json" else "brief_lines"
    real = getattr(line_layout, maker)

    def counting(flow: Flow) -> Any:
        got = real(flow)
        if got is None:
            return None
        counted.append(_Counting(got[0]))
        got[1].line = counted[-1]  # type: ignore[assignment]
        return counted[-1], got[1]

    # (a UTF-8 text stream over bytes, as stdout to a pipe or a file: lines go to its buffer)
    raw = io.BytesIO()
    out, err = io.TextIOWrapper(raw, encoding="utf-8", newline="\n"), io.StringIO()
    with pytest.MonkeyPatch().context() as m:
        m.setattr(pcap_cli, maker, counting)
        status = main(["pcap", str(path), mode, *extra], out, err)
    out.flush()
    return raw.getvalue(), status, err.getvalue(), sum(c.taken for c in counted)


def _both(path: Path, native: NativeSwitch, *extra: str, mode: str = "--json") -> int:
    """Both paths write the same bytes, status and messages; the packets the kernel wrote."""
    fast, status, err, taken = _pcap_json(path, *extra, mode=mode)
    with native.off():
        pure, pure_status, pure_err, none = _pcap_json(path, *extra, mode=mode)
    assert none == 0
    assert fast == pure
    assert (status, err) == (pure_status, pure_err)
    return taken


MODES = ["--json", "--brief"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("path", OURS + SHARED, ids=_id)
def test_kernel_lines_equal_pure(path: Path, native: NativeSwitch, mode: str) -> None:
    taken = _both(path, native, mode=mode)
    if path in STREAMS:
        assert taken > 10  # (the stream's GTID/TABLE_MAP/rows/XID packets)


@pytest.mark.parametrize("mode", MODES)
def test_kernel_lines_with_the_port_given(native: NativeSwitch, mode: str) -> None:
    for path in STREAMS:
        assert _both(path, native, "--port", "39041", mode=mode) > 10


def _records(data: bytes) -> tuple[bytes, list[tuple[bytes, bytes]]]:
    out, pos = [], 24
    while pos < len(data):
        n = struct.unpack_from("<I", data, pos + 8)[0]
        out.append((data[pos : pos + 16], data[pos + 16 : pos + 16 + n]))
        pos += 16 + n
    return data[:24], out


def _damaged(tmp_path: Path, src: Path, seed: int) -> Path:
    """A copy with bytes flipped in frames' TCP payloads, frames cut short, dropped, swapped and
    duplicated (a fixed random pattern)."""
    head, recs = _records(src.read_bytes())
    rnd = random.Random(seed)
    out: list[tuple[bytes, bytes]] = []
    i = 0
    while i < len(recs):
        rh, fr = recs[i]
        r = rnd.random()
        if r < 0.03:
            i += 1  # dropped
            continue
        if r < 0.06 and i + 1 < len(recs):
            out += [recs[i + 1], recs[i]]  # swapped
            i += 2
            continue
        if r < 0.14 and len(fr) > 80:  # a byte flipped after the headers
            k = rnd.randrange(66, len(fr))
            fr = fr[:k] + bytes([fr[k] ^ (1 << rnd.randrange(8))]) + fr[k + 1 :]
        elif r < 0.17 and len(fr) > 80:  # cut short (as a snap length does)
            fr = fr[: rnd.randrange(60, len(fr))]
            rh = rh[:8] + struct.pack("<I", len(fr)) + rh[12:]
        out.append((rh, fr))
        if r > 0.97:
            out.append((rh, fr))  # duplicated
        i += 1
    p = tmp_path / f"damaged-{seed}-{src.name}"
    p.write_bytes(head + b"".join(rh + f for rh, f in out))
    return p


PCAP_STREAMS = [p for p in STREAMS if p.suffix == ".pcap"]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("src", PCAP_STREAMS, ids=lambda p: p.name)
def test_kernel_lines_equal_pure_on_damaged_captures(tmp_path: Path, native: NativeSwitch,
                                                     src: Path, mode: str) -> None:
    taken = [_both(_damaged(tmp_path, src, seed), native, mode=mode) for seed in range(8)]
    assert sum(taken) > 20  # (the kernel wrote between the damage)


def test_the_template_is_the_capture_items_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """The template comes from ``capture_item_json``: a key added there without a slot turns
    the kernel's lines off; a flow's own values are its text."""
    flow = Flow(7, "10.0.0.1:5000", "10.0.0.2:3306", 1, 0.0)
    got = packet_template(flow)
    assert got is not None
    text = b"".join(t for t, _ in got[0])
    assert text.startswith(b'{"flow":"10.0.0.1:5000 -> 10.0.0.2:3306","flow_id":7,"frame":')
    real = line_layout.capture_item_json  # type: ignore[attr-defined]

    def more(item: Any) -> Any:
        out = real(item)
        return None if out is None else {**out, "new_key": 1}

    monkeypatch.setattr(line_layout, "capture_item_json", more)
    assert packet_template(flow) is None


def test_the_brief_template_is_the_text_renderers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The ``--brief`` template comes from ``capture_item_text``: the flow's prefix, the frame
    and the coordinates as slots; a renderer that writes another line (the frame in hex) has
    no template."""
    from binlogscope.render import text as render_text

    flow = Flow(7, "10.0.0.1:5000", "10.0.0.2:3306", 1, 0.0)
    got = line_layout.brief_template(flow)
    assert got is not None
    assert got[0][0] == (b"[7] #", line_layout.PACKET_SLOTS["frame"])
    assert got[2] == (b"", b"[semi-sync] ", b"[semi-sync ACK requested] ")
    real = render_text.session_event_text

    def hex_frame(ev: Any, brief: bool, prefix: str = "", titles: bool = False) -> Any:
        head, _, rest = prefix.partition("#")
        frame = rest.strip()
        if frame.isdigit():
            prefix = f"{head}#{int(frame):#x} "
        return real(ev, brief, prefix, titles)

    monkeypatch.setattr(render_text, "session_event_text", hex_frame)
    assert line_layout.brief_template(flow) is None
