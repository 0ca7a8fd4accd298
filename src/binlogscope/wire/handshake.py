"""Connection phase and generic response packets.

HandshakeV10 (server greeting), SSLRequest, HandshakeResponse41/320, AuthSwitchRequest (and the
old-password switch, a lone 0xFE), AuthMoreData (caching_sha2_password's 0x03 fast-auth-ok /
0x04 full-auth), the client's auth data. The OK / ERR / EOF packets that answer commands are in
:mod:`binlogscope.wire.responses` and stay importable from here, as does
``DEFAULT_CAPABILITIES`` (:mod:`binlogscope.wire.constants`).

Each ``decode_x(r, caps)`` reads through a recording :class:`ByteReader`; each ``encode_x``
returns the payload bytes (no packet header: see :func:`binlogscope.wire.framing.encode_packet`).
Secrets (scramble, auth response) keep their bytes in the Node but are marked sensitive (see
:mod:`binlogscope.wire.fields`) and hidden from the dataclasses' ``repr``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from binlogscope.wire.constants import (
    CAPABILITY_DOCS,
    CapabilityFlag,
    MariaDbCapability,
    StatusFlag,
)
from binlogscope.wire.constants import DEFAULT_CAPABILITIES as DEFAULT_CAPABILITIES
from binlogscope.wire.fields import (
    SENSITIVE,
    flag_field,
    lenenc_bytes,
    lenenc_int,
    lenenc_str,
    nul_str,
    u8,
    u16,
    u24,
    u32,
)
from binlogscope.wire.reader import ByteReader
from binlogscope.wire.responses import EofPacket as EofPacket
from binlogscope.wire.responses import ErrPacket as ErrPacket
from binlogscope.wire.responses import OkPacket as OkPacket
from binlogscope.wire.responses import SessionStateChange as SessionStateChange
from binlogscope.wire.responses import decode_eof as decode_eof
from binlogscope.wire.responses import decode_err as decode_err
from binlogscope.wire.responses import decode_ok as decode_ok
from binlogscope.wire.responses import encode_eof as encode_eof
from binlogscope.wire.responses import encode_err as encode_err
from binlogscope.wire.responses import encode_ok as encode_ok
from binlogscope.wire.responses import is_eof_packet as is_eof_packet

CAP = CapabilityFlag

CHARSETS: dict[int, str] = {
    8: "latin1_swedish_ci", 28: "gbk_chinese_ci", 33: "utf8mb3_general_ci",
    45: "utf8mb4_general_ci", 46: "utf8mb4_bin", 63: "binary", 83: "utf8mb3_bin",
    192: "utf8mb3_unicode_ci", 224: "utf8mb4_unicode_ci", 255: "utf8mb4_0900_ai_ci",
}


def charset_name(code: int) -> str:
    return f"{code} {CHARSETS.get(code, '')}".rstrip()


def _reserved_mariadb_caps(r: ByteReader, caps: int, name: str, size: int, doc: str) -> int:
    """The zero-filled tail of a greeting or client prefix: ``size`` reserved bytes, of which a
    MariaDB peer (CLIENT_MYSQL, bit 0, clear) uses the last 4 for its extended capabilities."""
    if caps & CAP.CLIENT_LONG_PASSWORD:
        r.raw(name, size, doc="reserved, all 0x00")
        return 0
    r.raw(name, size - 4, doc="reserved, all 0x00")
    return flag_field(r, "mariadb_capabilities", 4, MariaDbCapability, doc=doc)


# ============================================================================ HandshakeV10
@dataclass(frozen=True, slots=True)
class HandshakeV10:
    """The server's greeting, first packet of every connection (sequence id 0)."""

    server_version: str
    connection_id: int
    auth_plugin_data: bytes = field(repr=False)  # the scramble (nonce), usually 20 bytes
    capability_flags: int
    character_set: int = 255
    status_flags: int = int(StatusFlag.SERVER_STATUS_AUTOCOMMIT)
    auth_plugin_name: str | None = "mysql_native_password"
    mariadb_capabilities: int = 0
    protocol_version: int = 10

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()


def decode_handshake_v10(r: ByteReader, caps: int = 0) -> HandshakeV10:
    """Initial handshake packet, protocol version 10 (MySQL >= 3.21 / every MariaDB)."""
    pv = r.u8("protocol_version", doc="handshake protocol version: always 10 since MySQL 3.21")
    if pv != 10:
        raise ValueError(f"protocol_version {pv}: only HandshakeV10 is decoded")
    sv = r.nul_str("server_version",
                   doc="human-readable server version; MariaDB 10.x/11.x prefix it with "
                   "'5.5.5-' so old clients accept it")
    cid = r.u32("thread_id", doc="connection id (the Id column of SHOW PROCESSLIST)")
    p1 = r.raw("auth_plugin_data_part_1", 8,
               doc=SENSITIVE + "first 8 bytes of the scramble (random nonce) the client "
               "hashes the password with")
    r.u8("filler", doc="0x00: marks the end of the 8-byte scramble part")
    cap1 = flag_field(r, "capability_flags_1", 2, CapabilityFlag, docs=CAPABILITY_DOCS,
                      doc="lower 16 bits of the server's capability flags")
    if r.at_end():  # very old servers stop here
        return HandshakeV10(sv, cid, p1, cap1, 0, 0, None, 0, pv)
    cs = r.u8("character_set", doc="server's default collation id",
              display=charset_name(r.peek_u8() or 0))
    st = flag_field(r, "status_flags", 2, StatusFlag, doc="server status flags (autocommit...)")
    cap2 = flag_field(r, "capability_flags_2", 2, CapabilityFlag, docs=CAPABILITY_DOCS,
                      shift=16, doc="upper 16 bits of the server's capability flags")
    caps_all = cap1 | cap2 << 16
    if caps_all & CAP.CLIENT_PLUGIN_AUTH:
        apdl = r.u8("auth_plugin_data_len",
                    doc="length of the whole scramble incl. its trailing NUL (21)")
    else:
        apdl = 0
        r.u8("filler_2", doc="0x00: no CLIENT_PLUGIN_AUTH, so no scramble length")
    mcaps = _reserved_mariadb_caps(r, caps_all, "reserved", 10,
                                   "MariaDB extended capabilities (bits 32-63), sent because "
                                   "CLIENT_MYSQL (bit 0) is clear")
    data = p1
    if caps_all & CAP.CLIENT_SECURE_CONNECTION:
        n = max(13, apdl - 8)
        n = min(n, r.remaining)
        p2 = r.raw("auth_plugin_data_part_2", n,
                   doc=SENSITIVE + "rest of the scramble (12 bytes + a NUL terminator)")
        data = p1 + p2
        if data.endswith(b"\0"):
            data = data[:-1]
    name: str | None = None
    if caps_all & CAP.CLIENT_PLUGIN_AUTH and not r.at_end():
        if b"\0" in r.peek(r.remaining):
            name = r.nul_str("auth_plugin_name",
                             doc="authentication method the scramble is meant for")
        else:  # MySQL 5.5.7-5.5.9 forgot the NUL
            name = r.rest_str("auth_plugin_name",
                              doc="authentication method (sent without its NUL terminator)")
    return HandshakeV10(sv, cid, data, caps_all, cs, st, name, mcaps, pv)


def encode_handshake_v10(v: HandshakeV10) -> bytes:
    caps = v.capability_flags
    data = v.auth_plugin_data
    out = [u8(v.protocol_version), nul_str(v.server_version), u32(v.connection_id),
           data[:8].ljust(8, b"\0"), b"\0", u16(caps), u8(v.character_set), u16(v.status_flags),
           u16(caps >> 16)]
    out.append(u8(len(data) + 1 if caps & CAP.CLIENT_PLUGIN_AUTH else 0))
    if caps & CAP.CLIENT_LONG_PASSWORD:
        out.append(b"\0" * 10)
    else:
        out.append(b"\0" * 6 + u32(v.mariadb_capabilities))
    if caps & CAP.CLIENT_SECURE_CONNECTION:
        out.append(data[8:].ljust(12, b"\0") + b"\0")
    if caps & CAP.CLIENT_PLUGIN_AUTH:
        out.append(nul_str(v.auth_plugin_name or ""))
    return b"".join(out)


# ============================================================================ SSLRequest
@dataclass(frozen=True, slots=True)
class SslRequest:
    """A truncated HandshakeResponse41 with CLIENT_SSL: the client starts TLS right after it."""

    capability_flags: int
    max_packet_size: int = 1 << 24
    character_set: int = 255
    mariadb_capabilities: int = 0


def _client_prefix(r: ByteReader) -> tuple[int, int, int, int]:
    flags = flag_field(r, "client_flag", 4, CapabilityFlag, docs=CAPABILITY_DOCS,
                       doc="capabilities the client wants (a subset of the server's)")
    mps = r.u32("max_packet_size", doc="largest packet the client will send or accept")
    cs = r.u8("character_set", doc="collation id for the connection",
              display=charset_name(r.peek_u8() or 0))
    mcaps = _reserved_mariadb_caps(r, flags, "filler", 23,
                                   "MariaDB extended client capabilities (bits 32-63)")
    return flags, mps, cs, mcaps


def decode_ssl_request(r: ByteReader, caps: int = 0) -> SslRequest:
    """SSLRequest: 32 bytes; everything after it on this connection is TLS."""
    flags, mps, cs, mcaps = _client_prefix(r)
    return SslRequest(flags, mps, cs, mcaps)


def _encode_client_prefix(flags: int, mps: int, cs: int, mcaps: int) -> bytes:
    tail = b"\0" * 23 if flags & CAP.CLIENT_LONG_PASSWORD else b"\0" * 19 + u32(mcaps)
    return u32(flags) + u32(mps) + u8(cs) + tail


def encode_ssl_request(v: SslRequest) -> bytes:
    return _encode_client_prefix(v.capability_flags | CAP.CLIENT_SSL, v.max_packet_size,
                                 v.character_set, v.mariadb_capabilities)


def is_ssl_request(payload: bytes) -> bool:
    """A 32-byte client packet with CLIENT_SSL in its client_flag."""
    return len(payload) == 32 and bool(int.from_bytes(payload[:4], "little") & CAP.CLIENT_SSL)


# ============================================================================ HandshakeResponse
@dataclass(frozen=True, slots=True)
class HandshakeResponse41:
    """The client's answer to the greeting: user, auth response, schema, plugin, attributes."""

    capability_flags: int
    username: str
    auth_response: bytes = field(default=b"", repr=False)
    database: str | None = None
    client_plugin_name: str | None = None
    connect_attrs: tuple[tuple[str, str], ...] | None = None
    max_packet_size: int = 1 << 24
    character_set: int = 255
    mariadb_capabilities: int = 0
    zstd_compression_level: int | None = None


def decode_handshake_response41(r: ByteReader, caps: int = 0) -> HandshakeResponse41:
    """HandshakeResponse41; fields after the username depend on the packet's own client_flag."""
    flags, mps, cs, mcaps = _client_prefix(r)
    user = r.nul_str("username", doc="login user name")
    if flags & CAP.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
        n = r.lenenc("auth_response_length", doc="length of the auth response (int<lenenc>)")
        auth = r.raw("auth_response", n or 0,
                     doc=SENSITIVE + "password proof computed from the scramble by the auth "
                     "plugin (e.g. SHA1 XOR for mysql_native_password)")
    elif flags & CAP.CLIENT_SECURE_CONNECTION:
        n = r.u8("auth_response_length", doc="length of the auth response (int<1>)")
        auth = r.raw("auth_response", n, doc=SENSITIVE + "password proof from the scramble")
    else:
        auth = r.nul_str("auth_response", doc=SENSITIVE + "old-style password hash, "
                         "NUL-terminated").encode()
    db: str | None = None
    if flags & CAP.CLIENT_CONNECT_WITH_DB and not r.at_end():
        db = r.nul_str("database", doc="initial default schema (like USE db)")
    plugin: str | None = None
    if flags & CAP.CLIENT_PLUGIN_AUTH and not r.at_end():
        if b"\0" in r.peek(r.remaining):
            plugin = r.nul_str("client_plugin_name", doc="auth method used for auth_response")
        else:
            plugin = r.rest_str("client_plugin_name", doc="auth method (no NUL terminator)")
    attrs: tuple[tuple[str, str], ...] | None = None
    if flags & CAP.CLIENT_CONNECT_ATTRS and not r.at_end():
        total = r.lenenc("length_of_all_key_values",
                         doc="byte length of the key/value pairs that follow") or 0
        pairs: list[tuple[str, str]] = []
        r.begin("connect_attrs", doc="connection attributes (performance_schema."
                "session_connect_attrs): client name, version, pid...")
        with r.bounded(total, "connect_attrs"):
            while not r.at_end():
                r.begin("attribute")
                k = r.lenenc_str("key", doc="attribute name") or ""
                val = r.lenenc_str("value", doc="attribute value") or ""
                r.end_group(display=f"{k}={val}")
                pairs.append((k, val))
        r.end_group()
        attrs = tuple(pairs)
    zstd: int | None = None
    if flags & CAP.CLIENT_ZSTD_COMPRESSION_ALGORITHM and not r.at_end():
        zstd = r.u8("zstd_compression_level", doc="zstd level for the compressed protocol")
    return HandshakeResponse41(flags, user, auth, db, plugin, attrs, mps, cs, mcaps, zstd)


def encode_handshake_response41(v: HandshakeResponse41) -> bytes:
    flags = v.capability_flags
    out = [_encode_client_prefix(flags, v.max_packet_size, v.character_set,
                                 v.mariadb_capabilities), nul_str(v.username)]
    if flags & CAP.CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA:
        out.append(lenenc_bytes(v.auth_response))
    elif flags & CAP.CLIENT_SECURE_CONNECTION:
        out.append(u8(len(v.auth_response)) + v.auth_response)
    else:
        out.append(nul_str(v.auth_response))
    if flags & CAP.CLIENT_CONNECT_WITH_DB:
        out.append(nul_str(v.database or ""))
    if flags & CAP.CLIENT_PLUGIN_AUTH:
        out.append(nul_str(v.client_plugin_name or ""))
    if flags & CAP.CLIENT_CONNECT_ATTRS:
        body = b"".join(lenenc_str(k) + lenenc_str(val) for k, val in v.connect_attrs or ())
        out.append(lenenc_int(len(body)) + body)
    if flags & CAP.CLIENT_ZSTD_COMPRESSION_ALGORITHM:
        out.append(u8(v.zstd_compression_level or 3))
    return b"".join(out)


@dataclass(frozen=True, slots=True)
class HandshakeResponse320:
    """Pre-4.1 handshake response (no CLIENT_PROTOCOL_41)."""

    capability_flags: int
    max_packet_size: int
    username: str
    auth_response: bytes = field(repr=False)
    database: str | None = None


def decode_handshake_response320(r: ByteReader, caps: int = 0) -> HandshakeResponse320:
    flags = flag_field(r, "client_flag", 2, CapabilityFlag, docs=CAPABILITY_DOCS,
                       doc="client capabilities (16-bit, pre-4.1 protocol)")
    mps = r.u24("max_packet_size", doc="largest packet the client will send or accept")
    user = r.nul_str("username", doc="login user name")
    db: str | None = None
    if flags & CAP.CLIENT_CONNECT_WITH_DB:
        auth = r.nul_str("auth_response", doc=SENSITIVE + "old password hash").encode()
        if not r.at_end():
            db = r.nul_str("database", doc="initial default schema")
    else:
        auth = r.rest("auth_response", doc=SENSITIVE + "old password hash")
    return HandshakeResponse320(flags, mps, user, auth, db)


def encode_handshake_response320(v: HandshakeResponse320) -> bytes:
    out = u16(v.capability_flags) + u24(v.max_packet_size) + nul_str(v.username)
    if v.capability_flags & CAP.CLIENT_CONNECT_WITH_DB:
        return out + nul_str(v.auth_response) + nul_str(v.database or "")
    return out + v.auth_response


# ============================================================================ auth exchange
@dataclass(frozen=True, slots=True)
class AuthSwitchRequest:
    """0xFE: the server asks the client to authenticate again with another plugin.

    ``plugin_name`` None is the old-password (323) switch: a payload that is just 0xFE.
    """

    plugin_name: str | None
    plugin_provided_data: bytes = field(default=b"", repr=False)

    @property
    def is_old_password(self) -> bool:
        return self.plugin_name is None


def decode_auth_switch_request(r: ByteReader, caps: int = 0) -> AuthSwitchRequest:
    tag = r.u8("status_tag", doc="0xFE: authentication method switch request")
    if tag != 0xFE:
        raise ValueError(f"status_tag 0x{tag:02x}, expected 0xFE")
    if r.at_end():
        if r.record:
            r.begin("old_auth_switch")  # keeps the tree uniform for the lone 0xFE
            r.end_group()
        return AuthSwitchRequest(None)
    name = r.nul_str("plugin_name", doc="auth plugin the client must use now")
    data = r.rest("plugin_provided_data",
                  doc=SENSITIVE + "a new scramble for that plugin (often with a trailing NUL)")
    return AuthSwitchRequest(name, data)


def encode_auth_switch_request(v: AuthSwitchRequest) -> bytes:
    if v.plugin_name is None:
        return b"\xfe"
    return b"\xfe" + nul_str(v.plugin_name) + v.plugin_provided_data


#: caching_sha2_password AuthMoreData values
FAST_AUTH_SUCCESS = 0x03
PERFORM_FULL_AUTHENTICATION = 0x04


@dataclass(frozen=True, slots=True)
class AuthMoreData:
    """0x01: extra data from the auth plugin (caching_sha2 status byte, an RSA public key...).

    Anything but the two one-byte caching_sha2 statuses is auth material (a key, a plugin's
    challenge or question): kept out of ``repr`` and its Node marked sensitive."""

    data: bytes = field(repr=False)

    @property
    def fast_auth_success(self) -> bool:
        return self.data == bytes((FAST_AUTH_SUCCESS,))

    @property
    def perform_full_authentication(self) -> bool:
        return self.data == bytes((PERFORM_FULL_AUTHENTICATION,))


def decode_auth_more_data(r: ByteReader, caps: int = 0) -> AuthMoreData:
    tag = r.u8("status_tag", doc="0x01: more data for the authentication method follows")
    if tag != 0x01:
        raise ValueError(f"status_tag 0x{tag:02x}, expected 0x01")
    data = r.peek(r.remaining)
    if data == bytes((FAST_AUTH_SUCCESS,)):
        display, doc = "0x03 fast_auth_success", ("caching_sha2_password: the cached hash "
                                                  "matched; an OK packet follows")
    elif data == bytes((PERFORM_FULL_AUTHENTICATION,)):
        display, doc = "0x04 perform_full_authentication", (
            "caching_sha2_password: not cached; the client must send the password over TLS "
            "or RSA-encrypted with the server's public key")
    elif data.startswith(b"-----BEGIN"):
        display, doc = "RSA key (PEM)", "the server's RSA key (PEM) the client encrypts " \
            "the password with (sha256_password, caching_sha2_password without TLS)"
    else:
        display, doc = "", "data for the authentication plugin"
    if len(data) != 1 or data[0] not in (FAST_AUTH_SUCCESS, PERFORM_FULL_AUTHENTICATION):
        doc = SENSITIVE + doc  # auth material: masked on every surface
    r.rest("authentication_method_data", doc=doc, display=display)
    return AuthMoreData(data)


def encode_auth_more_data(v: AuthMoreData) -> bytes:
    return b"\x01" + v.data


@dataclass(frozen=True, slots=True)
class AuthSwitchResponse:
    """Client auth data sent after an AuthSwitchRequest or AuthMoreData (raw plugin bytes)."""

    data: bytes = field(repr=False)


def decode_auth_switch_response(r: ByteReader, caps: int = 0) -> AuthSwitchResponse:
    data = r.peek(r.remaining)
    display = ""
    if data == b"\x02":
        display = "0x02 request public key (caching_sha2_password)"
    elif data == b"\x01":
        display = "0x01 request public key (sha256_password)"
    r.rest("auth_plugin_response", display=display,
           doc=SENSITIVE + "auth data for the plugin: a scramble-based proof, an RSA-encrypted "
           "password, or a cleartext password over TLS")
    return AuthSwitchResponse(data)


def encode_auth_switch_response(v: AuthSwitchResponse) -> bytes:
    return v.data
