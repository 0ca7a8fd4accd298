"""The errors a dump ends with: :class:`StartError` carries the ERR packet's code and message
(ER_MASTER_FATAL_ERROR_READING_BINLOG, 1236, unless another code is given)."""

from __future__ import annotations

ER_MASTER_FATAL_ERROR_READING_BINLOG = 1236


class StartError(Exception):
    """The dump cannot start: the ERR packet's code and message."""

    def __init__(self, message: str, code: int = ER_MASTER_FATAL_ERROR_READING_BINLOG) -> None:
        super().__init__(message)
        self.code = code
