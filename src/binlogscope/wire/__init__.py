"""The sans-IO wire core: bytes in, typed values and ``Node`` trees out (no sockets, no files).

The client/server protocol: ``framing.py`` (packets), ``handshake.py``, ``auth.py``,
``commands.py``, ``responses.py``, ``results.py``, ``prepared.py`` and ``statements.py``
(COM_STMT_*), ``replication.py`` (the dump stream, semi-sync), ``gtid_sets.py``; the binlog
event format is ``binlog/``. ``reader.py`` and ``node.py`` are the recording reader and the
annotated tree every decoder writes. Encoders live beside their decoders.
"""
