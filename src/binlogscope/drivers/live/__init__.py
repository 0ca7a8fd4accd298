"""The live replica (``binlogscope live``, Canal's "MockSlave" way).

``replica.py`` is the loop (``consume.py`` its consumer side: batches handed on and acked,
the ``--state`` commits); ``connect.py`` the socket, TLS, handshake and authentication (the
answers in ``auth.py``), ``dialog.py`` and ``setup.py`` the setup queries, registration and the
dump command (each with its "why"), ``stream.py`` the binlog stream into the bounded store
(``lines.py``: its events' ``live --json`` lines by the native kernel),
``items.py`` its settings and items, ``output.py`` ``--out`` together with ``--state``, and
``options.py`` the option files, environment and password prompt.
"""
