"""The resume briefing a developer reads before resuming work, and the resume plan."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from markdown_it import MarkdownIt
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header, Markdown, Static

from screens.context import ConsoleContext
from screens.data import BriefingView, read_briefing, write_briefing
from screens.footer import ConsoleFooter
from screens.text import MASK, markdown_literal
from store.display import markdown_line, one_line, printable
from store.errors import StoreError

MASKED_ID = "••••••"


def secret_forms(secret: str | None) -> list[str]:
    """Every form in which the external session id can appear in what is shown: as stored,
    trimmed (the resume plan), and as the briefing writes it on one line; longest first."""
    if not secret:
        return []
    forms = {secret, secret.strip(), markdown_line(secret), printable(secret)}
    return sorted((form for form in forms if form), key=len, reverse=True)


def mask(text: str, forms: Sequence[str]) -> str:
    for form in forms:
        text = text.replace(form, MASKED_ID)
    return text


def plan_text(view: BriefingView, *, revealed: bool) -> Text:
    """The resume plan: argv as a shell would quote it (it is never run through one), the
    briefing argument abbreviated, the external id masked until revealed."""
    plan = view.plan
    text = Text()
    text.append("Resume plan: ", style="bold")
    if not plan.resumable:
        text.append("not resumable", style="yellow")
        text.append(f" — {one_line(plan.reason, 300)}")
        return text
    text.append("resumable", style="green")
    text.append(" (argv; nothing is started from here)\n")
    forms = [] if revealed else secret_forms(view.briefing.session.external_session_id)
    # Quoting writes a quote inside the id as '"'"': that form is masked too.
    quoted = [form.replace("'", "'\"'\"'") for form in forms]
    shown = mask(" ".join(shlex.quote(word) for word in plan.argv[:-1]), [*quoted, *forms])
    text.append("  " + printable(shown), style="bold")
    text.append(f" <briefing: {len(plan.argv[-1])} characters>", style="dim")
    if forms:
        text.append(f"\n  external session id {MASK}", style="dim")
    return text


def briefing_markdown(view: BriefingView, *, revealed: bool) -> str:
    """The briefing as the screen renders it: every stored value literal text (no markup, no
    link, no control character), the external id masked until revealed, one line per line."""
    forms = [] if revealed else secret_forms(view.briefing.session.external_session_id)
    return with_line_breaks(
        view.briefing.render(lambda value: markdown_literal(mask(value, forms)))
    )


def briefing_parser() -> MarkdownIt:
    """CommonMark without links, images, autolinks or HTML: nothing in a briefing may become
    something to click, even if a value were not escaped."""
    return MarkdownIt("commonmark", {"html": False}).disable(
        ["link", "image", "autolink", "reference", "html_inline", "html_block"]
    )


def with_line_breaks(markdown: str) -> str:
    """The briefing is written line by line (the reference layout); Markdown would join
    consecutive lines into one paragraph ("Run: … External session: …"), so each line ends in a
    hard break."""
    return "\n".join(f"{line}  " if line.strip() else line for line in markdown.split("\n"))


class BriefingScreen(Screen[None]):
    AUTO_FOCUS = "#briefing-scroll"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("c", "copy", "Copy"),
        Binding("w", "write", "Write file"),
        Binding("v", "reveal", "Reveal"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    class Loaded(Message):
        def __init__(self, view: BriefingView) -> None:
            super().__init__()
            self.view = view

    class Failed(Message):
        def __init__(self, error: StoreError) -> None:
            super().__init__()
            self.error = error

    class Written(Message):
        def __init__(self, path: Path | None, problem: str | None = None) -> None:
            super().__init__()
            self.path = path
            self.problem = problem

    def __init__(self, ctx: ConsoleContext, session_id: str) -> None:
        super().__init__()
        self.ctx = ctx
        self.session_id = session_id
        self.view: BriefingView | None = None
        self.revealed = False

    def compose(self) -> ComposeResult:
        yield Header()
        title = Text("Resume briefing for ")
        title.append(one_line(self.session_id, 80), style="bold")
        yield Static(title, id="briefing-title")
        yield Static("", id="banner")
        yield Static(Text("Reading the briefing…", style="italic"), id="resume-plan")
        with VerticalScroll(id="briefing-scroll"):
            yield Markdown("", id="briefing", parser_factory=briefing_parser, open_links=False)
        yield ConsoleFooter()

    def on_mount(self) -> None:
        self._load()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("copy", "write"):
            return self.view is not None
        if action == "reveal":
            return self.view is not None and bool(self.view.briefing.session.external_session_id)
        return True

    def action_back(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self._load()

    @work(thread=True, exclusive=True, group="briefing", exit_on_error=False)
    def _load(self) -> None:
        try:
            view = read_briefing(self.ctx, self.session_id)
        except StoreError as error:
            self.post_message(self.Failed(error))
            return
        self.post_message(self.Loaded(view))

    def on_briefing_screen_failed(self, message: Failed) -> None:
        banner = self.query_one("#banner", Static)
        banner.update(Text(f"⚠ {one_line(message.error.message, 300)} [{message.error.code}]"))
        banner.add_class("shown")

    def on_briefing_screen_loaded(self, message: Loaded) -> None:
        self.view = message.view
        self.query_one("#banner", Static).remove_class("shown")
        self._show()
        self.refresh_bindings()

    def _show(self) -> None:
        if self.view is None:
            return
        self.query_one("#resume-plan", Static).update(plan_text(self.view, revealed=self.revealed))
        # What is shown is masked and escaped; what c copies and w writes is the briefing itself.
        shown = briefing_markdown(self.view, revealed=self.revealed)
        self.query_one("#briefing", Markdown).update(shown)

    def action_reveal(self) -> None:
        self.revealed = not self.revealed
        self._show()

    def action_copy(self) -> None:
        if self.view is None:
            return
        self.app.copy_to_clipboard(self.view.briefing.markdown)
        self.notify(
            "Briefing copied to the clipboard (through the terminal, OSC 52: "
            "some terminals need this allowed).",
            markup=False,
        )

    def action_write(self) -> None:
        if self.view is not None:
            self._write(self.view.briefing.markdown)

    @work(thread=True, exclusive=True, group="briefing-write", exit_on_error=False)
    def _write(self, markdown: str) -> None:
        directory = self.ctx.export_dir or Path.cwd()
        try:
            path = write_briefing(directory, self.session_id, markdown)
        except OSError as error:
            self.post_message(self.Written(None, f"{directory}: {error.strerror or error}"))
            return
        self.post_message(self.Written(path))

    def on_briefing_screen_written(self, message: Written) -> None:
        if message.path is None:
            self.notify(
                f"Could not write the briefing: {message.problem}", severity="error", markup=False
            )
            return
        self.notify(f"Briefing written to {message.path}", markup=False, timeout=10)
