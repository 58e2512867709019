"""Replies with the real Claude Code CLI (issue 30, point 5): `claude -p` against the loopback
model stand-in (tests/fake_models.py), the hooks installed by `roundtable hooks install
claude-code --reply-wait N`. Its turn done, the Stop hook listens; a human's reply (`roundtable
reply`, or an operator through a real `roundtable serve`) reaches the model as the text to go on
with, and the next turn's wait runs out with the agent unharmed. SQLite; every wait bounded,
loopback only."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from roundtable_console.agents.replying import reply_route
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import open_store
from roundtable_console.store.replies.sending import ReplyRoute
from tests import http_calls
from tests import test_agents_real as real
from tests.api_support import assert_problem, seed_workspace
from tests.fake_models import REPLY_MARK
from tests.hook_support import history
from tests.serve_support import serve_env, serving
from tests.test_agents_real import CLAUDE, _claude_env, _install, _need, _only_session, _url
from tests.test_requests_real import ROUNDTABLE, _finished, _stop

api = real.api
place = real.place

REPLY_WAIT = 15  # the second turn's wait, which no one answers, runs this out (the first is
# answered by two CLI processes in a row: on a loaded machine each can take seconds)
LISTEN_SECONDS = 90  # the first turn is done and its hook listens by then, or the test fails


@pytest.fixture
def finishing_claude(
    place: dict[str, Path], api: Any
) -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Starts ``claude -p`` with the hooks installed with ``--reply-wait``: its turn done, its
    Stop hook listens for a reply. A run a failed test left behind is stopped."""
    started: list[subprocess.Popen[str]] = []

    def start(*more: str) -> subprocess.Popen[str]:
        env = _claude_env(place, api)
        _install("claude-code", place, env, "--project", str(place["project"]),
                 "--reply-wait", str(REPLY_WAIT), *more)  # fmt: skip
        settings = json.loads((place["project"] / ".claude" / "settings.json").read_text())
        [entry] = settings["hooks"]["Stop"]
        [command] = entry["hooks"]
        assert command["command"].endswith(f"--reply-wait {REPLY_WAIT}")
        assert command["timeout"] == REPLY_WAIT + 15  # the hook, not the agent, ends the wait
        process = subprocess.Popen(
            [str(_need(CLAUDE)), "-p", "tell me when you are done", "--output-format", "json"],
            cwd=place["project"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started.append(process)
        return process

    yield start
    for process in started:
        _stop(process)


def _listening(place: dict[str, Path], claude: subprocess.Popen[str]) -> tuple[str, ReplyRoute]:
    """The run's session once its Stop hook listens for a reply (bounded)."""
    store = open_store(_url(place))
    deadline = time.monotonic() + LISTEN_SECONDS
    try:
        while True:
            sessions = _sessions(place)
            if len(sessions) == 1:
                route = reply_route(store, sessions[0])
                if route.via == "hook":
                    return sessions[0], route
            if claude.poll() is not None or time.monotonic() > deadline:
                raise AssertionError(f"no hook listened: {_stop(claude)[-3000:]}")
            time.sleep(0.05)
    finally:
        store.dispose()


def _sessions(place: dict[str, Path]) -> list[str]:
    import sqlite3

    if not place["db"].exists():
        return []
    with sqlite3.connect(place["db"]) as conn:
        try:
            return [row[0] for row in conn.execute("SELECT id FROM agent_sessions")]
        except sqlite3.OperationalError:  # the store is being made
            return []


def _model_read(api: Any, words: str) -> bool:
    """The model was sent ``words`` as the conversation's text."""
    return any(words in json.dumps(body.get("messages") or []) for _path, body in api.requests)


def _replies(place: dict[str, Path], sid: str) -> list[dict[str, Any]]:
    return [payload for kind, payload in history(_url(place), sid) if kind == "replied"]


def _checked_run(place: dict[str, Path], api: Any, claude: subprocess.Popen[str], sid: str,
                 words: str, actor: str) -> None:  # fmt: skip
    started = time.monotonic()
    result = _finished(claude)
    # The second turn's hook listened its whole wait, then let the run end as it would have.
    assert time.monotonic() - started >= REPLY_WAIT - 1
    assert result["result"], result  # the model's answer to the reply ended the run
    assert _model_read(api, words)
    assert _replies(place, sid) == [{"via": "hook", "message": words}]
    with_actor = [row for row in _audit(place, sid) if row["event_type"] == "replied"]
    assert [row["actor"] for row in with_actor] == [actor]


def _audit(place: dict[str, Path], sid: str) -> list[dict[str, Any]]:
    import sqlite3

    with sqlite3.connect(place["db"]) as conn:
        conn.row_factory = sqlite3.Row
        rows = conn.execute(
            "SELECT event_type, actor FROM agent_session_events WHERE session_id = ?", (sid,)
        )
        return [dict(row) for row in rows]


def test_a_reply_from_the_command_line_is_what_the_agent_goes_on_with(
    place: dict[str, Path], api: Any, finishing_claude: Any
) -> None:
    claude = finishing_claude()
    sid, route = _listening(place, claude)
    assert sid == _only_session(place)
    assert "Claude Code's Stop hook" in route.words
    words = f"Now the tests, please ({REPLY_MARK})."
    assert not _model_read(api, words)

    shown = subprocess.run(
        [ROUNDTABLE, "reply", sid, "--db", _url(place), "--json"],
        capture_output=True, text=True, timeout=60, env=serve_env(place["home"]),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["via"] == "hook"
    sent = subprocess.run(
        [ROUNDTABLE, "reply", sid, words, "--operator", "alice", "--db", _url(place)],
        capture_output=True, text=True, timeout=60, env=serve_env(place["home"]),
    )  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout.strip() == f"Replied to {sid} through its hook, as alice."

    _checked_run(place, api, claude, sid, words, "alice")


def test_an_operator_replies_over_http_and_a_viewer_or_the_agent_cannot(
    place: dict[str, Path], api: Any, finishing_claude: Any, tmp_path: Path
) -> None:
    url = _url(place)
    store = open_store(url)
    try:
        seed_workspace(store, "ws-real")
        tokens = {
            name: create_token(store=store, name=name, role=role, agent_id=agent).token
            for name, role, agent in (
                ("ops", "operator", None),
                ("watcher", "viewer", None),
                ("coder-bot", "agent", "coder"),  # the waiting agent's own token
            )
        }
    finally:
        store.dispose()
    words = f"Carry on with the docs ({REPLY_MARK})."
    with serving(url, tmp_path / "serve-home") as served:
        claude = finishing_claude("--workspace", "ws-real", "--agent", "coder")
        sid, _route = _listening(place, claude)
        path = f"{served.url}/api/v1/workspaces/ws-real/sessions/{sid}/reply"

        def send(token: str, key: str, message: str) -> httpx.Response:
            return http_calls.post(
                path,
                json={"message": message},
                headers={"Authorization": f"Bearer {token}", "Idempotency-Key": key},
                timeout=30,
            )

        shown = http_calls.get(
            path, headers={"Authorization": f"Bearer {tokens['watcher']}"}, timeout=30
        )
        assert shown.status_code == 200, shown.text
        assert shown.json()["via"] == "hook"
        assert_problem(send(tokens["watcher"], "viewer-1", "ship it"), 403, "forbidden")
        assert_problem(send(tokens["coder-bot"], "agent-1", "ship it"), 403, "forbidden")
        assert claude.poll() is None and _replies(place, sid) == []  # still listening

        sent = send(tokens["ops"], "ops-1", words)
        assert sent.status_code == 200, sent.text
        assert (sent.json()["via"], sent.json()["replied_by"]) == ("hook", "ops")
        _checked_run(place, api, claude, sid, words, "ops")
