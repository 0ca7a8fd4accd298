"""Start/stop a throw-away MariaDB through scripts/mariadb.sh (used by tests and bench/).

Also a small text-protocol SELECT helper that keeps every value as the server's own text.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "mariadb.sh"


class ServerStartError(RuntimeError):
    """scripts/mariadb.sh start failed (the message carries the server's error log tail)."""


@dataclass(frozen=True)
class MariaDB:
    """Connection facts of a running throw-away server."""

    dir: Path
    host: str
    port: int
    socket: str
    pid: int
    user: str
    password: str
    repl_user: str
    repl_password: str
    database: str
    datadir: Path
    binlog_dir: Path
    binlog_basename: str
    version: str
    env: dict[str, str] = field(default_factory=dict, repr=False)

    def connect(self, **kwargs: Any) -> Any:
        """A pymysql connection as root over TCP (autocommit on, database selected)."""
        import pymysql

        args: dict[str, Any] = {
            "host": self.host,
            "port": self.port,
            "user": self.user,
            "password": self.password,
            "database": self.database,
            "autocommit": True,
            "charset": "utf8mb4",
        }
        args.update(kwargs)
        return pymysql.connect(**args)

    def binlog_files(self) -> list[Path]:
        """The binlog files listed in the index, in order (the last one is being written)."""
        index = self.binlog_dir / f"{self.binlog_basename}.index"
        out: list[Path] = []
        for line in index.read_text().splitlines():
            line = line.strip()
            if line:
                p = Path(line)
                out.append(p if p.is_absolute() else self.datadir / p)
        return out


def _parse_env(path: Path) -> dict[str, str]:
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            env[k.strip()] = v.strip()
    return env


def start(directory: Path | str, *, extra_env: dict[str, str] | None = None,
          timeout: float = 180) -> MariaDB:
    """Start a server under ``directory`` (see scripts/mariadb.sh); raise ServerStartError."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    if extra_env:
        env.update(extra_env)
    try:
        proc = subprocess.run(
            ["bash", str(SCRIPT), "start", str(d)],
            capture_output=True, text=True, timeout=timeout, env=env, stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ServerStartError(f"scripts/mariadb.sh start {d}: {exc}") from exc
    if proc.returncode != 0:
        raise ServerStartError(
            f"scripts/mariadb.sh start {d} exited {proc.returncode}:\n{proc.stderr.strip()}"
        )
    e = _parse_env(d / "server.env")
    return MariaDB(
        dir=d,
        host=e["MARIADB_HOST"],
        port=int(e["MARIADB_PORT"]),
        socket=e["MARIADB_SOCKET"],
        pid=int(e["MARIADB_PID"]),
        user=e["MARIADB_USER"],
        password=e.get("MARIADB_PASSWORD", ""),
        repl_user=e["MARIADB_REPL_USER"],
        repl_password=e["MARIADB_REPL_PASSWORD"],
        database=e["MARIADB_DATABASE"],
        datadir=Path(e["MARIADB_DATADIR"]),
        binlog_dir=Path(e["MARIADB_BINLOG_DIR"]),
        binlog_basename=e["MARIADB_BINLOG_BASENAME"],
        version=e["MARIADB_VERSION"],
        env=e,
    )


def stop(directory: Path | str, timeout: float = 120) -> None:
    subprocess.run(["bash", str(SCRIPT), "stop", str(directory)], check=True, timeout=timeout,
                   capture_output=True, stdin=subprocess.DEVNULL)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie (exited, not yet reaped) counts as gone
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def raw_connect(server: MariaDB, **kwargs: Any) -> Any:
    """A connection whose result values stay exactly as the server sent them (text protocol).

    ``conv={}`` turns off every pymysql converter. Text columns arrive as ``str`` (decoded with
    the connection charset), binary ones (charset 63) as ``bytes``; NULL is ``None``.
    """
    return server.connect(conv={}, **kwargs)


def write_ca_and_cert(d: Path, name: str) -> tuple[Path, Path, Path]:
    """A throw-away CA and a certificate for 127.0.0.1 it signed (PEM files in ``d``):
    (CA, certificate, key)."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)
    ca_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"{name} test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .sign(ca_key, hashes.SHA256()))
    ca_p, cert_p, key_p = d / f"{name}-ca.pem", d / f"{name}-cert.pem", d / f"{name}-key.pem"
    ca_p.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    cert_p.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_p.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                        serialization.PrivateFormat.TraditionalOpenSSL,
                                        serialization.NoEncryption()))
    return ca_p, cert_p, key_p


def sql(server: MariaDB, statement: str) -> list[tuple[Any, ...]]:
    """``statement``'s rows, every value as the server's text (a new connection, no database)."""
    conn = raw_connect(server, database=None)
    try:
        with conn.cursor() as cur:
            cur.execute(statement)
            return list(cur.fetchall())
    finally:
        conn.close()


def global_status(server: MariaDB, name: str) -> str:
    """One ``SHOW GLOBAL STATUS`` value ("" when the server has no such variable)."""
    rows = sql(server, f"SHOW GLOBAL STATUS LIKE '{name}'")
    return str(rows[0][1]) if rows else ""


def start_replica(server: MariaDB, host: str, port: int, log_file: str, log_pos: int, *,
                  server_id: int = 2, semi_sync: bool = True) -> None:
    """Make ``server`` a replica (file/position, no GTID) of ``host:port`` - the primary or a
    proxy in front of it - from ``log_file:log_pos``, with semi-sync ACKs if asked; started."""
    sql(server, f"SET GLOBAL server_id = {server_id}")
    sql(server, f"SET GLOBAL rpl_semi_sync_slave_enabled = {'ON' if semi_sync else 'OFF'}")
    sql(server, f"CHANGE MASTER TO MASTER_HOST='{host}', MASTER_PORT={port}, "
                "MASTER_USER='repl', MASTER_PASSWORD='replpass', MASTER_CONNECT_RETRY=1, "
                f"MASTER_LOG_FILE='{log_file}', MASTER_LOG_POS={log_pos}, MASTER_USE_GTID=no")
    sql(server, "START SLAVE")


def replica_status(server: MariaDB) -> dict[str, Any]:
    """``SHOW SLAVE STATUS`` as a dict (empty when not a replica)."""
    import pymysql

    conn = server.connect(database=None, cursorclass=pymysql.cursors.DictCursor)
    try:
        with conn.cursor() as cur:
            cur.execute("SHOW SLAVE STATUS")
            return dict(cur.fetchone() or {})
    finally:
        conn.close()


def wait_replica_at(server: MariaDB, log_file: str, log_pos: int, timeout: float = 60) -> None:
    """Until the replica has applied the primary's binlog up to ``log_file:log_pos``; raises
    AssertionError (with the status) on a replication error or the timeout."""
    import time

    deadline = time.monotonic() + timeout
    st: dict[str, Any] = {}
    while time.monotonic() < deadline:
        st = replica_status(server)
        if st.get("Last_IO_Error") or st.get("Last_SQL_Error"):
            break
        if (st.get("Relay_Master_Log_File"), st.get("Exec_Master_Log_Pos")) == (log_file,
                                                                                 log_pos):
            return
        time.sleep(0.1)
    raise AssertionError(f"the replica is not at {log_file}:{log_pos}: {st}")
