"""The banner over a screen's content that says why the store could not be read.

Every screen that reads the store shows its errors the same way: ``yield StoreBanner()`` in
``compose`` (it takes the id ``banner``, styled in ``assets/app.tcss``), then
``show_error(error)`` for a ``StoreError``, ``show_failure(text)`` for anything else (e.g. a
``screens.failures.Failure``'s ``text``), and ``clear()`` once a read works again. It is hidden
while there is nothing to say. What it shows is text, never markup, and control characters are
made visible.
"""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from roundtable_console.screens.outcomes import describe_error
from roundtable_console.store.errors import StoreError
from roundtable_console.store.safety.display import printable


class StoreBanner(Static):
    """Hidden until there is an error to show; the next read that works clears it."""

    def __init__(self, *, id: str = "banner") -> None:
        super().__init__("", id=id)

    def show_error(self, error: StoreError, *, hint: str = "") -> None:
        """A store error in its words, with its stable code."""
        self.show_failure(describe_error(error), hint=hint)

    def show_failure(self, text: str, *, hint: str = "") -> None:
        """``text`` (and a dimmed ``hint`` under it, e.g. "retrying by itself")."""
        shown = Text(f"⚠ {printable(text, keep_newlines=True)}")
        if hint:
            shown.append("\n" + printable(hint, keep_newlines=True), style="dim")
        self.update(shown)
        self.add_class("shown")

    def clear(self) -> None:
        self.remove_class("shown")
