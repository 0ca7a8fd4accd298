"""The CLI fuzz test (test_cli_fuzz.py) carried to hostile peers and to the text dump's locales.

- ``proxy``: the conversation of each shipped capture's first MySQL flow, one message damaged
  (bit flip, cut, bytes inserted, a packet length set huge) and cut into chunks at seeded
  places, fed to :meth:`ReplicationProxy.batches` through a stand-in for its relay process
  (the decoder the proxy runs, byte for byte what a hostile client or server would send);
- ``sniff``: the damaged captures of test_cli_fuzz fed frame by frame to :func:`sniff_batches`
  through a stand-in for the capture process;
- every item of both rendered as ``--json``, ``--plain`` and ``--brief`` render them: no
  exception, no hang, JSON that serialises, text without a raw control character;
- ``file --plain``/``--brief``/``-v`` of damaged binlogs as a process under a UTF-8 and under
  the C locale: exit 0 or 1, at most one stderr line, no traceback, valid UTF-8 out.
"""

from __future__ import annotations

import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.files import iter_records
from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.drivers.capture.sniff import sniff_batches
from binlogscope.drivers.items import SourceItem
from binlogscope.drivers.proxy.relay import ReplicationProxy
from binlogscope.render.json_out import dumps_line
from binlogscope.render.shapes import capture_item_json
from binlogscope.render.text import capture_item_text
from binlogscope.session.events import PacketDecoded, Peer
from binlogscope.wire.framing import encode_packet
from tests.property.test_cli_fuzz import BINLOGS, PCAPS, mutate

pytestmark = pytest.mark.timeout(600, method="thread")

RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SEEDS = range(8)
#: seconds one decode may take (the inputs are small)
RUN_TIMEOUT = 30.0


def _conversation(path: Path) -> tuple[list[tuple[Peer, bytes]], int]:
    """The first MySQL flow of a capture as (sender, packet bytes), in order; its server
    port."""
    msgs: list[tuple[Peer, bytes]] = []
    flow = None
    for it in read_capture(str(path)):
        ev = it.event
        if not isinstance(ev, PacketDecoded):
            continue
        if flow is None:
            flow = it.flow.id
        if it.flow.id == flow:
            msgs.append((ev.direction, encode_packet(ev.payload, ev.seq)))
    return msgs, 3306


def _damage(msgs: list[tuple[Peer, bytes]], seed: int) -> list[tuple[Peer, bytes]]:
    rng = random.Random(f"peer-{seed}-{len(msgs)}")
    out = list(msgs)
    i = rng.randrange(len(out))
    peer, data = out[i]
    b = bytearray(data)
    how = seed % 4
    at = rng.randrange(len(b))
    if how == 0:
        b[at] ^= 1 << rng.randrange(8)
    elif how == 1:
        del b[at:]
    elif how == 2:
        b[at:at] = rng.randbytes(rng.randrange(1, 9))
    else:  # a packet length set huge (the 0xFFFFFF of a continued packet, or near it)
        b[0:3] = rng.choice([b"\xff\xff\xff", b"\xfe\xff\xff", b"\x00\x00\x80"])
    out[i] = (peer, bytes(b))
    return out


class _FakeRelay:
    """What :class:`ReplicationProxy` reads from its relay process: the messages given."""

    def __init__(self, msgs: list[tuple[Peer, bytes]], seed: int) -> None:
        rng = random.Random(seed)
        self.q: list[Any] = [(1, None, b"", 1.0, ("open", ("10.0.0.2", 40000),
                                                     ("10.0.0.1", 3306)), 0.0)]
        for peer, data in msgs:
            while data:
                n = rng.randrange(1, max(2, len(data) + 1))
                self.q.append((1, peer, data[:n], 1.0, None, 1.0))
                data = data[n:]
        for peer in (Peer.CLIENT, Peer.SERVER):
            self.q.append((1, peer, b"", 2.0, None, 0.0))
        self.ended = False

    def next(self, timeout: float) -> Any:
        if not self.q:
            self.ended = True
            return None
        return self.q.pop(0)

    def request_stop(self) -> None:
        pass

    def close(self, wait: float = 5) -> None:
        self.ended = True


class _FakeCapture:
    """What :func:`sniff_batches` reads from its capture process: the frames given."""

    def __init__(self, frames: list[tuple[bytes, float]], linktype: int) -> None:
        self.frames = frames
        self.linktype = linktype

    def stop(self) -> None:
        pass

    def read_batch(self, timeout: float) -> list[tuple[bytes, float]] | None:
        if not self.frames:
            return None
        batch, self.frames = self.frames[:50], self.frames[50:]
        return batch


def _render(items: list[SourceItem], where: str) -> None:
    for it in items:
        shape = capture_item_json(it)
        if shape is not None:
            dumps_line(shape)
        for brief in (False, True):
            for line in capture_item_text(it, brief):
                bad = RAW.findall(line)
                assert not bad, (where, line[:200])


def _decode(gen: Any, where: str) -> list[SourceItem]:
    items: list[SourceItem] = []
    t0 = time.monotonic()
    for batch in gen:
        items.extend(batch)
        assert time.monotonic() - t0 < RUN_TIMEOUT, f"{where}: a hang"
    return items


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("path", PCAPS[:4], ids=lambda p: p.name)
def test_hostile_peers_through_the_proxy_decoder(path: Path, seed: int) -> None:
    msgs, _ = _conversation(path)
    if not msgs:
        pytest.skip(f"{path.name}: no MySQL packets")
    damaged = _damage(msgs, seed)
    proxy = ReplicationProxy(("127.0.0.1", 0), ("127.0.0.1", 3306))
    proxy._relay = _FakeRelay(damaged, seed)  # type: ignore[assignment]
    items = _decode(proxy.batches(record=True), f"proxy {path.name}-{seed}")
    assert items and items[0].kind == "flow"
    _render(items, f"proxy {path.name}-{seed}")


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("path", PCAPS[:4], ids=lambda p: p.name)
def test_damaged_frames_through_the_sniff_decoder(tmp_path: Path, path: Path,
                                                  seed: int) -> None:
    m = mutate(path.read_bytes(), "pcap", seed)
    bad = tmp_path / path.name
    bad.write_bytes(m.data)
    frames: list[tuple[bytes, float]] = []
    linktype = 1
    try:
        for _, ts, lt, data in iter_records(str(bad)):
            frames.append((data, ts))
            linktype = lt
    except Exception:
        pass
    cap = _FakeCapture(frames, linktype)
    items = _decode(sniff_batches(cap, None, record=True, poll=0.01),  # type: ignore[arg-type]
                    f"sniff {path.name}-{seed}")
    _render(items, f"sniff {path.name}-{seed}")


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
@pytest.mark.parametrize("seed", range(2))
@pytest.mark.parametrize("path", BINLOGS[:2], ids=lambda p: p.name)
def test_text_dump_of_damaged_binlogs_in_both_locales(tmp_path: Path, path: Path, seed: int,
                                                      locale: str) -> None:
    m = mutate(path.read_bytes(), "file", seed)
    bad = tmp_path / path.name
    bad.write_bytes(m.data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "LC_ALL": locale,
           "LANG": locale}
    env.pop("PYTHONIOENCODING", None)
    for opts in (["--plain"], ["--brief"], ["-v"]):
        res = subprocess.run([sys.executable, "-m", "binlogscope", "file", *opts, str(bad)],
                             capture_output=True, env=env, timeout=120)
        where = f"file {' '.join(opts)} {path.name}-{seed} ({m.what}, LC_ALL={locale})"
        err = res.stderr.decode("utf-8", "replace")
        assert "Traceback" not in err, (where, err[-2000:])
        assert res.returncode in (0, 1), (where, err)
        assert len(err.strip().splitlines()) <= 1, (where, err)
        text = res.stdout.decode("utf-8")  # strict: no raw undecodable byte
        assert not RAW.findall(text), where
