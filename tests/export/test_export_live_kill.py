"""``export --live --semi-sync``: a semi-sync dump's thread the source would not KILL is one
warning line on stderr, as ``live`` prints it; the export and its exit status stand."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from binlogscope.cli.main import main
from binlogscope.drivers.live import replica as live_replica
from tests.watch_support import RefusedKill, acking_master

pytestmark = pytest.mark.network


@pytest.fixture
def master() -> Iterator[Any]:
    with acking_master() as mm:
        yield mm


@pytest.mark.parametrize("args", [["--count", "3"], ["--non-blocking"]],
                         ids=["count", "head"])
def test_a_refused_kill_is_one_warning_line_of_the_export(
        master: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, args: list[str]) -> None:
    monkeypatch.setattr(live_replica, "InformationSchema", RefusedKill)
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    first = master.master.stream.files[0].name
    out, err = io.StringIO(), io.StringIO()
    rc = main(["export", "--live", "--host", "127.0.0.1", "--port", str(master.port), "-u",
               "repl", "--ssl-mode", "DISABLED", "--semi-sync", "--start", f"{first}:4",
               "--out", str(tmp_path / "ds"), *args], out, err)
    assert rc == 0, err.getvalue()
    warnings = [x for x in err.getvalue().splitlines() if "could not KILL" in x]
    assert len(warnings) == 1, err.getvalue()
    assert warnings[0].startswith("binlogscope: export: warning: could not KILL the dump's ")
    assert "ERR 1095" in warnings[0] and "Traceback" not in err.getvalue()
    assert ds.dataset(tmp_path / "ds" / "events").count_rows() > 0  # exported all the same


def test_a_kill_the_source_takes_is_no_warning(master: Any, monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    monkeypatch.setenv("MYSQL_PWD", "replpass")
    first = master.master.stream.files[0].name
    err = io.StringIO()
    rc = main(["export", "--live", "--host", "127.0.0.1", "--port", str(master.port), "-u",
               "repl", "--ssl-mode", "DISABLED", "--semi-sync", "--start", f"{first}:4",
               "--out", str(tmp_path / "ds"), "--non-blocking"], io.StringIO(), err)
    assert rc == 0 and "warning" not in err.getvalue(), err.getvalue()
