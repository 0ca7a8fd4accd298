"""Answers to the queries replication clients send while they set up, shaped as the real
server's (column definitions included).

- ``queries.py`` - :class:`Answerer`: SET, SELECT @@var / functions, SHOW VARIABLES, SHOW
  MASTER/BINARY LOG STATUS, SHOW BINARY LOGS, binlog_gtid_pos(), the scenario's own answers;
- ``base.py`` - what every answer module shares (:class:`Answer`, :class:`QueryContext`,
  :class:`Variable`, column shapes, errors) and :class:`AnswerHost`, the answerer as the table
  answers see it;
- ``tables.py`` - SHOW CREATE TABLE / COLUMNS / INDEX / TABLES / TABLE STATUS / DATABASES;
  ``info_schema.py`` - SELECTs over information_schema;
- ``mysql_shapes.py`` / ``mysql_fields.py`` - where MySQL 8's column definitions differ from
  MariaDB's (and COM_FIELD_LIST).

The tables come from :mod:`mock_master.schema`.
"""
