"""The demo tells the agents' loop, through the real console on `tui --demo`'s own store: the
Claude Code session asking a permission is allowed with y (and the console says nobody listens),
the one whose turn is done says with m why no reply can go, and its transcript is read. And
`serve --demo` serves the same: the request to answer, the transcript to read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from roundtable_console.store.replies.sending import NOTHING_LISTENS
from roundtable_console.store.requests.asking import read_request
from roundtable_console.store.requests.records import NOBODY_LISTENS
from roundtable_console.store.writes.demo_agents import REQUEST_ID, TURN_DONE
from roundtable_console.tui.config import resolve_demo_url
from tests import http_calls
from tests.conftest import FakeClock
from tests.serve_support import serving
from tests.test_tui_requests import until
from tests.test_tui_support import FROZEN, console, notifications, press, screen_text

pytestmark = pytest.mark.usefixtures("isolated_env")


async def only(pilot: Any, session_id: str) -> None:
    """The list filtered to one session, its row under the cursor."""
    await press(pilot, "slash")
    await pilot.press(*session_id)
    await press(pilot, "enter")
    await until(pilot, lambda: "row 1 of 1" in screen_text(pilot.app))


def flat(text: str) -> str:
    return " ".join(text.split())


async def test_the_demo_asks_finishes_a_turn_and_shows_a_transcript() -> None:
    # The console's own clock throughout: the demo is seeded, read and decided on it.
    app = console(resolve_demo_url(db=None), demo=True, clock=FakeClock(FROZEN))
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: any("Seeded the demo" in n for n in notifications(app)))
        store = app.ctx.store
        assert store is not None
        await only(pilot, "sess-00002")
        await press(pilot, "y")
        await until(pilot, lambda: "Permission request" in screen_text(app))
        shown = flat(screen_text(app))
        assert "asks to run Bash: rm -rf build/" in shown
        assert flat(NOBODY_LISTENS) in shown
        await pilot.pause(0.5)  # y is not taken in the dialog's first moment
        await press(pilot, "y")
        await until(pilot, lambda: read_request(store, REQUEST_ID).state != "pending")
        assert read_request(store, REQUEST_ID).state == "allowed"
        assert read_request(store, REQUEST_ID).decided_by == app.ctx.operator
        told = [n for n in notifications(app) if n.startswith("Allowed")]
        assert told and told[-1].endswith(NOBODY_LISTENS)

        await press(pilot, "escape")  # the filter cleared
        await only(pilot, "sess-00010")
        assert "turn done" in screen_text(app)
        await press(pilot, "m")
        await until(pilot, lambda: NOTHING_LISTENS in notifications(app))
        await press(pilot, "enter", "8")
        await until(pilot, lambda: "entries from the agent's transcript" in screen_text(app))
        shown = screen_text(app)
        assert TURN_DONE in shown and "error: --- FAIL: TestHeartbeatBody" in shown
        assert "you   › Make the heartbeat endpoint refuse bodies over 64 KiB" in shown


def test_serve_demo_seeds_and_serves_the_loop(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    with serving(url, tmp_path / "home", "--demo") as served:
        assert "Seeded the demo store with 24 sessions." in served.said
        one = f"{served.url}/api/v1/workspaces/ws-harbor/sessions"
        who = {"X-Actor-ID": "maria"}
        asks = http_calls.get(f"{one}/sess-00002/requests", headers=who, timeout=10).json()
        assert [item["reason"] for item in asks["items"]] == ["asks to run Bash: rm -rf build/"]
        page = http_calls.get(f"{one}/sess-00010/transcript", headers=who, timeout=10).json()
        assert page["available"] and page["items"][-1]["text"] == TURN_DONE
    assert len(list((tmp_path / "demo-agents").rglob("*.jsonl"))) == 2
    with serving(url, tmp_path / "home", "--demo") as again:
        assert "Seeded" not in again.said  # once: a store with sessions is left as it is
