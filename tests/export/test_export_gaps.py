"""Nothing lost silently in a capture's export: a TCP gap is a ``packets`` row of kind TCP_GAP
with the bytes lost, and the export exits 1 (as ``pcap`` does), on a real capture that lost
110 bytes; a capture without loss has no such row and exits 0."""

from __future__ import annotations

import io
from pathlib import Path

from binlogscope.cli.main import main
from binlogscope.export.arrow import read_table

CAPTURES = Path(__file__).resolve().parents[2] / "captures"


def _export(capture: Path, out: Path) -> tuple[int, str, list[dict[str, object]]]:
    err = io.StringIO()
    rc = main(["export", "--pcap", str(capture), "--out", str(out)], out=io.StringIO(),
              err=err)
    rows = read_table(str(out), "packets").to_pylist()
    return rc, err.getvalue(), rows


def test_a_tcp_gap_is_a_row_and_a_failure(tmp_path: Path) -> None:
    rc, err, rows = _export(CAPTURES / "pcap-loss-reorder.pcap", tmp_path / "x")
    gaps = [r for r in rows if r["kind"] == "TCP_GAP"]
    assert [(g["payload_length"], g["frame"], g["direction"]) for g in gaps] == [
        (110, 80, "server")]
    assert b"110 bytes lost in the capture" in gaps[0]["payload"]  # type: ignore[operator]
    assert rc == 1
    assert "1 gap(s) in the capture, 110 bytes lost" in err


def test_a_clean_capture_has_no_gap_row(tmp_path: Path) -> None:
    rc, err, rows = _export(CAPTURES / "pcap-semisync.pcap", tmp_path / "y")
    assert rc == 0, err
    assert not [r for r in rows if r["kind"] in ("TCP_GAP", "CAPTURE_ERROR")]
