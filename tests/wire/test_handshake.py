"""Connection-phase packets and OK/ERR/EOF: values, spans, tiling, round trips, redaction."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from binlogscope.session import Session
from binlogscope.session.events import DecodeError, PacketDecoded, Peer, SequenceMismatch
from binlogscope.wire import handshake as hs
from binlogscope.wire.constants import CapabilityFlag as C
from binlogscope.wire.constants import MariaDbCapability, SessionTrackType, StatusFlag
from binlogscope.wire.fields import REDACTED, is_sensitive, redact, redact_bytes
from binlogscope.wire.node import Node, check_tiling
from binlogscope.wire.packet import run_decoder


def hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(line.split("#", 1)[0] for line in text.splitlines()))


def decode(fn: Callable[..., Any], payload: bytes, caps: int = hs.DEFAULT_CAPABILITIES,
           base: int = 4) -> tuple[Any, Node]:
    d = run_decoder("payload", fn, payload, caps=caps, base=base)
    assert d.error is None, d.error
    assert d.node is not None
    assert check_tiling(d.node) == []
    assert (d.node.offset, d.node.length) == (base, len(payload))
    fast = run_decoder("payload", fn, payload, caps=caps, base=base, record=False)
    assert fast.value == d.value and fast.node is None
    return d.value, d.node


def span(node: Node, path: str) -> tuple[int, int]:
    n = node.find(path)
    return n.offset, n.length


# Real greeting of MySQL 8.0.32 (zeek caching_sha2_password-after-auth-switch.pcapng), payload
HANDSHAKE_MYSQL8 = hexbytes("""
    0a                                  # protocol_version 10
    38 2e 30 2e 33 32 00                # server_version "8.0.32" NUL
    14 00 00 00                         # thread_id 20
    56 7a 08 77 2b 5e 04 70             # auth_plugin_data_part_1 (scramble 1..8)
    00                                  # filler
    ff ff                               # capability_flags_1 (low 16 bits)
    ff                                  # character_set 255 utf8mb4_0900_ai_ci
    02 00                               # status_flags SERVER_STATUS_AUTOCOMMIT
    ff df                               # capability_flags_2 (high 16 bits)
    15                                  # auth_plugin_data_len 21
    00 00 00 00 00 00 00 00 00 00       # reserved
    02 54 76 01 22 7e 11 34 14 52 50 36 00  # auth_plugin_data_part_2 (12 + NUL)
    63 61 63 68 69 6e 67 5f 73 68 61 32 5f 70 61 73 73 77 6f 72 64 00
                                        # auth_plugin_name "caching_sha2_password" NUL
""")


def test_handshake_v10_mysql8() -> None:
    v, node = decode(hs.decode_handshake_v10, HANDSHAKE_MYSQL8)
    assert v.server_version == "8.0.32"
    assert v.connection_id == 20
    assert v.auth_plugin_data == hexbytes("56 7a 08 77 2b 5e 04 70 02 54 76 01 22 7e 11 34 14 "
                                          "52 50 36")
    assert v.capability_flags == 0xDFFFFFFF
    assert v.character_set == 255 and v.status_flags == StatusFlag.SERVER_STATUS_AUTOCOMMIT
    assert v.auth_plugin_name == "caching_sha2_password"
    assert v.mariadb_capabilities == 0
    assert span(node, "server_version") == (5, 7)
    assert span(node, "thread_id") == (12, 4)
    assert span(node, "capability_flags_1") == (25, 2)
    assert span(node, "capability_flags_2") == (30, 2)
    assert span(node, "reserved") == (33, 10)
    assert span(node, "auth_plugin_data_part_2") == (43, 13)
    assert span(node, "auth_plugin_name") == (56, 22)
    # each flag is a named child of its byte
    ssl = node.find("capability_flags_1.CLIENT_SSL")
    assert (ssl.value, ssl.offset, ssl.length, ssl.wire) == (True, 26, 1, "bit")
    deprecate = node.find("capability_flags_2.CLIENT_DEPRECATE_EOF")
    assert (deprecate.value, deprecate.offset) == (True, 31)
    assert node.find("capability_flags_2.CLIENT_CAPABILITY_EXTENSION").value is False
    assert "CLIENT_PROTOCOL_41" in node.find("capability_flags_1").display
    # the scramble is kept but marked sensitive
    assert is_sensitive(node.find("auth_plugin_data_part_1"))
    assert "scramble" not in repr(v) and "auth_plugin_data" not in repr(v)
    # the encoder reproduces the server's bytes exactly
    assert hs.encode_handshake_v10(v) == HANDSHAKE_MYSQL8


HANDSHAKE_MARIADB = hexbytes("""
    0a                                  # protocol_version 10
    35 2e 35 2e 35 2d 31 30 2e 31 31 2e 36 2d 4d 61 72 69 61 44 42 00
                                        # server_version "5.5.5-10.11.6-MariaDB" NUL
    07 00 00 00                         # thread_id 7
    31 32 33 34 35 36 37 38             # auth_plugin_data_part_1
    00                                  # filler
    fe f7                               # capability_flags_1: bit 0 (CLIENT_MYSQL) clear
    2d                                  # character_set 45 utf8mb4_general_ci
    02 00                               # status_flags
    ff 81                               # capability_flags_2
    15                                  # auth_plugin_data_len 21
    00 00 00 00 00 00                   # reserved (6 bytes on MariaDB)
    1d 00 00 00                         # mariadb_capabilities: PROGRESS|STMT_BULK|EXT_META|CACHE
    61 62 63 64 65 66 67 68 69 6a 6b 6c 00  # auth_plugin_data_part_2
    6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70 61 73 73 77 6f 72 64 00
                                        # auth_plugin_name "mysql_native_password"
""")


def test_handshake_v10_mariadb_extended_capabilities() -> None:
    v, node = decode(hs.decode_handshake_v10, HANDSHAKE_MARIADB)
    assert v.is_mariadb
    assert not v.capability_flags & C.CLIENT_LONG_PASSWORD
    assert v.mariadb_capabilities == (MariaDbCapability.MARIADB_CLIENT_PROGRESS
                                      | MariaDbCapability.MARIADB_CLIENT_STMT_BULK_OPERATIONS
                                      | MariaDbCapability.MARIADB_CLIENT_EXTENDED_METADATA
                                      | MariaDbCapability.MARIADB_CLIENT_CACHE_METADATA)
    assert v.auth_plugin_data == b"12345678abcdefghijkl"
    assert span(node, "reserved") == (4 + 44, 6)
    assert span(node, "mariadb_capabilities") == (4 + 50, 4)
    assert node.find("mariadb_capabilities.MARIADB_CLIENT_PROGRESS").value is True
    assert hs.encode_handshake_v10(v) == HANDSHAKE_MARIADB


RESPONSE_41 = hexbytes("""
    85 a6 3f 00         # client_flag: LONG_PASSWORD|LONG_FLAG|LOCAL_FILES|PROTOCOL_41|
                        #   TRANSACTIONS|SECURE_CONNECTION|MULTI_*|PLUGIN_AUTH|CONNECT_ATTRS|
                        #   PLUGIN_AUTH_LENENC_CLIENT_DATA (0x003fa685)
    00 00 00 01         # max_packet_size 16 MiB
    ff                  # character_set 255
    00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00   # filler (23)
    72 65 70 6c 00      # username "repl" NUL
    14                  # auth_response_length 20 (int<lenenc>)
    11 22 33 44 55 66 77 88 99 aa bb cc dd ee ff 00 01 02 03 04   # auth_response
    6d 79 73 71 6c 5f 6e 61 74 69 76 65 5f 70 61 73 73 77 6f 72 64 00
                        # client_plugin_name "mysql_native_password" NUL
    0a                  # length_of_all_key_values 10
    04 5f 70 69 64      # key "_pid"
    04 31 32 33 34      # value "1234"
""")


def test_handshake_response41() -> None:
    v, node = decode(hs.decode_handshake_response41, RESPONSE_41)
    assert v.capability_flags == 0x003FA685
    assert v.username == "repl"
    assert v.auth_response == hexbytes("112233445566778899aabbccddeeff0001020304")
    assert v.database is None
    assert v.client_plugin_name == "mysql_native_password"
    assert v.connect_attrs == (("_pid", "1234"),)
    assert span(node, "username") == (36, 5)
    assert span(node, "auth_response_length") == (41, 1)
    assert span(node, "auth_response") == (42, 20)
    assert span(node, "connect_attrs") == (85, 10)
    assert node.find("connect_attrs.attribute").display == "_pid=1234"
    assert node.find("client_flag.CLIENT_CONNECT_ATTRS").value is True
    assert node.find("client_flag.CLIENT_SSL").value is False
    assert hs.encode_handshake_response41(v) == RESPONSE_41
    assert "11223344" not in repr(v)


def test_handshake_response41_one_byte_length_and_database() -> None:
    flags = C.CLIENT_PROTOCOL_41 | C.CLIENT_SECURE_CONNECTION | C.CLIENT_CONNECT_WITH_DB \
        | C.CLIENT_LONG_PASSWORD
    payload = hexbytes("""
        09 82 00 00     # client_flag: LONG_PASSWORD|CONNECT_WITH_DB|PROTOCOL_41|SECURE_CONNECTION
        00 00 00 40     # max_packet_size 1 GiB
        21              # character_set 33 utf8mb3_general_ci
    """) + bytes(23) + hexbytes("""
        75 00           # username "u"
        02 ab cd        # auth_response_length 2 (int<1>), auth_response
        64 62 00        # database "db"
    """)
    v, node = decode(hs.decode_handshake_response41, payload)
    assert v.capability_flags == flags
    assert (v.username, v.auth_response, v.database) == ("u", b"\xab\xcd", "db")
    assert node.find("auth_response_length").wire == "int<1>"
    assert hs.encode_handshake_response41(v) == payload


SSL_REQUEST = hexbytes("""
    05 ae ff 01     # client_flag with CLIENT_SSL (0x800)
    00 00 00 01     # max_packet_size
    2d              # character_set 45
""") + bytes(23)    # filler


def test_ssl_request() -> None:
    assert hs.is_ssl_request(SSL_REQUEST)
    v, node = decode(hs.decode_ssl_request, SSL_REQUEST)
    assert v.capability_flags & C.CLIENT_SSL
    assert v.character_set == 45
    assert span(node, "filler") == (13, 23)
    assert hs.encode_ssl_request(v) == SSL_REQUEST
    assert not hs.is_ssl_request(RESPONSE_41)


AUTH_SWITCH = hexbytes("""
    fe                      # status_tag 0xFE: switch auth method
    63 61 63 68 69 6e 67 5f 73 68 61 32 5f 70 61 73 73 77 6f 72 64 00
                            # plugin_name "caching_sha2_password" NUL
    56 7a 08 77 2b 5e 04 70 02 54 76 01 22 7e 11 34 14 52 50 36 00
                            # plugin_provided_data: new scramble + NUL
""")


def test_auth_switch_request() -> None:
    v, node = decode(hs.decode_auth_switch_request, AUTH_SWITCH)
    assert v.plugin_name == "caching_sha2_password" and not v.is_old_password
    assert len(v.plugin_provided_data) == 21
    assert span(node, "plugin_name") == (5, 22)
    assert span(node, "plugin_provided_data") == (27, 21)
    assert is_sensitive(node.find("plugin_provided_data"))
    assert hs.encode_auth_switch_request(v) == AUTH_SWITCH


def test_old_password_switch_is_a_lone_fe() -> None:
    v, node = decode(hs.decode_auth_switch_request, hexbytes("fe  # status_tag, nothing else"))
    assert v.is_old_password and v.plugin_name is None
    assert span(node, "status_tag") == (4, 1)
    assert hs.encode_auth_switch_request(v) == b"\xfe"


@pytest.mark.parametrize(("payload", "fast", "full", "display"), [
    (hexbytes("01 03  # status_tag, fast_auth_success"), True, False, "0x03 fast_auth_success"),
    (hexbytes("01 04  # status_tag, perform_full_authentication"), False, True,
     "0x04 perform_full_authentication"),
])
def test_auth_more_data_caching_sha2(payload: bytes, fast: bool, full: bool, display: str) -> None:
    v, node = decode(hs.decode_auth_more_data, payload)
    assert (v.fast_auth_success, v.perform_full_authentication) == (fast, full)
    n = node.find("authentication_method_data")
    assert (n.offset, n.length, n.display) == (5, 1, display)
    assert hs.encode_auth_more_data(v) == payload


def test_auth_switch_response_public_key_request() -> None:
    v, node = decode(hs.decode_auth_switch_response, b"\x02")
    assert v.data == b"\x02"
    assert "request public key" in node.find("auth_plugin_response").display


OK_SESSION_TRACK = hexbytes("""
    00              # header 0x00 OK
    00              # affected_rows 0
    00              # last_insert_id 0
    02 40           # status_flags AUTOCOMMIT|SESSION_STATE_CHANGED
    00 00           # warnings 0
    00              # info "" (lenenc)
    0e              # session_state_info_length 14
    05              # type SESSION_TRACK_TRANSACTION_STATE
    09              # data_length 9
    08 5f 5f 5f 5f 5f 5f 5f 5f   # value "________" (no transaction)
    04              # type SESSION_TRACK_TRANSACTION_CHARACTERISTICS
    01              # data_length 1
    00              # value ""
""")


def test_ok_with_session_track() -> None:
    caps = hs.DEFAULT_CAPABILITIES | C.CLIENT_SESSION_TRACK
    v, node = decode(hs.decode_ok, OK_SESSION_TRACK, caps)
    assert v.status_flags == StatusFlag.SERVER_STATUS_AUTOCOMMIT | \
        StatusFlag.SERVER_SESSION_STATE_CHANGED
    assert v.session_state_changes == (
        hs.SessionStateChange(SessionTrackType.SESSION_TRACK_TRANSACTION_STATE, ("________",)),
        hs.SessionStateChange(SessionTrackType.SESSION_TRACK_TRANSACTION_CHARACTERISTICS, ("",)),
    )
    assert node.find("status_flags.SERVER_SESSION_STATE_CHANGED").value is True
    assert span(node, "session_state_info") == (13, 14)
    assert node.find("session_state_info.session_state_change").display == \
        "SESSION_TRACK_TRANSACTION_STATE"
    assert hs.encode_ok(v, caps) == OK_SESSION_TRACK


OK_PLAIN = hexbytes("""
    00              # header
    fc e8 03        # affected_rows 1000 (0xFC + int<2>)
    2a              # last_insert_id 42
    22 00           # status_flags AUTOCOMMIT|SERVER_QUERY_NO_INDEX_USED
    01 00           # warnings 1
    52 6f 77 73     # info "Rows" (string<EOF>, no SESSION_TRACK)
""")


def test_ok_plain() -> None:
    v, node = decode(hs.decode_ok, OK_PLAIN)
    assert (v.affected_rows, v.last_insert_id, v.warnings, v.info) == (1000, 42, 1, "Rows")
    assert span(node, "affected_rows") == (5, 3)
    assert node.find("status_flags").display.endswith(
        "SERVER_STATUS_AUTOCOMMIT|SERVER_QUERY_NO_INDEX_USED")
    assert hs.encode_ok(v) == OK_PLAIN


ERR_1236 = hexbytes("""
    ff              # header 0xFF ERR
    d4 04           # error_code 1236
    23              # sql_state_marker '#'
    48 59 30 30 30  # sql_state "HY000"
""") + b"Could not find first log file name in binary log index file"


def test_err_with_hint() -> None:
    v, node = decode(hs.decode_err, ERR_1236)
    assert (v.error_code, v.sql_state) == (1236, "HY000")
    assert v.error_message.startswith("Could not find first log")
    assert "SHOW BINARY LOGS" in v.hint
    code = node.find("error_code")
    assert (code.offset, code.length) == (5, 2)
    assert "SHOW BINARY LOGS" in code.display
    assert span(node, "sql_state") == (8, 5)
    assert hs.encode_err(v) == ERR_1236


def test_err_without_sql_state_marker() -> None:
    payload = hexbytes("ff  # header\n 10 04  # error_code 1040") + b"Too many connections"
    v, node = decode(hs.decode_err, payload)
    assert (v.error_code, v.sql_state, v.error_message) == (1040, None, "Too many connections")
    assert node.get("sql_state") is None


def test_eof() -> None:
    payload = hexbytes("""
        fe      # header 0xFE EOF
        00 00   # warnings 0
        0a 00   # status_flags AUTOCOMMIT|SERVER_MORE_RESULTS_EXISTS
    """)
    v, node = decode(hs.decode_eof, payload)
    assert v.status_flags & StatusFlag.SERVER_MORE_RESULTS_EXISTS
    assert span(node, "status_flags") == (7, 2)
    assert hs.encode_eof(v) == payload
    assert hs.is_eof_packet(payload, hs.DEFAULT_CAPABILITIES)
    # with DEPRECATE_EOF an OK with a 0xFE header ends result sets
    ok_fe = hs.encode_ok(hs.OkPacket(header=0xFE))
    assert hs.is_eof_packet(ok_fe, hs.DEFAULT_CAPABILITIES | C.CLIENT_DEPRECATE_EOF)
    v2, _ = decode(hs.decode_ok, ok_fe)
    assert v2.header == 0xFE
    # a row whose first value is >= 16 MiB starts with 0xFE but is no terminator
    assert not hs.is_eof_packet(b"\xfe" + bytes(8), hs.DEFAULT_CAPABILITIES)


def test_truncated_greeting_is_an_error_not_a_crash() -> None:
    d = run_decoder("handshake_v10", hs.decode_handshake_v10, HANDSHAKE_MYSQL8[:20], caps=0,
                    base=4)
    assert d.value is None
    assert d.error is not None and d.error.startswith("at offset 24:")
    assert d.node is not None and check_tiling(d.node) == []
    assert d.node.find("server_version").value == "8.0.32"


def test_redact() -> None:
    _, node = decode(hs.decode_handshake_response41, RESPONSE_41)
    clean = redact(node)
    assert clean.find("auth_response").value == REDACTED
    assert clean.find("auth_response").display == f"{REDACTED} (20 bytes)"
    assert clean.find("username").value == "repl"
    assert (clean.find("auth_response").offset, clean.find("auth_response").length) == (42, 20)
    assert node.find("auth_response").value != REDACTED  # the original is untouched
    masked = redact_bytes(node, RESPONSE_41)
    assert masked[38:58] == b"*" * 20  # payload index = offset - 4
    assert masked[:38] == RESPONSE_41[:38] and masked[58:] == RESPONSE_41[58:]


# ---------------------------------------------------------------------------- round trips
names = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=20)


@given(st.integers(0, 2**40), st.integers(0, 2**40), st.integers(0, 0xFFFF),
       st.integers(0, 0xFFFF), st.text(max_size=40))
def test_ok_roundtrip(affected: int, insert_id: int, status: int, warnings: int,
                      info: str) -> None:
    status &= ~StatusFlag.SERVER_SESSION_STATE_CHANGED
    v = hs.OkPacket(affected, insert_id, status, warnings, info)
    payload = hs.encode_ok(v)
    assert decode(hs.decode_ok, payload)[0] == v


@given(st.integers(1, 0xFFFE), st.text(max_size=60),
       st.text(st.sampled_from("ABCHY0123456789"), min_size=5, max_size=5))
def test_err_roundtrip(code: int, msg: str, state: str) -> None:
    v = hs.ErrPacket(code, msg, state)
    assert decode(hs.decode_err, hs.encode_err(v))[0] == v


@given(names, st.binary(max_size=300), st.one_of(st.none(), names), names,
       st.lists(st.tuples(names, names), max_size=4))
def test_handshake_response41_roundtrip(user: str, auth: bytes, db: str | None, plugin: str,
                                        attrs: list[tuple[str, str]]) -> None:
    flags = int(C.CLIENT_PROTOCOL_41 | C.CLIENT_SECURE_CONNECTION | C.CLIENT_PLUGIN_AUTH
                | C.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA | C.CLIENT_CONNECT_ATTRS
                | C.CLIENT_LONG_PASSWORD)
    if db is not None:
        flags |= C.CLIENT_CONNECT_WITH_DB
    v = hs.HandshakeResponse41(flags, user, auth, db, plugin, tuple(attrs))
    assert decode(hs.decode_handshake_response41, hs.encode_handshake_response41(v))[0] == v


@given(names, st.integers(0, 2**32 - 1), st.binary(min_size=20, max_size=20), names,
       st.booleans())
def test_handshake_v10_roundtrip(version: str, cid: int, scramble: bytes, plugin: str,
                                 mariadb: bool) -> None:
    scramble = scramble.replace(b"\0", b"\1")
    caps = 0xDFFFFFFF & ~C.CLIENT_LONG_PASSWORD if mariadb else 0xDFFFFFFF
    v = hs.HandshakeV10(version, cid, scramble, caps, 45, 2, plugin, 0x1D if mariadb else 0)
    assert decode(hs.decode_handshake_v10, hs.encode_handshake_v10(v))[0] == v


# ---------------------------------------------------------------------------- real captures
PCAPS = Path("/work/shared/fixtures/zeek__zeek/testing/btest/Traces/mysql")


def tcp_chunks(path: Path) -> list[tuple[bool, bytes]]:
    """(from_client, payload) in capture order for the one TCP connection (scapy, tests only)."""
    from scapy.all import TCP, rdpcap  # type: ignore[attr-defined]

    out: list[tuple[bool, bytes]] = []
    client_port = None
    seen: set[tuple[int, int]] = set()
    for p in rdpcap(str(path)):
        if TCP not in p:
            continue
        t = p[TCP]
        if t.flags & 0x02 and not t.flags & 0x10:
            client_port = t.sport
        data = bytes(t.payload)
        if data and (t.sport, t.seq) not in seen:
            seen.add((t.sport, t.seq))
            out.append((t.sport == client_port, data))
    return out


@pytest.mark.parametrize(("name", "kinds"), [
    ("caching_sha2_password-after-auth-switch.pcapng",
     ["handshake_v10", "handshake_response41", "auth_switch_request", "auth_switch_response",
      "auth_more_data", "ok", "com_query", "column_count", "column_definition41", "text_row",
      "ok"]),
    ("mysql8-navicat-login-failed.pcap",
     ["handshake_v10", "handshake_response41", "auth_switch_request", "auth_switch_response",
      "auth_more_data", "auth_switch_response", "err"]),
])
def test_real_capture_handshakes(name: str, kinds: list[str]) -> None:
    chunks = tcp_chunks(PCAPS / name)
    s = Session()
    got: list[object] = []
    for from_client, data in chunks:
        s.receive_data(data, Peer.CLIENT if from_client else Peer.SERVER)
        got.extend(s.events())
    pk = [e for e in got if isinstance(e, PacketDecoded)]
    assert [e.kind for e in pk[: len(kinds)]] == kinds
    assert not [e for e in got if isinstance(e, DecodeError | SequenceMismatch)]
    for e in pk:
        assert e.node is not None and check_tiling(e.node) == []
    # framing accounts for every byte of each direction
    for peer, flag in ((Peer.CLIENT, True), (Peer.SERVER, False)):
        total = sum(len(d) for c, d in chunks if c == flag)
        assert sum(e.wire_length for e in pk if e.direction == peer) == total
    greeting = pk[0].value
    assert isinstance(greeting, hs.HandshakeV10) and greeting.server_version.startswith("8.0.")
    # the decoded greeting re-encodes to the server's exact bytes
    assert hs.encode_handshake_v10(greeting) == chunks[0][1][4:]
