"""The annotated tree: every decoded byte has an address.

A :class:`Node` is one field of a packet or event: its name, decoded value, absolute byte
``offset`` and ``length`` in the source (a file, or one direction of a connection), the MySQL
docs' wire type, a display string, a one-line teaching ``doc``, its children, and an optional
``error``.  The TUI hex pane, the plain/JSON printers, the exporter and the teaching text all
read this one model.

Invariants (checked by :func:`check_tiling` in tests): children are ordered, do not overlap, lie
inside their parent, and the leaves of a packet/event tile its bytes with no gap.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields
from typing import Any


@dataclass(frozen=True, slots=True)
class Node:
    """One decoded field (leaf) or structure (inner node)."""

    name: str
    offset: int
    length: int
    value: Any = None
    wire: str = ""
    display: str = ""
    doc: str = ""
    children: tuple[Node, ...] = ()
    error: str | None = None

    @property
    def end(self) -> int:
        return self.offset + self.length

    def walk(self, depth: int = 0) -> Iterator[tuple[int, Node]]:
        """Yield ``(depth, node)`` in document order (pre-order)."""
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)

    def leaves(self) -> Iterator[Node]:
        if not self.children or self.children[0].wire == "bit":
            yield self
            return
        for child in self.children:
            yield from child.leaves()

    def at(self, offset: int) -> Node | None:
        """The deepest node covering byte ``offset`` (for a hex-pane cursor)."""
        if not (self.offset <= offset < self.end):
            return None
        for child in self.children:
            hit = child.at(offset)
            if hit is not None:
                return hit
        return self

    def find(self, path: str) -> Node:
        """Find a descendant by dotted path of names, e.g. ``"header.event_type"``.

        Raises KeyError when no such node exists.
        """
        node: Node = self
        for part in path.split("."):
            for child in node.children:
                if child.name == part:
                    node = child
                    break
            else:
                raise KeyError(f"{path!r}: no child {part!r} under {node.name!r}")
        return node

    def get(self, path: str) -> Node | None:
        try:
            return self.find(path)
        except KeyError:
            return None

    def errors(self) -> list[Node]:
        """Every node in the tree that carries an error."""
        return [n for _, n in self.walk() if n.error is not None]

    @property
    def text(self) -> str:
        """What a person reads as the value: the display string, else the repr of the value."""
        if self.display:
            return self.display
        return format_value(self.value)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the whole subtree (``--tree`` output)."""
        out: dict[str, Any] = {
            "name": self.name,
            "offset": self.offset,
            "length": self.length,
        }
        if not self.children or self.value is not None:
            out["value"] = json_value(self.value)
        if self.wire:
            out["wire"] = self.wire
        if self.display:
            out["display"] = self.display
        if self.doc:
            out["doc"] = self.doc
        if self.error is not None:
            out["error"] = self.error
        if self.children:
            out["children"] = [c.to_dict() for c in self.children]
        return out


# ----------------------------------------------------------------------------- fast construction
NodeMaker = Callable[[str, int, int, Any, str, str, str, "tuple[Node, ...]", "str | None"], Node]


def _python_maker() -> NodeMaker:
    """``Node(...)`` without the frozen dataclass ``__init__`` (which goes through
    ``object.__setattr__`` once per field): the slots are set through their descriptors."""
    setters = [getattr(Node, f.name).__set__ for f in fields(Node)]
    s0, s1, s2, s3, s4, s5, s6, s7, s8 = setters
    new = object.__new__

    def make(name: str, offset: int, length: int, value: Any, wire: str, display: str,
             doc: str, children: tuple[Node, ...], error: str | None) -> Node:
        o: Node = new(Node)
        s0(o, name)
        s1(o, offset)
        s2(o, length)
        s3(o, value)
        s4(o, wire)
        s5(o, display)
        s6(o, doc)
        s7(o, children)
        s8(o, error)
        return o

    return make


#: ``make_node(name, offset, length, value, wire, display, doc, children, error)``
make_node: NodeMaker = _python_maker()


def format_value(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bytes | bytearray | memoryview):
        b = bytes(value)
        if len(b) > 32:
            return b[:32].hex(" ") + f" ... ({len(b)} bytes)"
        return b.hex(" ")
    if isinstance(value, str):
        return repr(value)
    return str(value)


def json_value(value: Any) -> Any:
    """Convert a decoded value into something ``json.dumps`` accepts, losslessly where possible.

    bytes become a hex string; enums their name; other objects their ``str``.
    """
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    name = getattr(value, "name", None)
    if isinstance(name, str):
        return name
    return str(value)


def check_tiling(node: Node) -> list[str]:
    """Return a list of invariant violations (empty when the tree is well formed).

    Children must be ordered, non-overlapping, inside their parent, and cover the parent exactly
    (no gaps): every byte is claimed by exactly one leaf.
    """
    problems: list[str] = []

    def visit(n: Node, path: str) -> None:
        if n.length < 0:
            problems.append(f"{path}: negative length")
        if not n.children or n.children[0].wire == "bit":
            return  # bit-flag children annotate their parent's bytes; they overlap by design
        cursor = n.offset
        for c in n.children:
            cpath = f"{path}.{c.name}"
            if c.offset != cursor:
                kind = "gap" if c.offset > cursor else "overlap"
                problems.append(f"{cpath}: {kind} at {cursor} (child starts at {c.offset})")
            cursor = c.end
            visit(c, cpath)
        if cursor != n.end:
            problems.append(f"{path}: children end at {cursor}, node ends at {n.end}")

    visit(node, node.name)
    return problems
