"""Messages between the TUI's widgets and screens (widgets post, screens handle)."""

from __future__ import annotations

from dataclasses import dataclass

from textual.message import Message

from binlogscope.wire.node import Node


class RowHighlighted(Message):
    """The list cursor moved to a row (``view_index`` in the view, ``row_index`` in the source)."""

    def __init__(self, view_index: int, row_index: int) -> None:
        self.view_index = view_index
        self.row_index = row_index
        super().__init__()


class FieldSelected(Message):
    """A field of the detail tree was selected: the hex pane highlights node.offset..node.end."""

    def __init__(self, node: Node) -> None:
        self.node = node
        super().__init__()


class HexCursorMoved(Message):
    """The hex pane cursor moved to an absolute byte offset: the tree selects its owner."""

    def __init__(self, offset: int) -> None:
        self.offset = offset
        super().__init__()


class PromptSubmitted(Message):
    """The prompt bar (filter, search, go to, export) was submitted."""

    def __init__(self, mode: str, value: str) -> None:
        self.mode = mode
        self.value = value
        super().__init__()


class PromptClosed(Message):
    """The prompt bar was closed without submitting."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        super().__init__()


class FollowRequested(Message):
    """The user asked to follow the live end (End) or scrolled away from it (wheel up)."""

    def __init__(self, on: bool) -> None:
        self.on = on
        super().__init__()


@dataclass
class RowsAdded(Message):
    """The source published rows or changed its state (posted from the producing thread by the
    source's :class:`~binlogscope.inspector.source.RowSignal`). The screen reads the source when
    it handles it, so a newer one replaces a pending one: a burst is one update."""

    def can_replace(self, message: Message) -> bool:
        return isinstance(message, RowsAdded)
