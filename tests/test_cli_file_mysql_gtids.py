"""``file --include-gtids/--exclude-gtids``: mysqlbinlog's MySQL GTID set filters, as
``shall_skip_gtids`` in MySQL's client/mysqlbinlog.cc decides (no MySQL mysqlbinlog here to
compare with: the expectations below are that function's rules applied by hand to real MySQL
binlogs of the shared fixtures):

- a GTID starts a group, filtered when its GTID is not in --include-gtids or is in
  --exclude-gtids; the group's events follow, up to an XID or a COMMIT/ROLLBACK query (a DDL
  has neither: the flag holds until the next GTID);
- FORMAT_DESCRIPTION, ROTATE, STOP (and INCIDENT, IGNORABLE) are never filtered, nor
  PREVIOUS_GTIDS;
- a tagged GTID (MySQL 8.3+) is its own (uuid, tag) member of the sets.
"""

from __future__ import annotations

import subprocess

from tests.conftest import fixtures_dir
from tests.watch_support import CLI, ENV

BINLOGS = fixtures_dir() / "blackbeam__rust_mysql_common/test-data/binlogs"
U = "11111111-1111-1111-1111-111111111111"
T = "55778904-0299-11f1-b1b8-4ef0c4956feb"


def _offsets(name: str, *args: str) -> list[int]:
    r = subprocess.run([*CLI, "file", "--summary", *args, str(BINLOGS / name)],
                       capture_output=True, text=True, timeout=60, env=ENV)
    assert r.returncode == 0, r.stderr
    return [int(line.split()[1]) for line in r.stdout.splitlines()[1:] if line.strip()]


def test_exclude_and_include_on_a_56_binlog() -> None:
    """binlog_56_gtid_reserved_word: GTIDs 1-6 at 151, 308, 458, 781, 1066, 1229; 2 is a DDL
    (no COMMIT), 3 and 4 are BEGIN ... COMMIT transactions; STOP at 1399."""
    name = "binlog_56_gtid_reserved_word.000001"
    assert _offsets(name, f"--exclude-gtids={U}:2-3") == [
        4, 120, 151, 199, 781, 829, 901, 953, 993, 1066, 1114, 1229, 1277, 1399]
    assert _offsets(name, f"--include-gtids={U}:4") == [4, 120, 781, 829, 901, 953, 993, 1399]
    assert _offsets(name, f"--include-gtids={U}:1-6", f"--exclude-gtids={U}:1-5") == [
        4, 120, 1229, 1277, 1399]


def test_tagged_gtids_are_their_own_members() -> None:
    name = "binlog_transaction_with_GTID_TAG.000001"
    everything = _offsets(name)
    tagged_out = _offsets(name, f"--exclude-gtids={T}:mytag:3")
    assert tagged_out == [4, 127, 541]  # FD, PREVIOUS_GTIDS, ROTATE
    assert _offsets(name, f"--include-gtids={T}:1-13") == tagged_out  # untagged only
    assert _offsets(name, f"--include-gtids={T}:mytag:3") == everything


def test_a_bad_set_is_one_line() -> None:
    r = subprocess.run([*CLI, "file", "--summary", "--include-gtids=banana:1",
                        str(BINLOGS / "binlog_56_gtid_reserved_word.000001")],
                       capture_output=True, text=True, timeout=60, env=ENV)
    assert r.returncode == 2 and "is not a UUID" in r.stderr and "Traceback" not in r.stderr
