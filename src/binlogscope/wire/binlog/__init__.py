"""Binlog events: where a byte of an event is decoded (and encoded again).

``decode.py`` decodes one event (``header.py``: the 19-byte header and CRC32; ``registry.py``:
type code -> decoder), one module per family (``control_events.py``, ``query_event.py``,
``gtid_events.py``, ``table_map.py``, ``rows.py``, ``load_events.py``, ``payload_events.py``);
row values in ``values*.py`` through the column plans of ``_rowcode.py`` (the one contract the
native kernel interprets too); ``stream.py`` reads a binlog file's bytes, ``coords.py`` places
events, ``resync.py`` finds the next header after damage; ``encode_*.py`` are the inverses.
"""
