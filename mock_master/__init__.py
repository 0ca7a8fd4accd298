"""Mock master: a scriptable MySQL/MariaDB primary for replication clients (issue 6; not built yet)."""

from __future__ import annotations
