"""The footer every screen shows. In a narrow terminal it is compact (less space between keys)
and leaves out the ctrl+p hint (help lists it), so that quit and help still fit at 80 columns."""

from __future__ import annotations

from textual import events
from textual.widgets import Footer

NARROW_BELOW = 110


class ConsoleFooter(Footer):
    def on_mount(self) -> None:
        self._fit(self.app.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        narrow = width < NARROW_BELOW
        self.compact = narrow
        self.show_command_palette = not narrow
