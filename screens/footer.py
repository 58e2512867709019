"""The footer every screen shows: the keys that can be pressed now, one line, drawn as text.

Textual's own Footer builds a widget per key and builds them all again whenever the screen's
bindings change, which on the session list is nearly every cursor move (each status allows other
actions): tens of milliseconds a key press. This footer is one widget drawing one line from the
screen's ``active_bindings``; a change of bindings repaints that line. Actions that do not apply
to the selected session are shown dimmed (``check_action`` returns None), so the keys keep their
places from row to row. In a narrow terminal the words are shorter and the command palette's key
is left out (help lists it). Keys that still do not fit are left out too, the screen's last ones
first, never the app's: quit and help always fit at 80 columns. A click on a key presses it.

A screen may word its keys for the moment with ``footer_label(action, description)``: the words
to show, or None to leave the key out of the footer (the session list says "Pause ●12" while
sessions are marked).
"""

from __future__ import annotations

from typing import NamedTuple

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import ActiveBinding
from textual.screen import Screen
from textual.strip import Strip
from textual.widget import Widget

NARROW_BELOW = 110
# The words a narrow footer uses instead of the bindings' descriptions.
NARROW_WORDS = {"Heartbeat": "Beat", "Terminate": "Term", "Briefing": "Brief"}


class FooterKey(NamedTuple):
    key: str
    action: str
    display: str
    description: str
    enabled: bool
    # The app's own key (quit, help): kept when the screen's do not all fit.
    app: bool = False


class ConsoleFooter(Widget):
    DEFAULT_CSS = """
    ConsoleFooter {
        dock: bottom;
        height: 1;
        background: $footer-background;
        & > .console-footer--key {
            color: $footer-key-foreground;
            background: $footer-key-background;
            text-style: bold;
        }
        & > .console-footer--description {
            color: $footer-description-foreground;
            background: $footer-description-background;
        }
        & > .console-footer--dimmed {
            text-style: dim;
        }
    }
    """
    COMPONENT_CLASSES = {
        "console-footer--key",
        "console-footer--description",
        "console-footer--dimmed",
    }

    def __init__(self) -> None:
        super().__init__()
        # What the line was drawn for, the line, and where each key is on it.
        self.drawn: tuple[object, Strip, list[tuple[int, int, str]]] | None = None

    def compose(self) -> ComposeResult:
        return iter(())

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, _screen: Screen[object]) -> None:
        """Repainted only when the keys shown or their dimming changed: a cursor move to a
        session of the same status leaves the footer as it is, and the frame smaller."""
        if self.drawn is None or self.drawn[0] != self._wanted():
            self.refresh()

    def _wanted(self) -> tuple[object, ...]:
        """What the line is drawn from (the screen's bindings are worked out once: each time
        asks every binding's ``check_action``)."""
        bindings = self.screen.active_bindings
        return (
            tuple(self.keys(bindings)),
            self.palette_key(bindings),
            self.size.width,
            self.narrow,
        )

    @property
    def narrow(self) -> bool:
        return self.app.size.width < NARROW_BELOW

    def keys(self, bindings: dict[str, ActiveBinding] | None = None) -> list[FooterKey]:
        """The keys shown, in the order the bindings were declared, one per action."""
        found: dict[str, FooterKey] = {}
        palette = self.app.COMMAND_PALETTE_BINDING
        label = getattr(self.screen, "footer_label", None)
        if bindings is None:
            bindings = self.screen.active_bindings
        for key, active in bindings.items():
            binding = active.binding
            if not binding.show or binding.action in found:
                continue
            if key == palette:
                continue  # drawn on its own, at the right (not at all when narrow)
            description: str | None = binding.description
            if self.narrow:
                description = NARROW_WORDS.get(binding.description, binding.description)
            if label is not None and active.node is self.screen:
                description = label(binding.action, description)
            if description is None:
                continue
            found[binding.action] = self._footer_key(key, active, description)
        return list(found.values())

    def _footer_key(self, key: str, active: ActiveBinding, description: str) -> FooterKey:
        display = self.app.get_key_display(active.binding)
        action, enabled = active.binding.action, active.enabled
        return FooterKey(key, action, display, description, enabled, active.node is self.app)

    def render_line(self, y: int) -> Strip:
        """The one line, drawn again only when the keys or their dimming change (a cursor
        move to a session of the same status draws nothing new)."""
        width = self.size.width
        wanted = self._wanted()
        if self.drawn is None or self.drawn[0] != wanted:
            line, places = self._draw_keys(*wanted[:3])
            strip = Strip(list(line.render(self.app.console)))
            self.drawn = (wanted, strip.adjust_cell_length(width, self.rich_style), places)
        if y:
            return Strip.blank(width, self.rich_style)
        return self.drawn[1]

    @property
    def places(self) -> list[tuple[int, int, str]]:
        """Where each key is drawn: (first cell, last cell + 1, key), for clicks."""
        return self.drawn[2] if self.drawn is not None else []

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self.drawn = None

    def _draw_keys(
        self, keys: tuple[FooterKey, ...], palette: FooterKey | None, width: int
    ) -> tuple[Text, list[tuple[int, int, str]]]:
        key_style = self.get_component_rich_style("console-footer--key")
        words_style = self.get_component_rich_style("console-footer--description")
        dimmed = self.get_component_rich_style("console-footer--dimmed", partial=True)
        # Wide: " k Word " per key; narrow: "k Word " (less padding).
        key_pad, words = ("", " {} ") if self.narrow else (" ", "{} ")
        line = Text(" " if self.narrow else "", no_wrap=True, end="", overflow="crop")
        places = []
        for shown in fitting(keys, width - line.cell_len, key_pad, words):
            start = line.cell_len
            extra = dimmed if not shown.enabled else Style()
            line.append(f"{key_pad}{shown.display}{key_pad}", key_style + extra)
            line.append(words.format(shown.description), words_style + extra)
            places.append((start, line.cell_len, shown.key))
        if palette is not None:
            hint = Text(" ", no_wrap=True, end="")
            hint.append(f" {palette.display} ", key_style)
            hint.append(f"{palette.description} ", words_style)
            room = width - line.cell_len - hint.cell_len
            if room > 0:
                line.append(" " * room)
                places.append((line.cell_len, line.cell_len + hint.cell_len, palette.key))
                line.append_text(hint)
        line.stylize_before(self.rich_style)
        return line, places

    def palette_key(self, bindings: dict[str, ActiveBinding]) -> FooterKey | None:
        """The command palette's key, shown at the right of a wide footer."""
        if self.narrow or not self.app.ENABLE_COMMAND_PALETTE:
            return None
        key = self.app.COMMAND_PALETTE_BINDING
        active = bindings.get(key)
        if active is None:
            return None
        return self._footer_key(key, active, active.binding.description)

    def on_click(self, event: events.Click) -> None:
        for start, end, key in self.places:
            if start <= event.x < end:
                event.stop()
                self.app.simulate_key(key)
                return


def fitting(keys: tuple[FooterKey, ...], width: int, pad: str, words: str) -> list[FooterKey]:
    """The keys that fit in ``width`` cells, drawn with ``pad`` around each key and its words
    formatted by ``words``: the screen's last keys are left out first, the app's never."""
    kept = list(keys)

    def used() -> int:
        return sum(
            cell_len(f"{pad}{key.display}{pad}") + cell_len(words.format(key.description))
            for key in kept
        )

    while used() > width:
        screens = [index for index, key in enumerate(kept) if not key.app]
        if not screens:
            break
        del kept[screens[-1]]
    return kept
