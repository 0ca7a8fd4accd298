"""Type stub of the native kernel (``_kernel.c``); load it only through ``binlogscope._native``."""

from typing import Any

class ImageReader:
    def __init__(self, specs: tuple[tuple[Any, ...], ...], labels: tuple[str, ...]) -> None: ...
    def __call__(self, b: bytes, p: int, /) -> tuple[dict[str, Any], int]: ...

def decode_rows(data: bytes, kind: int, reader_b: ImageReader, reader_a: ImageReader | None,
                start: int = 0, end: int = -1, /) -> list[dict[str, Any]]: ...
def count_rows(data: bytes, kind: int, reader_b: ImageReader, reader_a: ImageReader | None,
               start: int = 0, end: int = -1, /) -> int: ...
def rows_json(data: bytes, kind: int, reader_b: ImageReader, reader_a: ImageReader | None,
              start: int = 0, end: int = -1, /) -> bytes | None: ...

def image_buffers(refs: list[Any], value_text: Any, json_text: Any, /
                  ) -> tuple[Any, ...] | None: ...

def pk_buffers(rows: list[Any], after_slot: int, before_slot: int, value_text: Any, /
               ) -> tuple[Any, ...] | None: ...

def image_positions(data: bytes, kind: int, reader_b: ImageReader, reader_a: ImageReader | None,
                    start: int = 0, end: int = -1, /) -> list[int]: ...

def columns(rows: list[Any], wanted: tuple[int, ...], /) -> list[list[Any]]: ...

def column_buffers(values: list[Any], kind: int, /
                   ) -> tuple[int, bytes | None, bytes, bytes | None] | None: ...

class EventLines:
    gtid: str | None
    crc: int
    sink: Any
    clock: Any
    tables: dict[int, tuple[Any, ...]] | None
    ctx_tables: dict[int, Any] | None
    packet: int
    values: int
    at: int
    semi: tuple[bytes, ...] | None
    texts: tuple[bytes, ...] | None
    printable: bytes | None
    def __init__(self, template: tuple[tuple[bytes, int] | tuple[bytes, int, int], ...], end: bytes,
                 names: tuple[bytes | None, ...], bodies: bytes) -> None: ...
    def __call__(self, buf: bytes, pos: int, base: int, /
                 ) -> tuple[int, int, str | None, int | None, str | None] | None: ...
    def add(self, line: bytes, /) -> None: ...
    def take(self) -> bytes: ...
    def flush(self) -> None: ...
    def layouts(self, bodies: bytes, /) -> None: ...
    @staticmethod
    def crc32(data: bytes, /) -> int: ...
    @staticmethod
    def text_plain(data: bytes, /) -> bool: ...

class IndexRows:
    gtid: str | None
    state: Any
    crc: int
    tables: dict[int, tuple[Any, ...]] | None
    ctx_tables: dict[int, Any] | None
    packet: int
    trx: int
    at: int
    frame: int
    time: float
    def __init__(self) -> None: ...
    def __call__(self, buf: bytes, pos: int, base: int, /
                 ) -> tuple[int, int, str | None, int | None, None] | None: ...
    def take(self) -> tuple[int, tuple[bytes, ...], bytes, list[tuple[Any, ...]],
                            list[str | None], Any]: ...
    def layouts(self, bodies: bytes, /) -> None: ...

PLAN_VERSION: int
