"""The greeting the mock master sends: the HandshakeV10 a real MariaDB or MySQL server of the
served version would send (capabilities, character set, version string, auth plugin)."""

from __future__ import annotations

from binlogscope.wire.constants import CapabilityFlag, MariaDbCapability, StatusFlag
from binlogscope.wire.handshake import HandshakeV10

CAP = CapabilityFlag
# what a real MariaDB 10.11 greeting advertises (compression left out: not spoken here)
_MARIADB_CAPS = 0x81FFF7FE & ~int(CAP.CLIENT_COMPRESS)
_MYSQL_CAPS = (0xFFFFFFFF & ~int(CAP.CLIENT_COMPRESS) & ~int(CAP.CLIENT_SSL)
               & ~(1 << 26)  # CLIENT_ZSTD_COMPRESSION_ALGORITHM
               & ~(1 << 25)  # CLIENT_OPTIONAL_RESULTSET_METADATA
               & ~(1 << 27)  # CLIENT_QUERY_ATTRIBUTES
               & ~(1 << 28)  # MULTI_FACTOR_AUTHENTICATION
               & ~(1 << 29) & ~(1 << 30))  # 1 << 31 CLIENT_REMEMBER_OPTIONS: as MySQL 8
#: CLIENT_SSL_VERIFY_SERVER_CERT: MySQL 8 offers it with TLS (captures 8.0.21-9.0)
_MYSQL_TLS_CAPS = int(CAP.CLIENT_SSL) | (1 << 30)
_MARIADB_EXT = int(MariaDbCapability.MARIADB_CLIENT_PROGRESS
                   | MariaDbCapability.MARIADB_CLIENT_STMT_BULK_OPERATIONS
                   | MariaDbCapability.MARIADB_CLIENT_EXTENDED_METADATA  # 0x1d as 10.11 says
                   | MariaDbCapability.MARIADB_CLIENT_CACHE_METADATA)


def greeting_version(flavor: str, version: str) -> str:
    """The version string of the greeting: MariaDB 10+ prefixes ``5.5.5-`` (old clients
    compare the major version)."""
    if flavor == "mariadb" and not version.startswith("5.5.5-") \
            and version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 10:
        return "5.5.5-" + version
    return version


def greeting_charset(flavor: str, version: str) -> int:
    """The greeting's character set: utf8mb4_general_ci (45) as MariaDB's; MySQL 8's
    utf8mb4_0900_ai_ci (255; captures 8.0.21-9.0), latin1 (8) before 8.0."""
    if flavor == "mariadb":
        return 45
    return 255 if version.split(".")[0].isdigit() and int(version.split(".")[0]) >= 8 else 8


def handshake_v10(flavor: str, version: str, connection_id: int, nonce: bytes, *, tls: bool,
                  auth_plugin: str) -> HandshakeV10:
    """The greeting of a ``flavor`` server at ``version`` (as :func:`greeting_version`
    gives it), with TLS offered or not."""
    caps = _MARIADB_CAPS if flavor == "mariadb" else _MYSQL_CAPS
    tls_caps = int(CAP.CLIENT_SSL) if flavor == "mariadb" else _MYSQL_TLS_CAPS
    caps = caps | tls_caps if tls else caps & ~tls_caps
    return HandshakeV10(version, connection_id, nonce, caps, greeting_charset(flavor, version),
                        int(StatusFlag.SERVER_STATUS_AUTOCOMMIT), auth_plugin,
                        _MARIADB_EXT if flavor == "mariadb" else 0)


__all__ = ["greeting_charset", "greeting_version", "handshake_v10"]
