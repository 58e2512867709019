"""The resume briefing a developer reads before resuming work, and the resume plan."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from markdown_it import MarkdownIt
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Header, Markdown, Static

from roundtable_console.screens.banner import StoreBanner
from roundtable_console.screens.context import ConsoleContext
from roundtable_console.screens.data import write_briefing
from roundtable_console.screens.failures import Failure, ReportsFailures
from roundtable_console.screens.footer import ConsoleFooter
from roundtable_console.screens.outcomes import ActionResult
from roundtable_console.screens.session.actions import open_launch, tell
from roundtable_console.screens.session.masking import mask, quoted_argv, secret_forms
from roundtable_console.screens.text import MASK, heading, markdown_literal
from roundtable_console.store.safety.display import one_line

if TYPE_CHECKING:
    from roundtable_console.store.service import BriefingView


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
    text.append(" (argv, never run through a shell; R resumes the session and starts it)\n")
    forms = [] if revealed else secret_forms(view.briefing.session.external_session_id)
    text.append("  " + quoted_argv(plan.argv[:-1], forms), style="bold")
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


class BriefingScreen(ReportsFailures, Screen[None]):
    AUTO_FOCUS = "#briefing-scroll"
    BINDINGS = [
        Binding("escape", "back", "Back"),
        Binding("c", "copy", "Copy"),
        Binding("w", "write", "Write file"),
        Binding("v", "reveal", "Reveal"),
        Binding("R", "launch", "Launch", tooltip="Resume, then start the agent (asks first)"),
        Binding("ctrl+r", "reload", "Refresh", show=False),
    ]

    def __init__(self, ctx: ConsoleContext, session_id: str) -> None:
        super().__init__()
        self.ctx = ctx
        self.session_id = session_id
        self.view: BriefingView | None = None
        self.revealed = False

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static(heading("Resume briefing for ", self.session_id), id="briefing-title")
        yield StoreBanner()
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
        if action == "launch":
            # The briefing is a snapshot: the dialog reads the session again and judges it.
            return self.view is not None and not self.ctx.read_only
        return True

    def action_launch(self) -> None:
        if self.view is not None:
            open_launch(self, self.ctx, self._launched, self.view.session)

    def _launched(self, result: ActionResult) -> None:
        tell(self, result)
        if not result.cancelled:
            self._load()

    def action_back(self) -> None:
        self.dismiss(None)

    def action_reload(self) -> None:
        self._load()

    def _load(self) -> None:
        self.run_in_thread(
            partial(self.ctx.source.read_briefing, self.session_id),
            what=f"read the briefing of {one_line(self.session_id, 40)}",
            group="briefing",
            done=self._loaded,
            failed=self._load_failed,
        )

    def _load_failed(self, failure: Failure) -> None:
        self.query_one(StoreBanner).show_failure(failure.text)
        if self.view is None:
            self.query_one("#resume-plan", Static).update(
                Text("The briefing could not be read; ctrl+r reads it again.", style="italic")
            )

    def _loaded(self, view: BriefingView) -> None:
        self.view = view
        self.query_one(StoreBanner).clear()
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
            self.run_in_thread(
                partial(self._write_file, self.view.briefing.markdown),
                what=f"write the briefing of {one_line(self.session_id, 40)}",
                group="briefing-write",
                exclusive=False,  # each w writes a file: each one is announced
                done=self._written,
            )

    def _write_file(self, markdown: str) -> Path | str:
        """In a thread: where the briefing was written, or why it could not be."""
        directory = self.ctx.export_dir or Path.cwd()
        try:
            return write_briefing(directory, self.session_id, markdown)
        except OSError as error:
            return f"{directory}: {error.strerror or error}"

    def _written(self, where: Path | str) -> None:
        if isinstance(where, str):
            self.notify(f"Could not write the briefing: {where}", severity="error", markup=False)
            return
        self.notify(f"Briefing written to {where}", markup=False, timeout=10)
