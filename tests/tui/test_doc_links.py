"""The one table of documentation and source links: every entry a well-formed https link to a
known site, every main event and packet type covered, shown under the panes for a field."""

from __future__ import annotations

import re
from urllib.parse import urlsplit

import pytest

from binlogscope.inspector.doc_links import FIELD_LINKS, HOSTS, LINKS, links_for

_GITHUB = re.compile(r"^/(mysql/mysql-server|MariaDB/server)/blob/[0-9.]+/[\w./-]+\.(cc|c|h)$")
_MARIADB = re.compile(r"^/docs/server/reference/clientserver-protocol/replication-protocol/"
                      r"[a-z0-9_-]+$")
_MYSQL = re.compile(r"^/doc/dev/mysql-server/latest/page_protocol_[a-z0-9_]+\.html$")

MAIN_TYPES = ("FORMAT_DESCRIPTION_EVENT", "ROTATE_EVENT", "QUERY_EVENT", "TABLE_MAP_EVENT",
              "WRITE_ROWS_EVENT", "UPDATE_ROWS_EVENT", "DELETE_ROWS_EVENT", "XID_EVENT",
              "GTID_EVENT", "GTID_LOG_EVENT", "HEARTBEAT_LOG_EVENT", "HANDSHAKE_V10",
              "HANDSHAKE_RESPONSE41", "COM_REGISTER_SLAVE", "COM_BINLOG_DUMP",
              "COM_BINLOG_DUMP_GTID", "SEMI_SYNC_ACK")


def _all() -> list[tuple[str, str]]:
    return [(d.title, d.url) for table in (LINKS, FIELD_LINKS) for docs in table.values()
            for d in docs]


@pytest.mark.parametrize(("title", "url"), sorted(set(_all())))
def test_every_link_is_well_formed(title: str, url: str) -> None:
    parts = urlsplit(url)
    assert parts.scheme == "https" and parts.hostname in HOSTS
    assert not parts.query and not parts.fragment and " " not in url
    pattern = {"github.com": _GITHUB, "mariadb.com": _MARIADB, "dev.mysql.com": _MYSQL}
    assert pattern[parts.hostname].match(parts.path), url
    assert title.split(":")[0] in ("MariaDB docs", "MySQL docs", "MySQL source",
                                   "MariaDB source")
    if parts.hostname == "github.com":
        assert title.endswith(parts.path.split("/", 5)[5])  # the title names the file


def test_main_types_have_docs_and_source() -> None:
    for name in MAIN_TYPES:
        docs = LINKS[name]
        assert any("docs" in d.title for d in docs), name
        assert any("source" in d.title for d in docs), name


def test_a_field_adds_its_own_links_first_without_repeats() -> None:
    got = links_for("WRITE_ROWS_EVENT", "table_id")
    assert got[0].url.endswith("/table_map_event")
    assert len({d.url for d in got}) == len(got)
    assert links_for("NO_SUCH_TYPE") == ()


def test_every_event_type_and_packet_kind_has_links() -> None:
    """Issue 31: links on *every* event type (a STOP_EVENT, a TRANSACTION_PAYLOAD_EVENT or a
    MariaDB compressed rows event had none) and every packet kind; each event type names the
    source file that declares or writes it."""
    from binlogscope.wire.binlog.types import EventType
    from binlogscope.wire.packet import KINDS

    for e in EventType:
        docs = links_for(e.name)
        assert docs, e.name
        assert any("source" in d.title for d in docs), e.name
    for kind in KINDS:
        assert links_for(kind.upper()), kind
