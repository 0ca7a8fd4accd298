"""No raw control character reaches a terminal (issue 32, item 4): a binlog whose statement and
table name carry ESC/BEL/CR/C1/DEL (as any database user can write them) goes through every text
surface - ``file`` (tree, --plain, --brief, --summary, -v), ``live --plain``/``--brief`` (and its
``--record``), ``pcap --plain``/``--brief`` of that recording, ``proxy --brief`` - and no output
line holds a raw control byte (but the newline and tab of the layout); the escapes are there
instead. Before, each of them printed the SQL text and identifiers raw."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from binlogscope.render.escape import EscapingText, escape_controls
from tests.watch_support import CLI, ENV, run_sql, start_proxy

#: what a terminal must never see raw (C0 but \t \n, DEL, C1)
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
TABLE = "t\x1b[31mred\x07"
VALUE = "\x1b]0;pwned\x07\x9b2J\rforged"


def test_escape_controls() -> None:
    assert escape_controls("plain\ttext\n") == "plain\ttext\n"
    assert escape_controls("a\x1b[2Jb\x07\x7f\x9b\u202e") == "a\\x1b[2Jb\\x07\\x7f\\x9b\\u202e"
    assert escape_controls("\r") == "\\x0d"
    assert escape_controls("a\udcff\udcfeb") == "a\\xff\\xfeb"  # (surrogateescape bytes)


def test_the_wrapper_escapes_every_write() -> None:
    import io

    buf = io.StringIO()
    w = EscapingText(buf)
    print("x\x1by", file=w)  # type: ignore[arg-type]
    assert buf.getvalue() == "x\\x1by\n"


def _clean(text: str, what: str) -> None:
    bad = sorted({hex(ord(c)) for c in RAW.findall(text)})
    assert not bad, (what, bad)


@pytest.mark.mysql
def test_every_text_surface_escapes(mariadb: Any, tmp_path: Path) -> None:
    q = TABLE.replace("`", "``")
    run_sql(mariadb, "FLUSH BINARY LOGS")
    name = str(run_sql(mariadb, "SHOW MASTER STATUS")[0][0])
    run_sql(mariadb, f"CREATE TABLE IF NOT EXISTS `{q}` (id INT PRIMARY KEY, v VARCHAR(64)) "
            f"COMMENT '{VALUE}'", f"DELETE FROM `{q}`",
            f"INSERT INTO `{q}` VALUES (1, '{VALUE}') /* {VALUE} */", "FLUSH BINARY LOGS")
    path = next(p for p in mariadb.binlog_files() if p.name == name)
    assert b"\x1b]0;pwned" in path.read_bytes()  # (the server wrote them raw)
    outputs: dict[str, str] = {}
    for opts in ([], ["--plain"], ["--brief"], ["--summary"], ["-v"], ["--plain", "-v"]):
        res = subprocess.run([*CLI, "file", *opts, str(path)], capture_output=True,
                             text=True, env=ENV, timeout=120, errors="surrogateescape")
        assert res.returncode in (0, 1), res.stderr
        outputs[f"file {' '.join(opts)}"] = res.stdout + res.stderr
    rec = tmp_path / "live.pcapng"
    base = ["--host", mariadb.host, "--port", str(mariadb.port), "--user", mariadb.user,
            "--non-blocking", "--no-reconnect", "--start", f"{name}:4"]
    env = {**ENV, "MYSQL_PWD": mariadb.password or ""}
    for opts in (["--plain"], ["--plain", "--brief"]):
        extra = ["--record", str(rec)] if opts == ["--plain"] else []
        res = subprocess.run([*CLI, "live", *opts, *base, *extra], capture_output=True,
                             text=True, env=env, timeout=120, errors="surrogateescape")
        assert res.returncode == 0, res.stderr
        outputs[f"live {' '.join(opts)}"] = res.stdout + res.stderr
    for opts in (["--plain"], ["--brief"], ["--summary"]):
        res = subprocess.run([*CLI, "pcap", *opts, "--port", str(mariadb.port), str(rec)],
                             capture_output=True, text=True, env=ENV, timeout=120,
                             errors="surrogateescape")
        outputs[f"pcap {' '.join(opts)}"] = res.stdout + res.stderr
    proc, port = start_proxy((mariadb.host, mariadb.port), "--brief")
    try:
        via = [*base[:2], "--port", str(port), *base[4:]]
        res = subprocess.run([*CLI, "live", "--json", *via], capture_output=True, text=True,
                             env=env, timeout=120)
        assert res.returncode == 0, res.stderr
    finally:
        proc.send_signal(2)
        out, err = proc.communicate(timeout=60)
    outputs["proxy --brief"] = out + err
    for what, text in outputs.items():
        _clean(text, what)
    # the names and the statement are there, escaped (not dropped)
    assert "\\x1b[31mred\\x07" in outputs["file --plain"]
    assert "\\x1b]0;pwned\\x07" in outputs["live --plain"]
    assert "\\x1b]0;pwned\\x07" in outputs["pcap --plain"]
    assert "\\x1b" in outputs["proxy --brief"], outputs["proxy --brief"][-2000:]


def _binlog_with_undecodable_text(path: Path) -> None:
    from binlogscope.wire.binlog.encode_events import (
        encode_event,
        encode_format_description,
        format_description,
    )
    from binlogscope.wire.binlog.encode_query import encode_query, query_event
    from binlogscope.wire.binlog.types import EventType

    fde = encode_event(EventType.FORMAT_DESCRIPTION_EVENT,
                       encode_format_description(format_description("10.11.6-MariaDB")),
                       log_pos=4)
    fde = encode_event(EventType.FORMAT_DESCRIPTION_EVENT,
                       encode_format_description(format_description("10.11.6-MariaDB")),
                       log_pos=4 + len(fde))
    body = encode_query(query_event("INSERT INTO t VALUES ('\udcff\udcfe\x1b[2J')", "db"))
    q = encode_event(EventType.QUERY_EVENT, body, log_pos=4 + len(fde) + 19 + len(body) + 4)
    path.write_bytes(b"\xfebin" + fde + q)


@pytest.mark.parametrize("locale", ["C.UTF-8", "C"])
def test_file_text_dump_of_undecodable_values(tmp_path: Path, locale: str) -> None:
    """Undecodable bytes in a statement: every text mode of ``file``, under a UTF-8 and under
    the C locale, is valid UTF-8 without a raw control byte and without a traceback (a lone
    surrogate from ``surrogateescape`` is written as ``\\xNN``: test_escape_controls)."""
    path = tmp_path / "bad-utf8.000001"
    _binlog_with_undecodable_text(path)
    env = {**ENV, "LC_ALL": locale, "LANG": locale}
    env.pop("PYTHONIOENCODING", None)
    for opts in ([], ["--plain"], ["--brief"], ["--summary"], ["-v"]):
        res = subprocess.run([*CLI, "file", *opts, str(path)], capture_output=True, env=env,
                             timeout=120)
        assert b"Traceback" not in res.stderr, res.stderr.decode(errors="replace")
        assert res.returncode in (0, 1), (opts, res.stderr)
        text = res.stdout.decode("utf-8")  # (strict: no raw undecodable byte)
        _clean(text, f"file {opts}")
        assert "\\x1b[2J" in text, (opts, text[-1500:])
