"""``roundtable tokens create|list|revoke`` (issue 20 point 3): a token printed once and kept
hashed, its reach, its state, and the refusals, on the CLI as a user runs it."""

from __future__ import annotations

import hashlib
import json

from sqlalchemy import text

from roundtable_console.store.access.tokens import identify
from roundtable_console.store.db.database import open_store
from tests.helpers import Cli, last_stderr_line


def stored(rt: Cli) -> list[tuple[str, ...]]:
    store = open_store(rt.url)
    try:
        with store.read() as db:
            rows = db.execute(text("SELECT * FROM api_tokens ORDER BY name")).all()
        return [tuple(row) for row in rows]
    finally:
        store.dispose()


def test_a_token_is_printed_once_and_only_its_hash_is_kept(rt: Cli) -> None:
    made = rt.json("tokens", "create", "--name", "ci-bot", "--role", "agent", "--agent", "a1",
                   "--workspace", "ws-1", "--workspace", "ws-2", "--expires", "30d")  # fmt: skip
    assert set(made) == {"name", "role", "token", "workspaces", "agent", "expires_at"}
    assert (made["name"], made["role"], made["agent"]) == ("ci-bot", "agent", "a1")
    assert made["workspaces"] == ["ws-1", "ws-2"] and made["token"].startswith("rt_")
    assert made["expires_at"] == "2026-10-17T17:26:35.000000Z"  # the test clock, plus 30 days
    (row,) = stored(rt)
    assert made["token"] not in json.dumps(row)
    assert hashlib.sha256(made["token"].encode()).hexdigest() in row
    text_mode = rt("tokens", "create", "--name", "ops", "--role", "operator")
    assert text_mode.exit_code == 0
    token = text_mode.stdout.strip()
    assert token.startswith("rt_") and len(token) > 40
    assert "shown this once" in text_mode.stderr and token not in text_mode.stderr
    store = open_store(rt.url)
    try:
        with store.read() as db:
            assert identify(db, token, clock=rt.clock).name == "ops"
    finally:
        store.dispose()


def test_list_shows_every_token_with_its_state_never_a_token(rt: Cli) -> None:
    made = rt.json("tokens", "create", "--name", "ops", "--role", "operator")
    rt.json("tokens", "create", "--name", "brief", "--role", "viewer", "--expires", "1h")
    rt.clock.advance(hours=2)
    listed = rt.json("tokens", "list")
    assert [(item["name"], item["state"]) for item in listed["items"]] == [
        ("brief", "expired"),
        ("ops", "active"),
    ]
    assert made["token"] not in json.dumps(listed)
    assert "token_hash" not in json.dumps(listed)
    revoked = rt.json("tokens", "revoke", "--name", "ops")
    assert revoked["state"] == "revoked" and revoked["revoked_at"]
    again = rt.json("tokens", "revoke", "--name", "ops")
    assert again["revoked_at"] == revoked["revoked_at"]  # the first revocation stands
    table = rt("tokens", "list")
    assert "ops" in table.stdout and "revoked" in table.stdout


def test_refusals_say_why_and_write_nothing(rt: Cli) -> None:
    rt.json("tokens", "create", "--name", "ops", "--role", "operator")
    cases = [
        (("--name", "ops", "--role", "viewer"), 2, "exists"),
        (("--name", "bad name", "--role", "viewer"), 2, "letters, digits"),
        (("--name", "bot", "--role", "agent"), 2, "--agent"),
        (("--name", "x", "--role", "viewer", "--agent", "a"), 2, "Only an agent token"),
        (("--name", "x", "--role", "viewer", "--expires", "soon"), 2, "not a duration"),
        (("--name", "x", "--role", "root"), 2, "root"),
    ]
    for args, code, words in cases:
        result = rt("tokens", "create", *args, "--json")
        assert result.exit_code == code, (args, result.stderr)
        assert words in last_stderr_line(result), (args, result.stderr)
    missing = rt("tokens", "revoke", "--name", "nobody", "--json")
    assert missing.exit_code == 1
    assert json.loads(last_stderr_line(missing))["error"]["code"] == "token_not_found"
    assert [row[0] for row in stored(rt)] == ["ops"]


def test_a_read_only_roundtable_refuses_to_make_or_revoke_tokens(rt: Cli) -> None:
    result = rt("tokens", "create", "--name", "ops", "--role", "operator", "--read-only", "--json")
    assert result.exit_code == 1
    assert json.loads(last_stderr_line(result))["error"]["code"] == "read_only"
    assert stored(rt) == []
