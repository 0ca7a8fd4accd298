"""A ScrollView that caches its component styles (the list and the hex pane paint many lines)."""

from __future__ import annotations

from rich.style import Style
from textual.scroll_view import ScrollView


class StyledScrollView(ScrollView):
    """``_style(component)``: the widget's style plus a component class's, computed once."""

    _style_cache: dict[str, Style]

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._style_cache = {}

    def _style(self, component: str) -> Style:
        cache = self.__dict__.get("_style_cache")
        if cache is None:
            cache = self._style_cache = {}
        st = cache.get(component)
        if st is None:
            st = self.rich_style
            if component:
                st = st + self.get_component_rich_style(component)
            cache[component] = st
        return st
