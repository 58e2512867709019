"""No secret leaves through a read path: the corpus of tests/secret_corpus.py, seeded in every
place a read path reads, goes through every read command (text and --json) and every screen
(detail tabs, log, briefing, copied and written briefing) on SQLite and PostgreSQL. Nothing of
it may show; what is not a secret (token counts, words, URLs without a password, ids) must."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from textual.widgets import DataTable

from roundtable_console.screens.session.briefing import BriefingScreen
from roundtable_console.screens.session.detail import SessionDetailScreen
from roundtable_console.screens.session.log import SessionLogScreen
from roundtable_console.store.db.database import open_store
from roundtable_console.tui import output
from tests import secret_corpus as corpus
from tests.conftest import FakeClock
from tests.helpers import Cli
from tests.test_tui_support import FROZEN, console, notifications, press, screen_text, settle

READ_COMMANDS: tuple[tuple[str, ...], ...] = (
    ("sessions",),
    ("sessions", "list"),
    ("sessions", "show", "--session", corpus.SESSION),
    *(
        ("sessions", name, "--session", corpus.SESSION)
        for name in ("logs", "tool-calls", "claims", "proposals", "metrics", "environment")
    ),
    ("resume", "--session", corpus.SESSION),
    ("resume", "--agent", corpus.AGENT),
)


@pytest.fixture
def seeded(store_url: str) -> str:
    store = open_store(store_url)
    try:
        corpus.seed(store)
    finally:
        store.dispose()
    return store_url


def _paged(command: tuple[str, ...]) -> tuple[str, ...]:
    paged = command[1:2] in (("logs",), ("tool-calls",), ("claims",), ("proposals",))
    return (*command, "--limit", "200") if paged else command


@pytest.fixture
def tty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "stdout_is_tty", lambda: True)


@pytest.mark.parametrize("command", READ_COMMANDS, ids=" ".join)
@pytest.mark.parametrize("mode", ["terminal", "pipe", "json"])
def test_no_read_command_leaks_a_secret(
    seeded: str, command: tuple[str, ...], mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(output, "stdout_is_tty", lambda: mode == "terminal")
    as_json = mode == "json"
    cli = Cli(url=seeded, clock=FakeClock(FROZEN))
    result = cli(*_paged(command), *(["--json"] if as_json else []))
    assert result.exit_code == 0, result.stderr
    assert corpus.leaks(result.stdout + result.stderr) == []
    if as_json:
        json.loads(result.stdout)  # still one JSON document
    if command[1:2] in (("show",), ("logs",), ("claims",), ("proposals",), ("tool-calls",)):
        assert "[REDACTED]" in result.stdout


def test_what_is_not_a_secret_survives_every_command(seeded: str, tty: None) -> None:
    cli = Cli(url=seeded, clock=FakeClock(FROZEN))
    metrics = cli.json("sessions", "metrics", "--session", corpus.SESSION)
    assert metrics["usage"] == corpus.USAGE
    metrics_text = cli("sessions", "metrics", "--session", corpus.SESSION).stdout
    assert re.search(r"usage\.input_tokens:\s+12345\n", metrics_text)
    shown = cli.json("sessions", "show", "--session", corpus.SESSION)
    assert shown["metadata"]["usage"] == corpus.USAGE
    assert shown["metadata"]["kept"] == list(corpus.KEPT_TEXTS)
    assert shown["metadata"]["branch"] == "main"
    assert shown["metadata"]["headers"]["prompt_tokens"] == "[REDACTED]"  # a string is hidden
    assert shown["id"] == corpus.SESSION and shown["agent_id"] == corpus.AGENT
    text = cli("sessions", "show", "--session", corpus.SESSION).stdout
    assert corpus.PLAIN_URL in text and corpus.ORDINARY in text and '"input_tokens":12345' in text
    claims = cli.json("sessions", "claims", "--session", corpus.SESSION, "--limit", "200")
    assert claims["items"][-1]["rationale"] == corpus.ORDINARY
    assert claims["items"][0]["rationale"] == "aws id [REDACTED] in use"
    proposals = cli.json("sessions", "proposals", "--session", corpus.SESSION, "--limit", "200")
    by_title = {item["title"] for item in proposals["items"]}
    assert corpus.ORDINARY in by_title
    assert "dsn postgres://admin:[REDACTED]@db.internal:5432/app" in by_title
    logs = cli.json("sessions", "logs", "--session", corpus.SESSION, "--limit", "200")
    assert any(corpus.ORDINARY in (item["payload"] or "") for item in logs["items"])
    briefing = cli.json("resume", "--session", corpus.SESSION)["briefing"]
    assert "res-00" in briefing and corpus.ORDINARY in briefing


def test_export_alone_is_raw(seeded: str) -> None:
    cli = Cli(url=seeded, clock=FakeClock(FROZEN))
    backup = cli("export").stdout
    assert sorted(corpus.leaks(backup)) == sorted(corpus.SECRETS)
    assert "RAW" in cli("export", "--help", db=False).stdout


def _table_text(app, selector: str) -> str:  # type: ignore[no-untyped-def]
    table = app.screen.query_one(selector, DataTable)
    return "\n".join(
        " | ".join(cell.plain for cell in table.get_row_at(index))
        for index in range(table.row_count)
    )


async def test_no_screen_leaks_a_secret(seeded: str, tmp_path: Path) -> None:
    app = console(seeded)
    app.ctx.export_dir = tmp_path / "out"
    seen: list[str] = []
    async with app.run_test(size=(200, 120)) as pilot:
        await settle(pilot)
        seen.append(screen_text(app))
        await press(pilot, "enter")
        assert isinstance(app.screen, SessionDetailScreen)
        for _ in ("masked", "revealed"):
            seen.append(screen_text(app))
            assert '"branch": "main"' in seen[-1] and '"api_key": "[REDACTED]"' in seen[-1]
            await press(pilot, "v")
        tabs = ("logs", "tool-calls", "claims", "proposals")
        for key, name in zip("2345", tabs, strict=True):
            await press(pilot, key)
            seen.extend([screen_text(app), _table_text(app, f"#table-{name}")])
            assert "[REDACTED]" in seen[-1]
        assert corpus.ORDINARY in seen[-1]
        await press(pilot, "6")
        seen.append(screen_text(app))
        assert "input_tokens" in seen[-1] and "12345" in seen[-1] and "6789" in seen[-1]
        await press(pilot, "7")
        seen.append(screen_text(app))
        await press(pilot, "escape", "l")
        assert isinstance(app.screen, SessionLogScreen)
        seen.extend([screen_text(app), _table_text(app, "#log")])
        assert "[REDACTED]" in seen[-2]
        await press(pilot, "escape", "b")
        assert isinstance(app.screen, BriefingScreen)
        seen.append(screen_text(app))
        await press(pilot, "v")
        seen.append(screen_text(app))
        await press(pilot, "c", "w")
        assert app.clipboard and app.clipboard == app.screen.view.briefing.markdown
        seen.append(app.clipboard)
        assert "res-00" in app.clipboard and corpus.ORDINARY in app.clipboard
        written = list((tmp_path / "out").glob("briefing-*.md"))
        assert len(written) == 1
        seen.append(written[0].read_text(encoding="utf-8"))
        seen.extend(notifications(app))
    for shown in seen:
        assert corpus.leaks(shown) == []


def test_agent_commands_errors_and_bulk_lines_leak_nothing(rt: Cli) -> None:
    token = corpus.SHAPES[2][0]  # a GitHub token
    metadata = json.dumps({"api_key": "Leak044Key", "notes": [f"uses {token}"]})
    outputs = [
        rt("sessions", "register", "--id", "s1", "--agent", "a1", "--run", "r1", "--adapter",
           "codex", "--cwd", "/w", "--metadata", metadata, "--json"),
        rt("sessions", "heartbeat", "--session", "s1", "--waiting", f"approve {token}", "--json"),
        rt("sessions", "list", "--json"),
        rt("sessions", "list"),
        rt("sessions", "end", "--session", "s1", "--json"),
        rt("sessions", "show", "--session", token),
        rt("sessions", "show", "--session", token, "--json"),
        rt("sessions", "pause", "--session", "s1", "--session", token),
        rt("sessions", "pause", "--session", "s1", "--session", token, "--json"),
    ]  # fmt: skip
    for result in outputs:
        assert corpus.leaks(result.stdout + result.stderr) == []
    assert [result.exit_code for result in outputs] == [0, 0, 0, 0, 0, 1, 1, 1, 1]
    assert "[REDACTED]" in outputs[5].stderr and "[REDACTED]" in outputs[8].stdout
    waiting = json.loads(outputs[2].stdout)["items"][0]["waiting"]
    assert waiting["reason"] == "approve [REDACTED]"
    # The store keeps what the agent sent: the backup is whole.
    assert "Leak044Key" in rt("export").stdout
