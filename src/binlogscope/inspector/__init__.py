"""The inspector model: what the TUI and the CLI show of a source, without any UI.

A source (a binlog file, a live session, a pcap capture) becomes a :class:`RowSource`: it indexes
its rows once (compact columns, no decoded trees) and decodes one row's Node tree on demand
through the one wire decoder (:mod:`binlogscope.inspector.redecode`).

- :mod:`~binlogscope.inspector.source` - rows, details and the source protocols;
- :mod:`~binlogscope.inspector.sources` - the sources: ``binlog_file``, ``packets`` (any stream of
  session events), ``live`` and ``pcap`` (producers for ``packets``);
- :mod:`~binlogscope.inspector.redecode` - one packet or event decoded again with its tree, and
  the decode contexts a stream's packets were read in;
- :mod:`~binlogscope.inspector.packet_text` - what the list says about a packet;
- :mod:`~binlogscope.inspector.view` - the filtered view and the filter language;
- :mod:`~binlogscope.inspector.text_column` - compact storage of one string per row;
- :mod:`~binlogscope.inspector.parquet_export` - the rows in view as a Parquet dataset;
- :mod:`~binlogscope.inspector.pcapng_export` - rows as pcapng (Wireshark), one row's raw bytes;
- :mod:`~binlogscope.inspector.actions` - go to (``g``), search, and the export dispatch;
- :mod:`~binlogscope.inspector.columns` - the list's columns, fitted to the width, saved;
- :mod:`~binlogscope.inspector.links` - cross-links (ACK <-> event and latency, rows -> TABLE_MAP);
- :mod:`~binlogscope.inspector.conversations` - per connection / binlog file statistics;
- :mod:`~binlogscope.inspector.tour` - the guided tour's steps (``demo --tour``);
- :mod:`~binlogscope.inspector.doc_links` - documentation and server source links;
- :mod:`~binlogscope.inspector.clipboard` - the copy fallback in a per-user private file.

This package never imports Textual (``tests/tui/test_inspector_hygiene.py``); ``binlogscope.tui``
holds only the Textual app on top of it.
"""

from __future__ import annotations

from binlogscope.inspector.source import Detail, Row, RowSource, SourceInfo

__all__ = ["Detail", "Row", "RowSource", "SourceInfo"]
