"""The differential harness (``mock-master diff``): one client session run against a real server
and against the mock master serving copies of its binlogs, the packets compared field by field.

- ``run.py`` - the command line and the two runs; ``capture.py`` - the recording TCP relay;
- ``compare.py`` - the comparison (decoded with binlogscope's session) and its report;
- ``server.py`` - a throw-away MariaDB for ``--start-mariadb``.

See docs/differential.md.
"""
