"""Hostile store data on every surface of the console: markup, links and escape sequences in ids,
titles, rationales, payloads and claims show as the characters they are, never as styles, links
or terminal commands. Also: no store call runs on Textual's event loop."""

from __future__ import annotations

import ast
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from markdown_it import MarkdownIt
from sqlalchemy import insert
from textual.command import CommandPalette
from textual.widgets import Markdown, TextArea

from roundtable_console.screens.dialogs.confirm import ConfirmActionDialog
from roundtable_console.screens.dialogs.terminate import TerminateDialog
from roundtable_console.screens.session.briefing import BriefingScreen, briefing_parser
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.screens.session.log import SessionLogScreen
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import Decision, Event, Proposal, Task
from roundtable_console.store.writes import lifecycle
from tests.conftest import FakeClock
from tests.helpers import history
from tests.test_tui_support import (
    FROZEN,
    add_agent,
    add_claim,
    add_session,
    console,
    notifications,
    press,
    screen_text,
    settle,
    sqlite_url,
)

# Short enough for the 40 characters an id gets in a notification.
HOSTILE_ID = "[bold]x[/][link=http://e]y[/link]\x1b[2J"
HOSTILE_ID_SHOWN = "[bold]x[/][link=http://e]y[/link]\\e[2J"
# Markup, a stray closing tag, a link, a screen clear and an OSC 52 clipboard write.
HOSTILE = "[bold]x[/] [/] [link=http://evil]y[/link] \x1b[2J \x1b]52;c;aGk=\x07"
HOSTILE_SHOWN = "[bold]x[/] [/] [link=http://evil]y[/link] \\e[2J \\e]52;c;aGk=\\x07"
# Markdown that would become a link, an image, HTML, emphasis and code if it were not escaped.
MARKDOWN_BAIT = (
    "see [click me](http://evil.example) ![img](http://evil/i.png) <b>html</b> **strong** "
    "`code` http://auto.example &amp; _u_"
)
HOUR = timedelta(hours=1)
LINK_TOKENS = {"link_open", "image", "html_inline", "html_block"}


def assert_no_raw_controls(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text


# --- notifications ------------------------------------------------------------------------------


async def test_notifications_show_session_ids_literally(tmp_path: Path, db: Store) -> None:
    add_session(db, HOSTILE_ID)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(160, 40), notifications=True) as pilot:
        await settle(pilot)
        await press(pilot, "p")
        assert notifications(app)[-1] == f"Paused {HOSTILE_ID_SHOWN} (active → paused)."
        await press(pilot, "p")
        assert notifications(app)[-1].startswith(f"Cannot pause {HOSTILE_ID_SHOWN}: its status")
        await press(pilot, "s", "n")
        assert notifications(app)[-1] == (
            f"Stop cancelled: nothing was done to {HOSTILE_ID_SHOWN}."
        )
        shown = screen_text(app)
        assert "[bold]x[/]" in shown and "[link=http://e]y[/link]" in shown
        assert_no_raw_controls(shown)


async def test_a_plain_notification_never_carries_a_raw_control(tmp_path: Path) -> None:
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(120, 40), notifications=True) as pilot:
        await settle(pilot)
        app.notify("[b]x[/b]\x1b]52;c;aGk=\x07", title="t\x1b[2J", markup=False)
        await settle(pilot)
        title, message = app.notified[-1]
        assert message == "[b]x[/b]\\e]52;c;aGk=\\x07"
        assert title == "t\\e[2J"
        shown = screen_text(app)
        assert "[b]x[/b]" in shown
        assert_no_raw_controls(shown)


# --- the briefing -------------------------------------------------------------------------------


def seed_briefing(db: Store) -> None:
    add_session(db, "s1", agent_id="ada", external_session_id="ext\x1b77")
    with db.write() as conn:
        conn.execute(
            insert(Task.__table__).values(  # type: ignore[attr-defined]
                id="T-1",
                title=f"{HOSTILE} {MARKDOWN_BAIT}",
                body_md="never shown",
                status="in_progress",
                priority=1,
                assigned_agent_id="ada",
                created_at="2026-09-17T17:00:00Z",
            )
        )
        conn.execute(
            insert(Decision.__table__).values(  # type: ignore[attr-defined]
                id="D-[1](http://e)",
                decision="accept",
                rationale_md=f"# {MARKDOWN_BAIT}",
                decided_by="ops",
                created_at="2026-09-17T17:00:00Z",
            )
        )
    add_claim(db, "c1", agent_id="ada", resource_id="<b>res</b> [x](http://e)", expires_in=HOUR)


def link_tokens(parser: MarkdownIt, source: str) -> list[str]:
    found = []
    for token in parser.parse(source):
        found += [token.type] if token.type in LINK_TOKENS else []
        found += [child.type for child in token.children or [] if child.type in LINK_TOKENS]
    return found


async def test_briefing_shows_store_text_literally_and_never_as_links(
    tmp_path: Path, db: Store
) -> None:
    seed_briefing(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "b")
        assert isinstance(app.screen, BriefingScreen)
        shown = screen_text(app)
        for literal in (
            "[bold]x[/] [/] [link=http://evil]y[/link]",
            "[click me](http://evil.example)",
            "![img](http://evil/i.png) <b>html</b> **strong** `code` http://auto.example &amp; _u_",
            "D-[1](http://e): # see",
            "<b>res</b> [x](http://e)",
        ):
            assert literal in shown
        assert_no_raw_controls(shown)
        # The id is masked in every form it takes (the briefing writes the ESC as a space).
        assert "External session: ••••••" in shown
        assert "ext 77" not in shown and "ext\\e77" not in shown
        source = app.screen.query_one("#briefing", Markdown).source
        # Escaping alone keeps links out, even under Textual's default parser; the screen's own
        # parser has no link, image or HTML rules at all.
        assert link_tokens(MarkdownIt("gfm-like"), source) == []
        assert link_tokens(briefing_parser(), "[a](http://e) <http://e> ![i](x) <b>h</b>") == []
        await press(pilot, "v")
        assert "External session: ext 77" in screen_text(app)
        await press(pilot, "c")
        # What is copied is the briefing itself, not the escaped view of it.
        assert app.clipboard == app.screen.view.briefing.markdown
        assert "[click me](http://evil.example)" in app.clipboard and "\\[" not in app.clipboard


# --- detail, log and dialogs --------------------------------------------------------------------


def seed_everything(db: Store) -> None:
    add_session(db, HOSTILE_ID, agent_id="ada", run_id="run-1", metadata={"title": HOSTILE})
    add_agent(db, "ada")
    add_claim(db, "c1", agent_id="ada", resource_id=HOSTILE, expires_in=HOUR)
    with db.write() as conn:
        conn.execute(
            insert(Proposal.__table__).values(  # type: ignore[attr-defined]
                id="P-1",
                task_id="T-1",
                agent_id="ada",
                title=HOSTILE,
                summary_md=HOSTILE,
                patch_path="/p",
                created_at="2026-09-17T17:00:00Z",
            )
        )
        conn.execute(
            insert(Event.__table__).values(  # type: ignore[attr-defined]
                run_id="run-1",
                type="tool.shell",
                actor_id="ada",
                payload_json='{"action": "[bold]x[/] \\u001b[2J", "status": "[/]"}',
                created_at="2026-09-17T17:10:00Z",
            )
        )
        lifecycle.pause(db=conn, session_id=HOSTILE_ID, actor=HOSTILE, clock=FakeClock(FROZEN))


async def test_detail_tabs_show_store_text_literally(tmp_path: Path, db: Store) -> None:
    seed_everything(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "enter")
        assert isinstance(app.screen, SessionDetailScreen)
        shown = screen_text(app)
        assert HOSTILE_ID_SHOWN in shown
        assert '"title": "[bold]x[/] [/] [link=http://evil]y[/link] \\u001b[2J' in shown
        for tab in "2345":
            await press(pilot, tab)
            shown = screen_text(app)
            assert "[bold]x[/]" in shown, tab
            assert_no_raw_controls(shown)


async def test_log_shows_store_text_literally(tmp_path: Path, db: Store) -> None:
    seed_everything(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "l")
        assert isinstance(app.screen, SessionLogScreen)
        shown = screen_text(app)
        assert HOSTILE_ID_SHOWN in shown
        assert '"actor": "[bold]x[/] [/] [link=http://evil]y[/link] \\u001b[2J' in shown
        assert_no_raw_controls(shown)


async def test_dialogs_show_store_text_literally(tmp_path: Path, db: Store) -> None:
    seed_everything(db)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(220, 50)) as pilot:
        await settle(pilot)
        await press(pilot, "s")
        assert isinstance(app.screen, ConfirmActionDialog)
        shown = screen_text(app)
        assert f"Stop {HOSTILE_ID_SHOWN} (now paused)?" in shown
        assert_no_raw_controls(shown)
        await press(pilot, "n", "t")
        assert isinstance(app.screen, TerminateDialog)
        shown = screen_text(app)
        assert f"Terminate session {HOSTILE_ID_SHOWN}?" in shown
        assert "• [bold]x[/] [/] [link=http://evil]y[/link] \\e[2J \\…  task" in shown
        assert_no_raw_controls(shown)
        app.screen.query_one("#impact", TextArea).text = "handed over"
        await press(pilot, "ctrl+s")
        assert notifications(app)[-1].startswith(f"Terminated {HOSTILE_ID_SHOWN} (paused →")


async def test_palette_and_header_show_store_text_literally(tmp_path: Path, db: Store) -> None:
    add_session(db, HOSTILE_ID)
    app = console(sqlite_url(tmp_path))
    app.ctx.operator = "[b]op[/b]\x1b]0;title\x07"
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        assert "[b]op[/b]\\e]0;title\\x07 @ sqlite" in screen_text(app)
        await press(pilot, "ctrl+p")
        await pilot.press(*"Pause")
        await settle(pilot)
        shown = screen_text(app)
        assert f"Pause {HOSTILE_ID_SHOWN}" in shown
        assert_no_raw_controls(shown)


async def test_error_banners_show_store_text_literally(tmp_path: Path, db: Store) -> None:
    add_session(db, HOSTILE_ID)
    app = console(sqlite_url(tmp_path))
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        with db.write() as conn:
            conn.exec_driver_sql("DELETE FROM agent_sessions")
        await press(pilot, "enter")
        shown = screen_text(app)
        assert "[bold]x[/][link=http://e]y[/link]" in shown and "[session_not_found]" in shown
        assert_no_raw_controls(shown)


# --- no store call on the event loop ------------------------------------------------------------


@pytest.fixture
def store_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Store, str, bool]]:
    """Every read and write transaction opened: on which store, and whether on the event loop's
    thread (the test's own thread: Textual's run_test runs the app's loop there)."""
    calls: list[tuple[Store, str, bool]] = []
    loop_thread = threading.current_thread()
    for name in ("read", "write"):
        original = getattr(Store, name)

        def recorded(
            self: Store, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any
        ) -> Any:
            calls.append((self, _name, threading.current_thread() is loop_thread))
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(Store, name, recorded)
    return calls


async def test_no_store_call_runs_on_the_event_loop(
    tmp_path: Path, db: Store, store_calls: list[tuple[Store, str, bool]]
) -> None:
    seed_everything(db)
    add_session(db, "s2", agent_id="ada")
    app = console(sqlite_url(tmp_path), page_size=1, window_pages=2)
    app.ctx.export_dir = tmp_path / "out"
    async with app.run_test(size=(160, 40)) as pilot:
        await settle(pilot)
        await press(pilot, "down", "up", "end", "home", "ctrl+r")
        await press(pilot, "enter", *"234567", "n", "v", "1", "ctrl+r", "h", "escape")
        await press(pilot, "l", "ctrl+r", "escape", "b", "w", "escape")
        await press(pilot, "r", "y", "p", "s", "y", "r", "y", "t")
        app.screen.query_one("#impact", TextArea).text = "handed over"
        await press(pilot, "ctrl+s", "f", "a", "o", "S", "S", "slash", "s", "escape")
        await press(pilot, "ctrl+p")
        await pilot.press(*"Open")
        await settle(pilot)
        assert isinstance(app.screen, CommandPalette)
    assert [event for event, _ in history(db, HOSTILE_ID)][-6:] == [
        "heartbeat",
        "resuming",
        "paused",
        "stopped",
        "resuming",
        "terminated",
    ]
    mine = [(name, on_loop) for store, name, on_loop in store_calls if store is app.ctx.store]
    assert {name for name, _ in mine} == {"read", "write"}
    assert len(mine) > 20
    assert [call for call in mine if call[1]] == []


# --- the rule in the source ---------------------------------------------------------------------

UI_SOURCES = sorted(
    path
    for package in ("screens", "tui")
    for path in (Path(__file__).resolve().parent.parent / package).rglob("*.py")
)
# Widgets and methods whose string argument Textual would read as markup.
MARKUP_SINKS = {"Static", "Label", "update", "notify"}


def markup_risks(source: str) -> list[str]:
    """Calls that would let text be read as markup: a notify without ``markup=False`` (the app's
    own override passes its caller's choice on to ``super().notify``), or an f-string,
    concatenation or ``.format`` handed straight to a widget as a string."""
    risks = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name not in MARKUP_SINKS:
            continue
        passes_on = isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call)
        if (
            name == "notify"
            and not passes_on
            and not any(
                keyword.arg == "markup"
                and isinstance(keyword.value, ast.Constant)
                and keyword.value.value is False
                for keyword in node.keywords
            )
        ):
            risks.append(f"line {node.lineno}: notify without markup=False")
        first = node.args[0] if node.args else None
        built = isinstance(first, ast.JoinedStr | ast.BinOp) or (
            isinstance(first, ast.Call)
            and isinstance(first.func, ast.Attribute)
            and first.func.attr == "format"
        )
        if built and name != "notify":
            risks.append(f"line {node.lineno}: {name}() given a built string, not Text")
    return sorted(risks, key=lambda risk: int(risk.split()[1].rstrip(":")))


@pytest.mark.parametrize("path", UI_SOURCES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_ui_code_never_hands_built_strings_to_markup(path: Path) -> None:
    assert markup_risks(path.read_text(encoding="utf-8")) == []


def test_the_markup_rule_can_fail() -> None:
    source = (
        "self.notify(f'Paused {session.id}')\n"
        "self.notify('x', markup=False)\n"
        "yield Static(f'Session {session.id}')\n"
        "label.update('a' + name)\n"
        "Static('{}'.format(name))\n"
        "Static(Text(name))\n"
        "super().notify(message, markup=markup)\n"
    )
    assert markup_risks(source) == [
        "line 1: notify without markup=False",
        "line 3: Static() given a built string, not Text",
        "line 4: update() given a built string, not Text",
        "line 5: Static() given a built string, not Text",
    ]
