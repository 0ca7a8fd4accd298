"""Detail tree: the annotated Node tree of the selected event (children added on expand)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from binlogscope.tui.messages import FieldSelected
from binlogscope.wire.node import Node

_VALUE_MAX = 60
#: levels expanded when an event is loaded (header and body visible at once)
_OPEN_DEPTH = 1


def node_label(node: Node) -> Text:
    label = Text(node.name, style="bold")
    value = node.text.replace("\n", "\\n")
    if len(value) > _VALUE_MAX:
        value = value[: _VALUE_MAX - 1] + "…"
    if value:
        label.append(" = ")
        label.append(value, style="italic" if node.children else "")
    if node.error:
        label.append(f"  !! {node.error}", style="bold red")
    return label


class FieldTree(Tree[Node]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left", "collapse_or_parent", "Collapse", show=False),
        Binding("right", "expand_child", "Expand", show=False),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("(no event)", id=id)
        self.show_root = True
        self.auto_expand = False
        self.event_node: Node | None = None

    def load(self, node: Node | None) -> None:
        self.clear()
        self.event_node = node
        if node is None:
            self.root.set_label("(no event)")
            self.root.data = None
            return
        self.root.set_label(node_label(node))
        self.root.data = node
        self._populate(self.root)
        self.root.expand()
        for child in self.root.children:
            if child.data is not None and child.data.children and _OPEN_DEPTH > 0:
                self._populate(child)
                child.expand()
        self._move(self.root)
        # clear() keeps cursor_line at 0, so moving to the root may post no highlight: say it
        self.post_message(FieldSelected(node))

    def _populate(self, tnode: TreeNode[Node]) -> None:
        data = tnode.data
        if data is None or tnode.children or not data.children:
            return
        for child in data.children:
            has = bool(child.children)
            tnode.add(node_label(child), data=child, allow_expand=has)

    def on_tree_node_expanded(self, event: Tree.NodeExpanded[Node]) -> None:
        self._populate(event.node)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted[Node]) -> None:
        event.stop()
        if event.node.data is not None:
            self.post_message(FieldSelected(event.node.data))

    def select_field(self, target: Node) -> None:
        """Expand down to ``target`` and put the cursor on it."""
        root = self.root
        if root.data is None:
            return
        path = node_path(root.data, target) or [root.data]
        tnode = root
        for want in path[1:]:
            self._populate(tnode)
            if not tnode.is_expanded:
                tnode.expand()
            nxt = next((c for c in tnode.children if c.data is want), None)
            if nxt is None:
                break
            tnode = nxt
        if self.cursor_node is not tnode:
            self._move(tnode)
        self.scroll_to_node(tnode, animate=False)

    def _move(self, tnode: TreeNode[Node]) -> None:
        """move_cursor after laying out the lines (a node added this tick has no line yet)."""
        _ = self._tree_lines  # builds the line list and gives every visible node its line
        self.move_cursor(tnode, animate=False)

    def expand_everything(self) -> int:
        """Expand every field of the event (Wireshark's Expand All); returns how many nodes."""
        n = 0
        stack = [self.root]
        while stack:
            tnode = stack.pop()
            self._populate(tnode)
            if tnode.children:
                tnode.expand()
            n += 1
            stack.extend(tnode.children)
        return n

    def collapse_everything(self) -> None:
        """Collapse every field down to the event's top line (the cursor goes to the root)."""
        self.root.collapse_all()
        self.root.expand()
        self._move(self.root)

    def action_collapse_or_parent(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.is_expanded and node.children:
            node.collapse()
        elif node.parent is not None:
            self._move(node.parent)

    def action_expand_child(self) -> None:
        node = self.cursor_node
        if node is None:
            return
        if node.allow_expand and not node.is_expanded:
            node.expand()
        elif node.children:
            self._move(node.children[0])


def node_path(root: Node, target: Node) -> list[Node] | None:
    """Nodes from ``root`` down to ``target`` (by identity), pruned by byte span."""
    if root is target:
        return [root]
    for c in root.children:
        if c.offset <= target.offset and target.end <= c.end:
            sub = node_path(c, target)
            if sub is not None:
                return [root, *sub]
    return None
