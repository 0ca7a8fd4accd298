"""Issue 31's CLI papercuts, each as a person meets it: help text on every option, an empty
position range refused, a GTID typo refused before connecting, flags that read as flags,
``live --socket`` not called TCP, reconnect notes on stderr."""

from __future__ import annotations

import argparse
import io

from binlogscope.cli.live import gtid_set_syntax_ok
from binlogscope.cli.main import build_parser
from binlogscope.cli.main import main as cli_main
from binlogscope.wire.binlog.types import EventFlag
from binlogscope.wire.constants import flag_names
from tests.tui.conftest import CRC


def _options_without_help(parser: argparse.ArgumentParser, prefix: str = "") -> list[str]:
    out = []
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sub in a.choices.items():
                out += _options_without_help(sub, f"{prefix}{name} ")
        elif a.help is None:  # an option, or a positional (binlogscope locate QUERY)
            out.append(f"{prefix}{a.option_strings[-1] if a.option_strings else a.dest}")
    return out


def test_every_option_has_help_text() -> None:
    assert _options_without_help(build_parser()) == []


def test_stop_position_before_start_position_is_an_error() -> None:
    err = io.StringIO()
    rc = cli_main(["file", str(CRC), "--plain", "--start-position", "500",
                   "--stop-position", "100"], out=io.StringIO(), err=err)
    assert rc == 2
    assert "--stop-position 100 is not after --start-position 500" in err.getvalue()


def test_a_gtid_typo_is_refused_before_connecting() -> None:
    err = io.StringIO()
    # port 1: nothing listens there; the refusal must come first, from the syntax
    rc = cli_main(["live", "--port", "1", "--gtid", "banana", "--plain"], out=io.StringIO(),
                  err=err)
    assert rc == 2 and "--gtid 'banana' is not a GTID set" in err.getvalue()
    assert "connect" not in err.getvalue().lower()
    for good in ("0-1-100", "0-1-100,1-2-7", "",
                 "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7",
                 "3e11fa47-71ca-11e1-9e33-c80aa9429562:tag:1-5",
                 # MySQL 8.3+'s @@gtid_executed: untagged intervals, then each tag's
                 "55778904-0299-11f1-b1b8-4ef0c4956feb:1-13:mytag:1-2:other:4:6-7"):
        assert gtid_set_syntax_ok(good), good
    for bad in ("banana", "0-1", "0-1-x", "3e11fa47:1-5",
                "3e11fa47-71ca-11e1-9e33-c80aa9429562:1-5:tag",
                "3e11fa47-71ca-11e1-9e33-c80aa9429562:tag"):
        assert not gtid_set_syntax_ok(bad), bad


def test_no_flag_set_reads_as_none_set() -> None:
    assert flag_names(0, EventFlag) == "(none set)"
    out = io.StringIO()
    assert cli_main(["file", str(CRC), "-v"], out=out, err=io.StringIO()) == 0
    text = out.getvalue()
    assert "header.flags = 0x0000 (none set)" in text
    assert "0x0000 0 " not in text


def test_every_mock_master_option_has_help_text() -> None:
    from mock_master.__main__ import build_parser as mm_parser

    assert _options_without_help(mm_parser()) == []


def test_live_text_notes_go_to_stderr_as_the_readme_says() -> None:
    """The demo's live session (in-process mock master, non-blocking dump) ends with a note:
    in text mode it is on stderr (the README's promise), and still in the text of a pipe."""
    out, err = io.StringIO(), io.StringIO()
    assert cli_main(["demo", "--plain", "--brief"], out=out, err=err) == 0
    assert "binlogscope: end of the binlog" in err.getvalue()
    assert "end of the binlog" in out.getvalue()
