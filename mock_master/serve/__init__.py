"""Serving: the listening server, its client connections and what sits below the protocol.

- ``server.py`` - :class:`MockMaster` (listening, lifecycle, restart, the shared facts a client
  asks about) and :class:`ThreadedMockMaster` (the same in a thread, for tests);
- ``connection.py`` - one client: handshake, authentication (mysql_native_password,
  caching_sha2_password with TLS or RSA), commands and queries; a dump is handed to
  :mod:`mock_master.dump`;
- ``greeting.py`` - the HandshakeV10 a real server of the served flavor and version sends
  (capabilities, character set, version string);
- ``netio.py`` - the socket, TLS, compression and max_allowed_packet of a connection;
  ``compression.py`` - the compressed protocol's framing (sans-IO);
- ``prepared.py`` - COM_STMT_* (prepared statements answered like COM_QUERY);
- ``runlog.py`` - what the run log records per client and per run (``--log``);
- ``host.py`` - the protocols a connection sees the server through (and prepared statements
  their connection), so no module here imports the server back.
"""
