"""What the mock master knows of the tables it serves: the source of every answer about them.

- ``sources.py`` - where the knowledge comes from, in precedence: the scenario's DDL
  (``--schema-ddl``), a live server (``--schema-from``), explicit COLUMNS rows, the served
  stream's DDL and TABLE_MAP metadata;
- ``ddl.py`` - CREATE/ALTER/RENAME/DROP applied to the tables; ``sql.py`` - the sqlglot grammar
  and parse fallbacks;
- ``model.py`` - :class:`Table` and the information_schema values MariaDB derives from it;
  ``mysql.py`` - MySQL 8's values for the same tables.
"""
