"""DecodeContext: the only state a binlog decoder needs (as in go-mysql's BinlogParser).

It holds what the last FORMAT_DESCRIPTION_EVENT said (checksum algorithm, post-header lengths,
server version and flavour) and the TABLE_MAP cache. Row events cannot be decoded without the
TABLE_MAP that precedes them; table ids are not stable across rotations and restarts, so the
cache is cleared on ROTATE and FORMAT_DESCRIPTION.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from binlogscope.wire.binlog.types import ChecksumAlg

#: post-header lengths used before any FORMAT_DESCRIPTION is seen (MySQL 5.6+/8.0 values).
#: Index ``type_code - 1``.  Only used to decode a stream whose FDE is missing.
DEFAULT_POST_HEADER_LEN: tuple[int, ...] = (
    56, 13, 0, 8, 0, 18, 0, 4, 4, 4, 4, 18, 0, 0, 95, 0, 4, 26, 8, 0, 0, 0, 8, 8, 8, 2, 0, 0, 0,
    10, 10, 10, 42, 42, 0, 18, 52, 0, 10, 0, 0, 42,
)


@dataclass(slots=True)
class ColumnInfo:
    """One column of a TABLE_MAP: type, metadata and the optional metadata that names it."""

    index: int
    type: int
    meta: int = 0
    nullable: bool = True
    name: str | None = None
    unsigned: bool = False
    charset: int | None = None
    enum_values: list[str] | None = None
    set_values: list[str] | None = None
    geometry_type: int | None = None
    visible: bool = True
    vector_dimensionality: int | None = None
    real_type: int | None = None  # for STRING columns holding ENUM/SET
    #: MariaDB hi-res TIME/DATETIME/TIMESTAMP decimals (mysql56_temporal_format=OFF)
    hires_dec: int = 0
    #: where ``hires_dec`` came from: "" (not known yet), "CREATE TABLE" or "row bytes"
    hires_source: str = ""
    #: prefix length of this column in PRIMARY_KEY_WITH_PREFIX metadata (0: whole column)
    key_prefix: int | None = None

    @property
    def label(self) -> str:
        """Key used in row dicts: the column name, else ``@1``, ``@2`` (mysqlbinlog style)."""
        return self.name if self.name is not None else f"@{self.index + 1}"


@dataclass(slots=True)
class TableMap:
    """A decoded TABLE_MAP_EVENT as needed by row decoding."""

    table_id: int
    schema: str
    table: str
    columns: list[ColumnInfo]
    flags: int = 0
    primary_key: list[int] = field(default_factory=list)
    #: optional-metadata TLVs binlogscope does not interpret: (type, raw bytes)
    unknown_metadata: list[tuple[int, bytes]] = field(default_factory=list)
    #: the row image plans (``_rowcode.ImagePlan``) per columns-present bitmap, made by
    #: ``rows.py`` when first needed and cached here
    compiled: Any = None
    #: the TABLE_MAP body bytes this map was decoded from (an identical map is reused as is)
    raw: bytes = b""
    #: MariaDB hi-res temporal columns: None = not checked yet, True = decimals inferred
    hires_resolved: bool | None = None
    #: record mode: the body nodes decoded from ``raw`` and the absolute offset they start at
    #: (an identical TABLE_MAP later reuses them, shifted)
    nodes: tuple[Any, ...] | None = None
    nodes_offset: int = 0


@dataclass(slots=True)
class DecodeContext:
    """State carried from event to event while decoding one binlog stream."""

    checksum_alg: int = ChecksumAlg.BINLOG_CHECKSUM_ALG_UNDEF
    #: absolute offset of the FORMAT_DESCRIPTION the checksum setting came from (None: guessed)
    checksum_source: int | None = None
    post_header_len: tuple[int, ...] = DEFAULT_POST_HEADER_LEN
    header_len: int = 19
    binlog_version: int = 4
    server_version: str = ""
    fde_seen: bool = False
    tables: dict[int, TableMap] = field(default_factory=dict)
    #: verify CRC32 checksums (turn off only for speed measurements)
    verify_checksums: bool = True
    #: decode row images (False: keep rows as raw bytes, for header-only walks)
    decode_rows: bool = True
    #: current binlog file name (from ROTATE), for positions
    log_file: str = ""
    #: wire type code -> modern type code, for pre-GA 5.1/5.2 servers that numbered events
    #: differently (see :func:`pre_ga_type_map`); empty for every released server
    type_map: dict[int, int] = field(default_factory=dict)
    #: temporal columns declared by CREATE TABLE statements seen so far, per (schema, table)
    #: lower-cased: the decimals of MariaDB hi-res columns (see ``_ddl.py``)
    declared: dict[tuple[str, str], list[tuple[str, str | None, int]]] = field(
        default_factory=dict)
    #: called with every TABLE_MAP decoded, before the row events after it are decoded: a
    #: driver that can learn what the map lacks (the live replica asks information_schema
    #: for the column names of a map written without them) completes it here. It must do
    #: the same for the same map bytes (an identical map reuses the row plans)
    table_map_hook: Any = None

    @property
    def is_mariadb(self) -> bool:
        return "mariadb" in self.server_version.lower()

    @property
    def has_checksum(self) -> bool:
        return self.checksum_alg == ChecksumAlg.BINLOG_CHECKSUM_ALG_CRC32

    def post_header(self, type_code: int) -> int | None:
        """Post-header length for ``type_code`` from the FDE, None if the FDE does not list it."""
        i = type_code - 1
        if 0 <= i < len(self.post_header_len):
            return self.post_header_len[i]
        return None

    def reset_tables(self) -> None:
        self.tables.clear()


_VERSION_RE = re.compile(r"(\d+)\.(\d+)\.(\d+)")


def version_tuple(server_version: str) -> tuple[int, int, int]:
    m = _VERSION_RE.search(server_version)
    if not m:
        return (0, 0, 0)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3)))


def fde_has_checksum_alg(server_version: str) -> bool:
    """Servers from MySQL 5.6.1 / MariaDB 5.3 on end the FDE with the checksum algorithm byte."""
    v = version_tuple(server_version)
    if "mariadb" in server_version.lower():
        return v >= (5, 3, 0)
    return v >= (5, 6, 1)


def pre_ga_type_map(server_version: str) -> dict[int, int]:
    """Event renumbering for the 5.1/5.2 "-a_drop5p/-a_drop6p" development trees.

    Those trees had TABLE_MAP at 16, the row events at 17-19 and XID/BEGIN_LOAD_QUERY/
    EXECUTE_LOAD_QUERY at 20-22 (the MySQL server remaps them by the same version test when it
    reads such a file). The row events of that era are the pre-GA format (types 20-22 today).
    """
    v = server_version
    if not (len(v) > 12 and v[0] == "5" and v[1] == "." and v[3] == "."
            and v[5:12] == "-a_drop"):
        return {}
    minor, patch, tree = v[2], v[4], v[12]
    if ((minor == "1" and "1" <= patch <= "6" and tree == "5")
            or (minor == "1" and patch == "4" and tree == "6")
            or (minor == "2" and "0" <= patch <= "2" and tree == "6")):
        return {16: 19, 17: 20, 18: 21, 19: 22, 20: 16, 21: 17, 22: 18}
    return {}
