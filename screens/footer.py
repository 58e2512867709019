"""The footer every screen shows. In a narrow terminal it is compact (less space between keys,
shorter words) and leaves out the ctrl+p hint (help lists it), so that quit and help still fit
at 80 columns.

Textual's Footer builds its keys anew whenever the screen's bindings change. On the session list
they change with nearly every cursor move (each status allows other actions), and rebuilding
costs tens of milliseconds a key press. The screens dim the actions that do not apply rather than
hide them, so the keys shown stay the same, and this footer then only re-dims its keys in place.
"""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey

NARROW_BELOW = 110
# The words a narrow footer uses instead of the bindings' descriptions.
NARROW_WORDS = {"Heartbeat": "Beat", "Terminate": "Term", "Briefing": "Brief"}


class ConsoleFooter(Footer):
    def on_mount(self) -> None:
        self._fit(self.app.size.width)

    def on_resize(self, event: events.Resize) -> None:
        self._fit(event.size.width)

    def _fit(self, width: int) -> None:
        narrow = width < NARROW_BELOW
        self.compact = narrow
        self.show_command_palette = not narrow

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if self.compact and isinstance(widget, FooterKey):
                widget.description = NARROW_WORDS.get(widget.description, widget.description)
            yield widget

    def bindings_changed(self, screen: Screen[object]) -> None:
        if self.is_attached and screen is self.screen and self.redim():
            return
        super().bindings_changed(screen)

    def redim(self) -> bool:
        """When the footer already shows exactly the keys to show, set which are dimmed and
        say so (True); otherwise it must be built again (False)."""
        if not self._bindings_ready:
            return False
        wanted: dict[str, bool] = {}
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if binding.show and binding.action not in wanted:
                wanted[binding.action] = enabled
        keys = [key for key in self.query(FooterKey) if not key.has_class("-command-palette")]
        if [key.action for key in keys] != list(wanted):
            return False
        for key in keys:
            disabled = not wanted[key.action]
            if key._disabled != disabled:  # FooterKey keeps its state there (textual 8.2.8)
                key._disabled = disabled
                key.set_class(disabled, "-disabled")
                # Tell the screen now: on the key's own idle it would be a frame of its own.
                key._check_refresh()
        return True
