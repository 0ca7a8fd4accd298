"""``--state FILE`` that cannot be used: one clear error naming the file, before any connection."""

from __future__ import annotations

import io
import json
import socket
from pathlib import Path

import pytest

from binlogscope.cli.main import main
from binlogscope.pipeline.state import ReplicaState, StateFileError

GOOD = {"log_file": "mysql-bin.000002", "log_pos": 1234, "skip": 0, "gtid_set": None,
        "slave_uuid": "00000000-0000-4000-8000-000000000001", "server_id": 7}

BAD_CASES: list[tuple[str, object, str]] = [
    ("invalid-json", "{broken", "unreadable"),
    ("empty", "", "unreadable"),
    ("not-utf8", b"\xff\xfe{", "unreadable"),
    ("list", [GOOD], "JSON object, not a JSON list"),
    ("number", 5, "JSON object, not a JSON number"),
    ("no-position", {"slave_uuid": GOOD["slave_uuid"]}, "holds no position"),
    ("empty-object", {}, "holds no position"),
    ("file-without-pos", {"log_file": "mysql-bin.000002"}, "'log_file' without 'log_pos'"),
    ("pos-without-file", {"log_pos": 4, "gtid_set": "0-1-5"}, "'log_pos' without 'log_file'"),
    ("pos-string", {**GOOD, "log_pos": "1234"}, "'log_pos' must be an integer"),
    ("pos-float", {**GOOD, "log_pos": 12.5}, "'log_pos' must be an integer"),
    ("pos-bool", {**GOOD, "log_pos": True}, "'log_pos' must be an integer"),
    ("pos-negative", {**GOOD, "log_pos": -4}, "'log_pos' must not be negative"),
    ("pos-over-u32", {**GOOD, "log_pos": 2**32}, "'log_pos' 4294967296 is over 4294967295"),
    ("server-id-over-u32", {**GOOD, "server_id": 2**40}, "'server_id' 1099511627776 is over"),
    ("file-number", {**GOOD, "log_file": 2}, "'log_file' must be a non-empty string"),
    ("gtid-list", {**GOOD, "gtid_set": ["0-1-5"]}, "'gtid_set' must be a non-empty string"),
    ("skip-null", {**GOOD, "skip": None}, "'skip' must be an integer"),
    ("uuid-number", {**GOOD, "slave_uuid": 3}, "'slave_uuid' must be a non-empty string"),
    ("gtid-malformed", {"gtid_set": "0-1-x,garbage"}, "'gtid_set' is neither a MariaDB GTID"),
    ("gtid-bad-uuid", {"gtid_set": "3E11FA47-71CA-11E1:1-5"}, "is not a UUID"),
    ("deeply-nested", "[" * 200_000 + "]" * 200_000, "nested too deeply"),
]


def _write(path: Path, content: object) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content)
    else:
        path.write_text(json.dumps(content))


@pytest.mark.parametrize(("content", "message"), [c[1:] for c in BAD_CASES],
                         ids=[c[0] for c in BAD_CASES])
def test_bad_state_file_raises_naming_file(tmp_path: Path, content: object,
                                           message: str) -> None:
    p = tmp_path / "state.json"
    _write(p, content)
    with pytest.raises(StateFileError) as info:
        ReplicaState.load(p)
    assert message in str(info.value)
    assert str(p) in str(info.value)
    assert "\n" not in str(info.value)


def test_state_directory_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="is a directory"):
        ReplicaState.load(tmp_path)


def test_good_state_files_load(tmp_path: Path) -> None:
    p = tmp_path / "state.json"
    assert ReplicaState.load(p).log_file is None  # no file yet: a fresh state
    _write(p, GOOD)
    st = ReplicaState.load(p)
    assert (st.log_file, st.log_pos, st.server_id) == ("mysql-bin.000002", 1234, 7)
    _write(p, {"gtid_set": "0-1-5", "log_file": None, "log_pos": None, "extra": 1})
    assert ReplicaState.load(p).gtid_set == "0-1-5"  # GTID only; unknown keys ignored
    _write(p, {**GOOD, "log_pos": 2**32 - 1})
    assert ReplicaState.load(p).log_pos == 2**32 - 1


def _unused_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("case", ["directory", "list", "no-position", "pos-string",
                                  "pos-over-u32", "gtid-malformed", "deeply-nested"])
def test_cli_live_bad_state_fails_before_connecting(tmp_path: Path, case: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MYSQL_PWD", "x")
    if case == "directory":
        state = tmp_path
    else:
        state = tmp_path / "state.json"
        _write(state, dict((c[0], c[1]) for c in BAD_CASES)[case])
    before = state.read_bytes() if state.is_file() else None
    out, err = io.StringIO(), io.StringIO()
    # an unused port: were the state accepted, the run would fail to connect instead
    for cmd in (["live", "--json"], ["export", "--live", "--out", str(tmp_path / "ds")]):
        rc = main([*cmd, "--host", "127.0.0.1", "--port", str(_unused_port()),
                   "--ssl-mode", "DISABLED", "--no-reconnect", "--state", str(state)],
                  out=out, err=err)
        lines = err.getvalue().splitlines()
        assert rc != 0
        assert len(lines) == 1, lines
        assert lines[0].startswith(f"binlogscope: error: state file {state}")
        assert "Traceback" not in err.getvalue() and "connect" not in lines[0].lower()
        err.seek(0)
        err.truncate()
    assert out.getvalue() == ""
    if before is not None:
        assert state.read_bytes() == before  # the bad file is left as it is


@pytest.mark.parametrize("gtid_set", ["0-1-100,1-2-7",
                                      "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5"])
def test_a_gtid_only_state_is_resumed_from(tmp_path: Path, gtid_set: str) -> None:
    """A state holding only a GTID set (no file/position) starts a GTID dump from that set;
    it was accepted and ignored: the dump began at the server's current position."""
    from binlogscope.cli.live import live_settings
    from binlogscope.cli.main import build_parser

    state = tmp_path / "state.json"
    _write(state, {"gtid_set": gtid_set})
    args = build_parser().parse_args(["live", "--json", "--host", "127.0.0.1", "--user", "u",
                                      "--state", str(state)])
    settings = live_settings(args, io.StringIO())
    assert settings is not None and settings.gtid == gtid_set and settings.start is None
    # --start or --gtid on the command line still win
    args = build_parser().parse_args(["live", "--json", "--host", "127.0.0.1", "--user", "u",
                                      "--state", str(state), "--gtid", "0-1-1"])
    settings = live_settings(args, io.StringIO())
    assert settings is not None and settings.gtid == "0-1-1"
