"""JSON text without the dict: the exact output of ``json.dumps(obj, ensure_ascii=False)``.

The ``--json`` printers build one dict per packet (:func:`binlogscope.render.packets.event_json`)
and hand it to :mod:`json`; for a binlog event that is about 25 keys, and the encoder's cost per
key dominates a large capture's output time. The helpers here write the same text piece by
piece (f-strings for the fixed keys, the C string escaper for strings) and fall back to the
encoder itself for any value that is not a plain ``None``/``bool``/``int``/``float``/``str``, so
the text is byte for byte what ``json.dumps(..., ensure_ascii=False)`` gives for the dict.

:func:`c_packet_line` is the same text for a whole decoded packet, written by the optional C
module ``_cjson`` (built with the package; off with ``BINLOGSCOPE_PURE_PYTHON``). It declines
(None) whatever is not an ordinary packet, and the Python writer - the definition - runs.
"""

from __future__ import annotations

import json
import json.encoder
import os
from collections.abc import Callable
from typing import Any

from binlogscope.wire.node import json_value

#: the encoder the ``--json`` printers use (``ensure_ascii=False``, default separators)
dumps: Callable[[Any], str] = json.JSONEncoder(ensure_ascii=False).encode
#: a JSON string literal, quotes included (what the encoder uses for ``ensure_ascii=False``)
string: Callable[[str], str] = json.encoder.encode_basestring  # type: ignore[attr-defined]

_INF = float("inf")


def scalar(v: Any) -> str:
    """``dumps(v)`` (any value; the plain scalar types without the encoder)."""
    t = type(v)
    if t is str:
        return string(v)
    if t is int:
        return int.__repr__(v)
    if v is None:
        return "null"
    if v is True:
        return "true"
    if v is False:
        return "false"
    if t is float and -_INF < v < _INF:
        return float.__repr__(v)
    return dumps(v)


def value(v: Any) -> str:
    """``dumps(json_value(v))``: a decoded value (bytes as hex, enums by name, ...)."""
    t = type(v)
    if t is str:
        return string(v)
    if t is int:
        return int.__repr__(v)
    if v is None:
        return "null"
    return dumps(json_value(v))


def image(img: Any) -> str:
    """``dumps({k: json_value(v) for k, v in img.items()})`` (None: ``null``): a row image."""
    if img is None:
        return "null"
    keys = tuple(img)
    fmt = _image_formats.get(keys)
    if fmt is None:
        if not all(type(k) is str for k in keys):  # the encoder's own rules for other keys
            return dumps({k: json_value(v) for k, v in img.items()})
        if len(_image_formats) >= _MAX_IMAGE_FORMATS:
            _image_formats.clear()
        fmt = _image_formats[keys] = _image_format(keys)
    return fmt(*img.values())


#: row image writers by column names (one per table layout seen)
_image_formats: dict[tuple[str, ...], Callable[..., str]] = {}
_MAX_IMAGE_FORMATS = 4096


def _image_format(keys: tuple[str, ...]) -> Callable[..., str]:
    """A function of the image's values (in ``keys`` order) returning :func:`image`'s text.

    Generated, so each column costs one type test and one conversion: the keys' JSON text is
    baked in, a ``str`` value goes through the C escaper, an ``int`` through ``int.__repr__``,
    anything else through :func:`value`.
    """
    if not keys:
        return lambda: "{}"
    env: dict[str, Any] = {"_s": string, "_i": int.__repr__, "_v": value}
    args = []
    parts = []
    for i, k in enumerate(keys):
        env[f"_k{i}"] = (", " if i else "") + string(k) + ": "  # the key's JSON text
        a = f"a{i}"
        args.append(a)
        parts.append(f"{{_k{i}}}{{_s({a}) if type({a}) is str else _i({a}) if type({a}) is int "
                     f"else _v({a})}}")
    exec(f"def fmt({', '.join(args)}):\n    return f'{{{{{''.join(parts)}}}}}'\n", env)
    fmt: Callable[..., str] = env["fmt"]
    return fmt


def rows(rs: Any) -> str:
    """``dumps(summary.rows_json(body))`` for ``rs = body.rows`` (None: ``null``)."""
    if rs is None:
        return "null"
    out = []
    for row in rs:
        if isinstance(row, dict):
            out.append(f'{{"before": {image(row.get("before"))}, '
                       f'"after": {image(row.get("after"))}}}')
        else:
            out.append('{"before": null, "after": null}')
    return "[" + ", ".join(out) + "]"


#: packet_line(head, frame, timestamp, ev, type_names) -> str | None, see c_packet_line
PacketLine = Callable[[str, Any, Any, Any, dict[int, str]], "str | None"]
_c_line: PacketLine | None = None
_c_loaded = False


def c_packet_line() -> PacketLine | None:
    """The C writer of a packet's ``--json`` line, or None (not built, or turned off).

    ``packet_line(head, frame, timestamp, ev, type_names)``: for the
    :class:`~binlogscope.events.PacketDecoded` ``ev`` of a capture item, the text of
    ``binlogscope.cli_pcap.JsonLines.line`` (``head``: the flow's '{"flow": ..., "frame": '
    prefix; ``type_names``: event type code -> its JSON string, filled by the Python writer),
    or None when the Python writer must do it. Row values other than str/int/None go through
    :func:`value`, so they are written by the same code either way.
    """
    global _c_line, _c_loaded
    if not _c_loaded:
        _c_loaded = True
        if not os.environ.get("BINLOGSCOPE_PURE_PYTHON"):
            try:
                from binlogscope.render import _cjson  # type: ignore[attr-defined]
            except ImportError:
                _cjson = None
            if _cjson is not None:
                from binlogscope.drivers.pcap import CaptureItem
                from binlogscope.events import PacketDecoded, Peer
                from binlogscope.wire.binlog.decoded import DecodedEvent
                from binlogscope.wire.binlog.header import EventHeader

                _cjson.configure(value, scalar, image, Peer.SERVER, Peer.CLIENT, PacketDecoded,
                                 DecodedEvent, EventHeader, CaptureItem)
                _c_line = _cjson.packet_line
                global _c_lines
                _c_lines = _cjson.packet_lines
    return _c_line


#: packet_lines(items, i, heads, type_names, out) -> index, see c_packet_lines
PacketLines = Callable[[list[Any], int, dict[Any, str], dict[int, str], list[str]], int]
_c_lines: PacketLines | None = None


def c_packet_lines() -> PacketLines | None:
    """:func:`c_packet_line` over a list of capture items at once, or None.

    ``packet_lines(items, i, heads, type_names, out)`` appends to ``out`` the line of each of
    ``items[i:]`` in turn while it can (a ``CaptureItem`` of kind "event" holding a
    ``PacketDecoded`` whose flow's head is in ``heads``, and a packet the C writer writes) and
    returns the index of the first item it did not write: the caller writes that one its own
    way (filling ``heads``/``type_names``) and may call again after it.
    """
    c_packet_line()
    return _c_lines


__all__ = ["PacketLine", "PacketLines", "c_packet_line", "c_packet_lines", "dumps", "image",
           "rows", "scalar", "string", "value"]
