"""The filters and the sort of the session list: a text filter that opens with ``/``, and a line
that says what is in force, each with the key that changes it, and where the cursor is."""

from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Static

from roundtable_console.screens.list.model import ListModel
from roundtable_console.screens.list.state import ListState


def update_text(shown: Static, text: Text) -> None:
    """``Static.update`` without a layout of the screen when the text keeps its height (a line
    that follows the cursor changes at every key press, and a layout repaints everything)."""
    old, width = shown.content, shown.content_region.width
    same_height = (
        isinstance(old, Text)
        and width > 0
        and len(old.wrap(shown.app.console, width)) == len(text.wrap(shown.app.console, width))
    )
    shown.update(text, layout=not same_height)


class FilterBar(Widget):
    DEFAULT_CSS = """
    FilterBar {
        height: auto;
        & > #filter-row {
            height: auto;
        }
        & #filter-line {
            width: 1fr;
        }
        & #position {
            width: 23;
            height: 1;
            text-align: right;
            padding: 0 1 0 0;
            color: $text-muted;
        }
    }
    """

    class Changed(Message):
        """The operator asked for other filters or another order."""

        def __init__(self, state: ListState) -> None:
            super().__init__()
            self.state = state

    class Done(Message):
        """The text filter was submitted: the list takes the keys again."""

    def __init__(self, state: ListState, *, cursor_blink: bool = True) -> None:
        super().__init__()
        self.state = state
        self.position = Text()
        self.cursor_blink = cursor_blink

    def compose(self) -> ComposeResult:
        text = Input(
            placeholder="Filter by id, agent, host, run, adapter, model, status, workspace…",
            id="filter",
        )
        text.cursor_blink = self.cursor_blink
        yield text
        # The cursor's place has a width of its own: it changes at every key press, and the
        # filter line wrapping anew would be a layout of the whole screen.
        with Horizontal(id="filter-row"):
            yield Static(self.state.describe(), id="filter-line")
            yield Static("", id="position")

    def change(self, state: ListState) -> None:
        if state == self.state:
            return
        self.state = state
        self.show_filters()
        self.show_position(Text())
        self.post_message(self.Changed(state))

    def show_place(self, model: ListModel) -> None:
        """Where the list's cursor is in the whole list ("+": its length is being counted)."""
        place = Text()
        if model.loaded and model.row_count:
            place.append(f"row {model.cursor + 1} of {model.row_count}")
            if model.total is None:
                place.append("+", style="dim")
        self.show_position(place)

    def show_position(self, position: Text) -> None:
        """Where the cursor is in the list (beside the filters in force)."""
        if position != self.position:
            self.position = position
            self.query_one("#position", Static).update(position, layout=False)

    def show_filters(self) -> None:
        update_text(self.query_one("#filter-line", Static), self.state.describe())

    def open_text(self) -> None:
        text = self.query_one("#filter", Input)
        text.add_class("shown")
        text.focus()

    def close_text(self) -> bool:
        """Clear and hide the text filter; False when there was nothing to close."""
        text = self.query_one("#filter", Input)
        if not (text.has_focus or text.value):
            return False
        text.value = ""
        text.remove_class("shown")
        return True

    @on(Input.Changed, "#filter")
    def _text_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.change(replace(self.state, text=event.value))

    @on(Input.Submitted, "#filter")
    def _text_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not event.value.strip():
            event.input.remove_class("shown")
        self.post_message(self.Done())
