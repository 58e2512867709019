"""Telling the screens on show that the store changed, as soon as it did."""

from __future__ import annotations

from textual.message import Message


# The app hands it to the screen on show; bubbling back up would hand it over again.
class StoreChanged(Message, bubble=False):
    """Something was committed to the store (by anyone). A screen showing store data reads it
    again now rather than at its next timed refresh."""
