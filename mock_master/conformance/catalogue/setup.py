"""setup: the login and the dialog before the dump (checksum, capability, register, the
dump request itself)."""

from __future__ import annotations

import json

from mock_master.conformance.catalogue.common import BOTH, scenario, txn_stream
from mock_master.conformance.grade import judge_clean_end, judge_rows
from mock_master.conformance.judges import client_framing, dump_sent, mock_violations
from mock_master.conformance.model import Case, Check, Setup, Verdict
from mock_master.conformance.observe import Observation
from mock_master.scenario.scenarios import User


def _plain(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    return Setup(scenario(flavor, b.build()), expected=exp)


def _framing(obs: Observation) -> list[Check]:
    checks = dump_sent(obs) + client_framing(obs)
    if not checks:
        n = len(obs.client_packets())
        checks.append(Check(Verdict.PASS, f"{n} client packet(s), every length header equals "
                            "the bytes sent"))
    return checks + judge_clean_end(obs)


def _checksum(obs: Observation) -> list[Check]:
    qs = [q for q in obs.queries() if "binlog_checksum" in q.lower() and q.strip().upper()
          .startswith("SET")]
    checks = mock_violations(obs, only=("checksum",))
    if qs:
        checks.append(Check(Verdict.PASS, f"announced: {qs[0][:120]!r}"))
    elif not checks:
        checks.append(Check(Verdict.FAIL, "no SET @master_binlog_checksum / "
                            "@source_binlog_checksum before the dump"))
    return checks + judge_clean_end(obs) + judge_rows(obs)


def _register(obs: Observation) -> list[Check]:
    reg = [c.get("register") for c in obs.clients if c.get("register")]
    if reg:
        return [Check(Verdict.PASS, f"COM_REGISTER_SLAVE sent: {reg[0]}")]
    return [Check(Verdict.PASS, "no COM_REGISTER_SLAVE (the dump works without it; SHOW "
                  "SLAVE HOSTS will not list the client)")]


def _capability(obs: Observation) -> list[Check]:
    vals = [q for q in obs.queries() if "mariadb_slave_capability" in q.lower()]
    if vals:
        return [Check(Verdict.PASS, f"announced: {vals[0][:120]!r}")]
    return [Check(Verdict.NON_STRICT, "no SET @mariadb_slave_capability: MariaDB then treats "
                  "the client as a pre-GTID replica and may send dummy events in place of "
                  "GTID/annotate events")]


def _heartbeat(obs: Observation) -> list[Check]:
    vals = [q for q in obs.queries() if "heartbeat_period" in q.lower()]
    if vals:
        return [Check(Verdict.PASS, f"asks for heartbeats: {vals[0][:120]!r}")]
    return [Check(Verdict.PASS, "asks for no heartbeats (a silent dead connection can only be "
                  "noticed by a read timeout)")]


def _sha2(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    return Setup(scenario(flavor, b.build(), users=[User("repl", "replpass",
                                                         "caching_sha2_password")]),
                 expected=exp)


def _logged_in(obs: Observation) -> list[Check]:
    if not any(c.get("authenticated") for c in obs.clients):
        return [Check(Verdict.FAIL, "the client could not log in with caching_sha2_password "
                      "over a plain connection (full authentication: the RSA public key "
                      "exchange)"), *judge_clean_end(obs)]
    return dump_sent(obs) + judge_clean_end(obs) + judge_rows(obs)


_CERT: dict[str, str] = {}


def _tls_files() -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 (openssl, once per process)."""
    if not _CERT:
        import subprocess
        import tempfile
        from pathlib import Path

        d = Path(tempfile.mkdtemp(prefix="conformance-tls-"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days",
                        "2", "-subj", "/CN=127.0.0.1", "-keyout", str(d / "key.pem"), "-out",
                        str(d / "cert.pem")], check=True, capture_output=True, timeout=60)
        _CERT.update(cert=str(d / "cert.pem"), key=str(d / "key.pem"))
    return _CERT["cert"], _CERT["key"]


def _tls(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    cert, key = _tls_files()
    return Setup(scenario(flavor, b.build(), tls_cert=cert, tls_key=key), expected=exp,
                 tls="default")


def _tls_judge(obs: Observation) -> list[Check]:
    # after an SSLRequest the relay sees ciphertext: the mock master's log says what happened
    used = any(c.get("tls") for c in obs.clients)
    dumped = any(c.get("dump") for c in obs.clients)
    return [Check(Verdict.PASS, "the client " + ("switched to TLS (SSLRequest) and read the "
                                                 "stream encrypted" if used else
                                                 "stayed in plain text although TLS was "
                                                 "offered")),
            *([] if dumped else [Check(Verdict.FAIL, "no dump request reached the mock "
                                       "master")]),
            *judge_clean_end(obs), *judge_rows(obs)]


def _tls_required(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    cert, key = _tls_files()
    return Setup(scenario(flavor, b.build(), tls_cert=cert, tls_key=key, tls_required=True),
                 expected=exp, tls="default")


def _reported(obs: Observation) -> str | None:
    """The client's report of a failure: its first error line, else its non-zero exit."""
    errs = [str(e.get("message", "")) for e in obs.of_type("error")]
    if not errs and not obs.has_adapter:  # an adapter-less client's JSON error lines
        for ln in obs.other_output:
            try:
                d = json.loads(ln)
            except ValueError:
                continue
            if isinstance(d, dict) and d.get("type") == "error":
                errs.append(str(d.get("message", "")))
    if errs:
        return errs[0][:160]
    tail = (obs.stderr.strip().splitlines() or obs.other_output or [""])[-1][:160]
    if obs.exit_code not in (0, None):
        return f"exit status {obs.exit_code}" + (f": {tail}" if tail else "")
    return None


def _tls_required_judge(obs: Observation) -> list[Check]:
    """TLS, or the server's refusal reported; never a silent end or a silent wait."""
    if any(c.get("tls") for c in obs.clients):
        if not any(c.get("dump") for c in obs.clients):
            return [Check(Verdict.FAIL, "switched to TLS but no dump request reached the "
                          "mock master"), *judge_clean_end(obs)]
        return [Check(Verdict.PASS, "switched to TLS (SSLRequest) and read the stream "
                      "encrypted"), *judge_clean_end(obs), *judge_rows(obs)]
    refused = [e for c in obs.clients for e in c.get("errors", [])]
    why = _reported(obs)
    if why is not None:
        more = " (still retrying at the time limit)" if obs.timed_out else ""
        return [Check(Verdict.PASS, "stayed in plain text; the server refused the login "
                      f"({refused[0] if refused else 'no login'}) and the client reported "
                      f"it{more}: {why}")]
    if obs.timed_out:
        return [Check(Verdict.FAIL, f"stayed in plain text, was refused "
                      f"({refused[0] if refused else 'no login'}) and was still running "
                      f"after {obs.setup.timeout:g} s without reporting it")]
    return [Check(Verdict.FAIL, "stayed in plain text, was refused and exited 0 without an "
                  "error: the refusal went unreported")]


def _tls_not_offered(flavor: str) -> Setup:
    b, exp = txn_stream(flavor)
    return Setup(scenario(flavor, b.build()), expected=exp, tls="required")


def _tls_insisted_judge(obs: Observation) -> list[Check]:
    """Told to insist on TLS, the client meets a source that offers none: it must not log in
    in plain text (no HandshakeResponse41 on the wire) and must say why."""
    plain = obs.client_packets("handshake_response41")
    if plain or any(c.get("authenticated") for c in obs.clients):
        return [Check(Verdict.FAIL, "told to insist on TLS, it logged in over plain TCP "
                      f"({len(plain)} HandshakeResponse41 sent in clear): a downgrade")]
    why = _reported(obs)
    if why is None:
        return [Check(Verdict.FAIL, "sent no login (right) but reported nothing: "
                      + ("still running at the time limit" if obs.timed_out
                         else "exit status 0"))]
    more = " (still retrying at the time limit)" if obs.timed_out else ""
    return [Check(Verdict.PASS, f"refused to log in without TLS{more}: {why}")]


CASES: list[Case] = [
    Case("setup/dump-request-framing", "every request's length header equals the bytes sent "
         "(COM_BINLOG_DUMP included)",
         "each packet the client writes is exactly as long as its header says", _plain,
         _framing, flavors=BOTH),
    Case("setup/checksum-announce", "checksum support announced before the dump",
         "SET @master_binlog_checksum (or @source_binlog_checksum) before COM_BINLOG_DUMP, "
         "then the CRC32-checksummed events decoded", _plain, _checksum, flavors=BOTH),
    Case("setup/caching-sha2-password", "login with caching_sha2_password (full "
         "authentication over plain TCP)",
         "log in through the RSA public key exchange (or TLS), then dump", _sha2, _logged_in,
         flavors=("mysql",)),
    Case("setup/tls-offered", "a source that offers TLS (CLIENT_SSL, a self-signed "
         "certificate)", "recorded: whether the client switches to TLS; either way it logs in "
         "and reads the stream", _tls, _tls_judge, flavors=BOTH, informational=True),
    Case("setup/tls-required", "a source that requires TLS (require_secure_transport=ON): "
         "a plain login is refused", "with its own TLS setting, the client switches to TLS and "
         "reads the stream, or reports the server's refusal (MariaDB: ERR 1045, MySQL: ERR "
         "3159); never ends silently or waits without a word", _tls_required,
         _tls_required_judge, flavors=BOTH),
    Case("setup/tls-insisted-not-offered", "a client told to insist on TLS meets a source "
         "that offers none (no CLIENT_SSL)", "refuses: no login in plain text (no "
         "HandshakeResponse41 on the wire), the reason reported", _tls_not_offered,
         _tls_insisted_judge, flavors=BOTH),
    Case("setup/register-slave", "COM_REGISTER_SLAVE", "recorded: whether and how the client "
         "registers", _plain, _register, flavors=BOTH, informational=True),
    Case("setup/heartbeat-period", "heartbeat period asked for", "recorded: the "
         "@master_heartbeat_period the client sets", _plain, _heartbeat, flavors=BOTH,
         informational=True),
    Case("setup/mariadb-capability", "@mariadb_slave_capability announced",
         "SET @mariadb_slave_capability=4 (GTID and annotate events understood)", _plain,
         _capability, flavors=("mariadb",)),
]
