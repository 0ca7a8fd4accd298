"""A throw-away MariaDB for ``mock-master diff --start-mariadb DIR``: started with the
repository's scripts/mariadb.sh (its own datadir, socket and free loopback port under DIR),
fed a workload SQL file with the ``mariadb`` client, stopped afterwards.

Only in a source checkout (the script is not installed with the package); logins: root
without password and repl/replpass, as scripts/mariadb.sh creates them.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

#: the repository root is three levels up: mock_master/diff/server.py
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "mariadb.sh"


class ServerError(RuntimeError):
    """The throw-away server could not be started or fed."""


@dataclass(frozen=True)
class ThrowAwayServer:
    dir: Path
    host: str
    port: int
    socket: str
    binlog_dir: Path

    def stop(self) -> None:
        subprocess.run(["bash", str(SCRIPT), "stop", str(self.dir)], capture_output=True,
                       timeout=120, stdin=subprocess.DEVNULL, check=False)


def start(directory: Path | str, timeout: float = 180) -> ThrowAwayServer:
    if not SCRIPT.exists():
        raise ServerError(f"{SCRIPT} not found (--start-mariadb needs a source checkout)")
    d = Path(directory)
    proc = subprocess.run(["bash", str(SCRIPT), "start", str(d)], capture_output=True,
                          text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    if proc.returncode != 0:
        raise ServerError(f"scripts/mariadb.sh start {d} failed: {proc.stderr.strip()}")
    host, port, sock, _pid = proc.stdout.split()[:4]
    return ThrowAwayServer(d.resolve(), host, int(port), sock, d.resolve() / "binlog")


def run_sql(server: ThrowAwayServer, sql_file: Path | str, database: str = "binlogscope_test",
            timeout: float = 600) -> None:
    """Run a SQL file as root over the socket; then wait until the binlog has settled."""
    client = shutil.which("mariadb") or shutil.which("mysql")
    if client is None:
        raise ServerError("the mariadb client is not installed")
    with open(sql_file, "rb") as f:
        proc = subprocess.run([client, "--no-defaults", "-uroot", "-S", server.socket,
                               database], stdin=f, capture_output=True, timeout=timeout,
                              check=False)
    if proc.returncode != 0:
        raise ServerError(f"{sql_file}: {proc.stderr.decode('utf-8', 'replace').strip()}")
    settle(server.binlog_dir)


def binlog_files(binlog_dir: Path) -> list[Path]:
    """The files the binlog index lists, in order."""
    index = sorted(binlog_dir.glob("*.index"))
    names = index[0].read_text().split() if index else []
    return [binlog_dir / Path(n).name for n in names]


def settle(binlog_dir: Path, timeout: float = 15) -> None:
    """Wait for the BINLOG_CHECKPOINT MariaDB writes into its active file a moment after a
    rotation (it names that file): copies taken before it would miss an event the server
    sends."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        files = binlog_files(binlog_dir)
        if not files or files[-1].name.encode() in files[-1].read_bytes():
            return
        time.sleep(0.1)
