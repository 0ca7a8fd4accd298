"""Annotated plain-text dump of a Node tree: offset | hex | field = value  -- what it means.

Used by the CLI's default output and as teaching text. Reads only the Node tree.

Example::

    # at 4: FORMAT_DESCRIPTION_EVENT (15), 121 bytes
    #   FORMAT_DESCRIPTION: first event of every binlog; ...
           4  a8 e9 5b 65                 header.timestamp = 1700522408  -- seconds since ...
"""

from __future__ import annotations

from collections.abc import Iterator

from binlogscope.wire.node import Node

HEX_PER_LINE = 16
MAX_HEX_LINES = 4


def _hex_lines(data: bytes) -> list[str]:
    lines = []
    for i in range(0, min(len(data), HEX_PER_LINE * MAX_HEX_LINES), HEX_PER_LINE):
        lines.append(data[i : i + HEX_PER_LINE].hex(" "))
    if len(data) > HEX_PER_LINE * MAX_HEX_LINES:
        lines.append(f"... ({len(data)} bytes in all)")
    return lines or [""]


def _value_text(node: Node, limit: int = 120) -> str:
    text = node.text
    text = text.replace("\n", "\\n").replace("\r", "\\r")
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return text


def render_node(node: Node, source: bytes | None = None, *, base: int = 0,
                explain: bool = True) -> Iterator[str]:
    """Lines for one event/packet tree.

    ``source`` holds the bytes the node's offsets point into (``source[offset - base]``); leaf
    values of type bytes are used when it is None.
    """
    title = node.display or node.name
    yield f"# at {node.offset}: {title}, {node.length} bytes"
    if explain and node.doc:
        yield f"#   {node.doc}"
    if node.error:
        yield f"#   ERROR {node.error}"
    yield from _render_children(node, source, base, explain, prefix="")


def _render_children(node: Node, source: bytes | None, base: int, explain: bool,
                     prefix: str) -> Iterator[str]:
    for child in node.children:
        path = f"{prefix}{child.name}"
        if child.wire == "bit":  # one flag of its parent's bytes: no bytes of its own
            line = f"{'':>10}  {'':<47}  {path} = {_value_text(child)}"
            if explain and child.doc:
                line += f"  -- {child.doc}"
            yield line
            continue
        bits = bool(child.children) and all(c.wire == "bit" for c in child.children)
        if child.children and not bits:
            line = f"{'':>10}  {'':<47}  {path}"
            if child.display or (child.value is not None and not isinstance(child.value, bytes)):
                line += f" = {_value_text(child)}"
            if explain and child.doc:
                line += f"  -- {child.doc}"
            if child.error:
                line += f"  !! {child.error}"
            yield line
            yield from _render_children(child, source, base, explain, prefix=path + ".")
            continue
        if source is not None:
            raw = source[child.offset - base : child.end - base]
        elif isinstance(child.value, bytes):
            raw = child.value
        else:
            raw = b""
        hexes = _hex_lines(bytes(raw))
        value = _value_text(child)
        line = f"{child.offset:>10}  {hexes[0]:<47}  {path}"
        if value != "" and not (isinstance(child.value, bytes) and not child.display):
            line += f" = {value}"
        if explain and child.doc:
            line += f"  -- {child.doc}"
        if child.error:
            line += f"  !! {child.error}"
        yield line
        for more in hexes[1:]:
            yield f"{'':>10}  {more}"
        if bits:
            yield from _render_children(child, source, base, explain, prefix=path + ".")
