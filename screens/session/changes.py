"""The session's Changes tab (``9``): what it changed, read by its host (``store.hosts.changes``)
— its branch and base, the commits since the base, the files with their counts, and the patch a
page at a time (``n``: the next page), coloured as a diff by Rich's syntax highlighting. Read
when the tab opens and again with ``ctrl+r``; a page is text redacted and printable where the
host's answer was taken in: a diff's lexer colours it, nothing in it is markup."""

from __future__ import annotations

from functools import partial
from typing import Any

from rich.console import Group, RenderableType
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from roundtable_console.store.safety.display import one_line

PATCH_THEME = "ansi_dark"


def changes_summary(page: dict[str, Any]) -> RenderableType:
    """The branch, base, commits and files of a page (``GET …/changes``'s shape)."""
    head = Text()
    head.append(str(page["directory"]), style="bold")
    head.append(f"  branch {page['branch']}" if page.get("branch") else "  no branch")
    head.append(f"  against {str(page['base'])[:12]}", style="dim")
    parts: list[RenderableType] = [head]
    for commit in page.get("commits") or []:
        parts.append(Text.assemble(("  " + str(commit["sha"])[:12] + " ", "yellow"),
                                   str(commit["subject"])))  # fmt: skip
    files = page.get("files") or []
    if not files:
        parts.append(Text("Nothing changed.", style="dim"))
        return Group(*parts)
    table = Table(box=None, show_header=False, pad_edge=False, padding=(0, 1, 0, 0))
    table.add_column(width=9)
    table.add_column(justify="right")
    table.add_column(justify="right")
    table.add_column()
    for item in files:
        if item.get("binary"):
            counts = (Text("binary", style="dim"), Text(""))
        else:
            counts = (Text(f"+{item['added']}", style="green"), Text(f"-{item['deleted']}", "red"))
        table.add_row(Text(str(item["status"])), *counts, Text(str(item["path"])))
    parts.append(table)
    return Group(*parts)


class ChangesPane(VerticalScroll):
    """The page read last, and a note (why there is none; the next page's offset)."""

    DEFAULT_CSS = """
    ChangesPane > #changes-note { color: $text-muted; }
    ChangesPane > #changes-summary { margin-bottom: 1; }
    """

    def __init__(self, *, id: str | None = None) -> None:  # noqa: A002 - Textual's name
        super().__init__(id=id)
        self.next_offset: int | None = None
        self.page_offset = 0
        self.read_once = False

    def compose(self):  # type: ignore[no-untyped-def]
        yield Static("", id="changes-note")
        yield Static("", id="changes-summary")
        yield Static("", id="changes-patch")

    def load(self, screen: Any, offset: int) -> None:
        """A page from ``offset``, asked of the session's host by ``screen``'s source (in a
        worker: it waits on the host), then shown."""
        session = screen.session
        if session is None:
            return
        screen.run_in_thread(
            partial(screen.ctx.source.read_changes, session, offset),
            what=f"read the changes of {one_line(session.id, 40)}",
            group="changes",
            done=lambda page: (self.show(page), screen.refresh_bindings()),
        )

    def show(self, page: dict[str, Any]) -> None:
        self.read_once = True
        note = self.query_one("#changes-note", Static)
        summary = self.query_one("#changes-summary", Static)
        patch = self.query_one("#changes-patch", Static)
        if not page.get("available"):
            self.next_offset = None
            note.update(Text(str(page.get("reason") or "The changes cannot be read.")))
            summary.update("")
            patch.update("")
            return
        self.page_offset, self.next_offset = int(page.get("offset") or 0), page.get("next_offset")
        words = Text("What the session changed, read by its host")
        if self.page_offset:
            words.append(f" · the patch from byte {self.page_offset:,}")
        if self.next_offset is not None:
            words.append(" · n reads the next page", style="bold")
        note.update(words)
        summary.update(changes_summary(page))
        text = str(page.get("patch") or "")
        patch.update(Syntax(text, "diff", theme=PATCH_THEME, word_wrap=False) if text else "")
        self.scroll_home(animate=False)
