"""``binlogscope pcap --type/--flow``: family names for every version, errors for names and
flows that select nothing."""

from __future__ import annotations

import io
import json
from pathlib import Path

from binlogscope.cli.main import main

CAPTURES = Path(__file__).resolve().parents[1] / "captures"
MARIADB = CAPTURES / "pcap-mariadb-replica.pcapng"  # MariaDB writes WRITE_ROWS_EVENT_V1


def _run(*args: str) -> tuple[int, list[dict[str, object]], str]:
    out, err = io.StringIO(), io.StringIO()
    rc = main(["pcap", "--json", *args, str(MARIADB)], out, err)
    return rc, [json.loads(line) for line in out.getvalue().splitlines()], err.getvalue()


def test_family_names_match_every_version() -> None:
    rc, everything, _ = _run()
    assert rc == 0
    writes = [o for o in everything if o.get("kind") == "binlog_event"
              and str(o.get("event_type", "")).startswith("WRITE_ROWS_EVENT")]
    assert writes and {o["event_type"] for o in writes} == {"WRITE_ROWS_EVENT_V1"}
    for name in ("WRITE_ROWS_EVENT", "write_rows", "WRITE_ROWS_EVENT_V1", "write_rows_v1"):
        rc, got, err = _run("--type", name)
        assert rc == 0, err
        assert got == writes, name
    gtids = [o for o in everything if o.get("event_type") == "GTID_EVENT"]
    assert gtids and _run("--type", "gtid")[1] == gtids


def test_commands_by_name() -> None:
    rc, got, _ = _run("--type", "com_quit")
    assert rc == 0 and got
    assert all(o["kind"] == "command" and o["fields"]["command"] == "COM_QUIT"  # type: ignore[index]
               for o in got)


def test_unknown_type_and_flow_are_errors() -> None:
    rc, got, err = _run("--type", "WRITE_ROW_EVENT")
    assert (rc, got) == (2, []) and "unknown --type write_row_event" in err
    rc, got, err = _run("--flow", "99")
    assert rc == 2 and "no flow matches --flow 99" in err
    rc, got, err = _run("--flow", "2")
    assert rc == 0 and got and {o["flow_id"] for o in got} == {2}
