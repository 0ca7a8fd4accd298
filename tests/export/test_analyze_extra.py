"""``binlogscope analyze`` without the ``spark`` extra: one line saying how to get it, exit 1,
no traceback (pyspark and matplotlib are not in the base install)."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from binlogscope.cli.main import main


def _export_dir(tmp_path: Path) -> Path:
    (tmp_path / "events").mkdir()
    return tmp_path


@pytest.mark.parametrize(("missing", "extra_args"), [("pyspark", []),
                                                      ("matplotlib", ["--plots", "p"])])
def test_analyze_without_the_extra_says_how_to_get_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, missing: str,
        extra_args: list[str]) -> None:
    monkeypatch.setitem(sys.modules, missing, None)  # import of it now fails
    out, err = io.StringIO(), io.StringIO()
    rc = main(["analyze", str(_export_dir(tmp_path)), *extra_args], out=out, err=err)
    assert rc == 1
    lines = err.getvalue().splitlines()
    assert len(lines) == 1, lines
    assert missing in lines[0]
    assert "pip install 'binlogscope[spark]'" in lines[0]
    assert "Traceback" not in err.getvalue()
