"""The errors a dump ends with: :class:`StartError` carries the ERR packet's code and message
(ER_MASTER_FATAL_ERROR_READING_BINLOG, 1236, unless another code is given)."""

from __future__ import annotations

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


class StartError(Exception):
    """The dump cannot start: the ERR packet's code and message."""

    def __init__(self, message: str, code: int = ER_MASTER_FATAL_ERROR_READING_BINLOG) -> None:
        super().__init__(message)
        self.code = code


def no_checksum_text(flavor: str, version: tuple[int, int, int]) -> str:
    """send_format_description_event's text for a client that never set the checksum
    variable (MySQL 8.0.26 renamed master/slave to source/replica in it)."""
    if flavor == "mysql" and version >= (8, 0, 26):
        return ("Replica can not handle replication events with the checksum that source is "
                "configured to log")
    return ("Slave can not handle replication events with the checksum that master is "
            "configured to log")
