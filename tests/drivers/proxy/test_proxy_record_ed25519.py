"""``proxy --record`` with a real ed25519 login (issue 32: the nonce and the auth response of
every login were in the recording - 8 of 8 - "ed25519 signature" among them): the mariadb
client logs in through the proxy as a user IDENTIFIED VIA ed25519 (MariaDB's auth switch: a
32-byte nonce, a 64-byte signature) and runs a query. Read back with the capture decoder
(trees on), every secret leaf of the login - the greeting's scramble, the auth switch's nonce,
the client's signature - is '*' bytes of the same length in the recording; with
``--record-raw`` the same leaves hold the real bytes (the check can tell them apart), and the
query and its answer read back either way."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from binlogscope.drivers.capture.pcap import read_capture
from binlogscope.session.events import PacketDecoded
from binlogscope.wire.fields import is_sensitive
from binlogscope.wire.framing import encode_packet
from tests.ci_support import unavailable
from tests.watch_support import run_sql, start_proxy

pytestmark = pytest.mark.mysql

USER, PASSWORD = "u_ed_proxy", "Ed25519-through-the-proxy-61"


@pytest.fixture(scope="module")
def ed25519_user(mariadb: Any) -> Any:
    rows = run_sql(mariadb, "SELECT COUNT(*) FROM information_schema.PLUGINS "
                   "WHERE PLUGIN_NAME = 'ed25519'")
    if not rows[0][0]:
        run_sql(mariadb, "INSTALL SONAME 'auth_ed25519'")
    run_sql(mariadb, "SET SESSION sql_log_bin = 0",
            f"CREATE OR REPLACE USER {USER}@'%' IDENTIFIED VIA ed25519 "
            f"USING PASSWORD('{PASSWORD}')")
    yield mariadb
    run_sql(mariadb, "SET SESSION sql_log_bin = 0", f"DROP USER IF EXISTS {USER}@'%'")


def _login_through_proxy(server: Any, rec: Path, *extra: str) -> None:
    exe = shutil.which("mariadb") or shutil.which("mysql")
    if exe is None:
        unavailable("the mariadb client is not installed")
    proxy, port = start_proxy((server.host, server.port), "--record", str(rec), *extra,
                              stdout=subprocess.DEVNULL)
    try:
        res = subprocess.run([exe, "-h127.0.0.1", f"-P{port}", f"-u{USER}", f"-p{PASSWORD}",
                              "--skip-ssl", "-N", "-e", "SELECT 6 * 7"],
                             capture_output=True, text=True, timeout=60)
    finally:
        proxy.terminate()
        proxy.communicate(timeout=30)
    assert res.returncode == 0 and res.stdout.strip() == "42", res.stderr


def _secret_leaves(rec: Path, port: int) -> tuple[list[tuple[str, bytes]], list[str]]:
    """(packet kind, bytes) of every secret leaf of the recording's packets; the kinds."""
    out, kinds = [], []
    for it in read_capture(str(rec), {port}, record=True):
        ev = it.event
        if not isinstance(ev, PacketDecoded) or ev.node is None:
            continue
        kinds.append(ev.kind)
        raw = encode_packet(ev.payload, ev.seq) if ev.wire_length == len(ev.payload) + 4 \
            else None
        for _, n in ev.node.walk():
            if n.length and not n.children and is_sensitive(n) and raw is not None:
                lo = n.offset - ev.offset
                out.append((ev.kind, raw[lo:lo + n.length]))
    return out, kinds


def test_an_ed25519_login_is_masked_in_the_recording(ed25519_user: Any,
                                                     tmp_path: Path) -> None:
    server = ed25519_user
    masked, raw = tmp_path / "masked.pcapng", tmp_path / "raw.pcapng"
    _login_through_proxy(server, masked)
    _login_through_proxy(server, raw, "--record-raw")
    for rec, is_raw in ((masked, False), (raw, True)):
        leaves, kinds = _secret_leaves(rec, server.port)
        assert "auth_switch_request" in kinds and "auth_switch_response" in kinds, kinds
        assert kinds.index("com_query") > kinds.index("auth_switch_response")
        assert "text_row" in kinds
        by_kind = {k: [b for kk, b in leaves if kk == k] for k, _ in leaves}
        # the greeting's scramble (two parts), the ed25519 nonce, the signature
        assert sum(len(b) for b in by_kind["auth_switch_request"]) == 32, by_kind
        assert sum(len(b) for b in by_kind["auth_switch_response"]) == 64, by_kind
        assert sum(len(b) for b in by_kind["handshake_v10"]) >= 20, by_kind
        for kind, b in leaves:
            stars = set(b) == {0x2A}
            assert stars != is_raw, (rec.name, kind, b.hex())
        assert PASSWORD.encode() not in rec.read_bytes()
