"""The inspector's capture source on a named pipe: rows appear while the capture still arrives
(the TUI streams; it never waits for the end of the pipe), and end equal to the file's rows."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from binlogscope.inspector.sources.pcap import PcapSource

CAPTURES = Path(__file__).resolve().parents[2] / "captures"

pytestmark = pytest.mark.timeout(120)


@pytest.mark.parametrize("name", ["pcap-semisync.pcap", "pcap-mariadb-replica.pcapng"])
def test_capture_source_streams_from_a_fifo(tmp_path: Path, name: str) -> None:
    data = (CAPTURES / name).read_bytes()
    fifo = tmp_path / "capture.fifo"
    os.mkfifo(fifo)
    gate = threading.Event()

    def feed() -> None:
        with fifo.open("wb") as fh:
            fh.write(data[: len(data) // 2])
            fh.flush()
            gate.wait(60)
            fh.write(data[len(data) // 2 :])

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    src = PcapSource(fifo)
    runner = threading.Thread(target=src.run, args=(lambda: False,), daemon=True)
    runner.start()
    end = time.monotonic() + 30
    while len(src) < 5 and time.monotonic() < end:
        time.sleep(0.02)
    assert len(src) >= 5 and not src.info().done  # rows while the pipe is still open
    gate.set()
    runner.join(60)
    writer.join(10)
    whole = PcapSource(CAPTURES / name)
    whole.run(lambda: False)
    assert src.info().done and src.fatal is None
    assert [src.row(i).summary for i in range(len(src))] == [
        whole.row(i).summary for i in range(len(whole))]
