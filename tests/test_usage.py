"""Issue 46 point 2: what a session spent, from its agent's own transcript (``agents.usage``), kept
as its ``metadata.usage`` (``store.writes.usage_values``): each agent's records summed once, read
from where the last hook stopped, the agent's own cost where it states one, an estimate from the
prices where it does not, and "unknown" rather than 0; through the store and through a server."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from roundtable_console.agents.usage import read_usage
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.errors import InvalidSession
from roundtable_console.store.reads.overview import read_overview, usage_amounts
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.usage_values import (
    SHIPPED,
    Price,
    Prices,
    session_usage,
)
from tests.api_support import seed_workspace
from tests.hook_support import CLAUDE_ID, claude, hook, hook_process
from tests.serve_support import serving

pytestmark = pytest.mark.usefixtures("isolated_env")

CLAUDE = f"claude-{CLAUDE_ID}"


def line(**fields: Any) -> str:
    return json.dumps(fields, separators=(",", ":")) + "\n"


def assistant(message_id: str, model: str = "claude-sonnet-4-5", **usage: int) -> str:
    return line(type="assistant", message={"id": message_id, "model": model, "usage": usage})


def user() -> str:
    return line(type="user", message={"role": "user", "content": "go on"})


def tokens(usage: dict[str, Any] | None) -> tuple[int, int, int, int]:
    assert usage is not None
    return (usage["input_tokens"], usage["output_tokens"], usage["cache_read_input_tokens"],
            usage["cache_creation_input_tokens"])  # fmt: skip


# --------------------------------------------------------------------------- reading transcripts


def test_claude_codes_messages_are_counted_once_and_its_own_cost_is_taken(tmp_path: Path):
    transcript = tmp_path / "t.jsonl"
    place = tmp_path / "state"
    transcript.write_text(
        user()
        + assistant("m1", input_tokens=100, output_tokens=1, cache_read_input_tokens=900)
        # The same message written again (another content block): counted once, as last said.
        + assistant("m1", input_tokens=100, output_tokens=40, cache_read_input_tokens=900)
        + line(type="attachment", note='"usage" in words only')
        + user()
        + assistant("m1", input_tokens=7, output_tokens=3, cache_creation_input_tokens=50)
    )
    first = read_usage("claude", str(transcript), place)
    assert tokens(first) == (107, 43, 900, 50) and first is not None
    assert first["model"] == "claude-sonnet-4-5" and "cost_usd" not in first
    assert read_usage("claude", str(transcript), place) is None  # nothing new to tell
    with transcript.open("a") as handle:  # the run's end: the agent's own figure for it all
        handle.write(line(type="cost-state", totalCostUSD=0.25, hasUnknownModelCost=False))
    assert read_usage("claude", str(transcript), place) == {**first, "cost_usd": 0.25}
    with transcript.open("a") as handle:  # a new run: its usage not yet costed by the agent
        handle.write(user() + assistant("m9", input_tokens=1, output_tokens=1))
        handle.write('{"type":"assistant","message":{"id":"m10","usa')  # still being written
    later = read_usage("claude", str(transcript), place)
    assert tokens(later) == (108, 44, 900, 50) and later is not None and "cost_usd" not in later


def test_codex_running_totals_and_gemini_messages_are_read(tmp_path: Path) -> None:
    codex = tmp_path / "rollout.jsonl"

    def counted(total_in: int, cached: int, out: int) -> str:
        total = {"input_tokens": total_in, "cached_input_tokens": cached, "output_tokens": out}
        info = {"total_token_usage": {**total, "total_tokens": total_in + out}}
        return line(type="event_msg", payload={"type": "token_count", "info": info})

    codex.write_text(
        line(type="turn_context", payload={"model": "gpt-5-codex"})
        + counted(100, 40, 10)
        + counted(300, 140, 30)
        + line(type="event_msg", payload={"type": "token_count", "info": None})
        + counted(50, 0, 5)  # a new run counts from 0 again: added to what came before
    )
    usage = read_usage("codex", str(codex), tmp_path / "state")
    assert tokens(usage) == (160 + 50, 35, 140, 0) and usage is not None
    assert usage["model"] == "gpt-5-codex"

    gemini = tmp_path / "session.jsonl"
    said = {"input": 120, "output": 10, "cached": 20, "thoughts": 5, "tool": 0, "total": 135}
    gemini.write_text(
        line(sessionId="x", kind="main")
        + line(type="gemini", id="g1", model="gemini-2.5-pro", tokens={**said, "output": 2})
        + line(**{"$set": {"lastUpdated": "now"}})
        + line(type="gemini", id="g1", model="gemini-2.5-pro", tokens=said)  # written again
        + line(type="user", id="u1", content=[{"text": "and?"}])
        + line(type="gemini", id="g2", model="gemini-2.5-pro", tokens=said)
    )
    usage = read_usage("gemini", str(gemini), tmp_path / "state")
    assert tokens(usage) == (200, 30, 40, 0)


def test_only_what_was_appended_is_read(tmp_path: Path) -> None:
    """Read from where the last hook stopped: what lies before is never read again (here,
    overwritten in place, it would be counted), and a big file is caught up over a few hooks,
    at most 16 MiB each."""
    transcript = tmp_path / "t.jsonl"
    filler = line(type="attachment", text="x" * 1000)
    with transcript.open("w") as handle:
        for _ in range(40_000):  # about 40 MB, of which nothing counts but the last line
            handle.write(filler)
        handle.write(assistant("m1", input_tokens=5, output_tokens=5))
    place = tmp_path / "state"
    told = [read_usage("claude", str(transcript), place) for _ in range(4)]
    assert told[:2] == [None, None]  # 16 MiB at a time: the usage is reached by the third
    assert tokens(told[2]) == (5, 5, 0, 0) and told[3] is None  # told once
    with transcript.open("r+") as handle:  # the start rewritten: not read again
        handle.write(assistant("m0", input_tokens=9999, output_tokens=9999)[:-1])
    with transcript.open("a") as handle:
        handle.write(user() + assistant("m2", input_tokens=1, output_tokens=2))
    assert tokens(read_usage("claude", str(transcript), place)) == (6, 7, 0, 0)
    # Another file in its place (a new inode): read from its start.
    transcript.unlink()
    transcript.write_text(assistant("n1", input_tokens=3, output_tokens=4))
    assert tokens(read_usage("claude", str(transcript), place)) == (3, 4, 0, 0)


def test_a_link_or_a_fifo_is_not_read(tmp_path: Path) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text(assistant("m1", input_tokens=5, output_tokens=5))
    (tmp_path / "link.jsonl").symlink_to(real)
    assert read_usage("claude", str(tmp_path / "link.jsonl"), tmp_path / "state") is None
    import os

    os.mkfifo(tmp_path / "pipe.jsonl")
    assert read_usage("claude", str(tmp_path / "pipe.jsonl"), tmp_path / "state") is None
    assert read_usage("claude", str(tmp_path / "gone.jsonl"), tmp_path / "state") is None


# ------------------------------------------------------------------------------------- its cost


def test_the_cost_is_stated_estimated_or_unknown_never_zero() -> None:
    stated = session_usage({"input_tokens": 10, "output_tokens": 5, "model": "claude-opus-5",
                            "cost_usd": 0.5})  # fmt: skip
    assert (stated["cost_usd"], stated["cost_basis"], stated["total_tokens"]) == (0.5, "stated", 15)
    estimated = session_usage({"input_tokens": 1_000_000, "output_tokens": 1_000_000,
                               "cache_read_input_tokens": 1_000_000,
                               "model": "claude-sonnet-4-5-20250929"})  # fmt: skip
    assert estimated["cost_basis"] == "estimated" and estimated["cost_usd"] == 3 + 15 + 0.3
    assert estimated["priced_as_of"] == SHIPPED.as_of
    assert session_usage({"output_tokens": 1_000_000, "model": "gpt-5-mini"})["cost_usd"] == 2
    unknown = session_usage({"input_tokens": 10, "model": "my-own-model"})
    assert unknown["cost_basis"] == "unknown" and "cost_usd" not in unknown
    assert session_usage({"input_tokens": 10})["cost_basis"] == "unknown"
    own = Prices({"my-own": Price(1.0, 2.0, 0.0, 0.0)}, "2026-11-30")
    mine = session_usage({"input_tokens": 10**6, "model": "my-own-model"}, own)
    assert (mine["cost_usd"], mine["priced_as_of"]) == (1.0, "2026-11-30")


@pytest.mark.parametrize(
    ("usage", "said"),
    [
        ([1, 2], "an object"),
        ({"input_tokens": -1}, "from 0"),
        ({"input_tokens": True}, "from 0"),
        ({"input_tokens": 10**16}, "from 0"),
        ({"cost_usd": float("nan")}, "from 0"),
        ({"model": "x\x1b[2J"}, "no control"),
        ({"model": ""}, "no control"),
        ({"tokens": 5}, "holds no 'tokens'"),
    ],
)
def test_a_bad_report_is_refused_in_words_and_nothing_written(
    store: Store, usage: Any, said: str
) -> None:
    with store.write() as db:
        agent_writes.register(db=db, session_id="s-1", agent_id="a", run_id="r", adapter="claude",
                              working_directory="/w")  # fmt: skip
    with pytest.raises(InvalidSession, match=said), store.write() as db:
        agent_writes.heartbeat(db=db, session_id="s-1", usage=usage)
    with store.read() as db:
        assert get_session(db=db, session_id="s-1").metadata_json is None


# ------------------------------------------------------------------ from the hook to the store


def claude_transcript(home: Path) -> Path:
    transcript = home / ".claude" / "projects" / "-work-project" / f"{CLAUDE_ID}.jsonl"
    transcript.parent.mkdir(parents=True)
    return transcript


def metadata_usage(url: str, session_id: str) -> dict[str, Any] | None:
    store = open_store(url)
    try:
        with store.read() as db:
            found = get_session(db=db, session_id=session_id)
    finally:
        store.dispose()
    return json.loads(found.metadata_json or "{}").get("usage")


def test_each_hook_reports_what_changed_and_the_overview_sums_it(
    store: Store, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ROUNDTABLE_HOOK_SPOOL", str(tmp_path / "state" / "spool.jsonl"))
    transcript = claude_transcript(home)
    transcript.write_text(user())
    where = {"transcript_path": str(transcript)}
    db = ("--db", store_url)
    hook("claude-code", claude("SessionStart", **where), *db)
    assert metadata_usage(store_url, CLAUDE) is None
    with transcript.open("a") as handle:
        handle.write(assistant("m1", model="claude-haiku-4-5", input_tokens=2_000_000,
                               output_tokens=100_000))  # fmt: skip
    hook("claude-code", claude("PostToolUse", tool_name="Bash", tool_input={}, **where), *db)
    usage = metadata_usage(store_url, CLAUDE)
    assert usage is not None and usage["total_tokens"] == 2_100_000
    assert (usage["cost_usd"], usage["cost_basis"]) == (2.5, "estimated")
    assert usage_amounts(usage) == (2_100_000, 2.5)
    with transcript.open("a") as handle:
        handle.write(line(type="cost-state", totalCostUSD=2.4))
    hook("claude-code", claude("SessionEnd", reason="other", **where), *db)
    usage = metadata_usage(store_url, CLAUDE)
    assert usage is not None and (usage["cost_usd"], usage["cost_basis"]) == (2.4, "stated")
    with store.read() as read:  # the overview's bars: its tokens and cost, by agent and run
        overview = read_overview(db=read, now=datetime.now(UTC), stale_after=timedelta(hours=1))
    assert overview.usage["agent", "tokens"].total.tokens == 2_100_000
    assert overview.usage["run", "cost"].total.cost == pytest.approx(2.4)


def test_through_the_server_the_usage_rides_with_the_beat(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    seed_workspace(store, "ws-u")
    token = create_token(store=store, name="bot", role="agent", agent_id="claude-code").token
    home = tmp_path / "agent-home"
    transcript = claude_transcript(home)
    transcript.write_text(assistant("m1", model="mystery-1", input_tokens=11, output_tokens=4))
    where = {"transcript_path": str(transcript)}
    with serving(store_url, tmp_path / "home") as served:
        options = ("--server", served.url, "--workspace", "ws-u", "--token-env", "RT_TOKEN")
        env = {"RT_TOKEN": token, "HOME": str(home),
               "ROUNDTABLE_HOOK_SPOOL": str(tmp_path / "state" / "spool.jsonl")}  # fmt: skip
        for payload in (claude("SessionStart", **where), claude("Stop", **where)):
            done = hook_process("claude-code", payload, *options, env=env)
            assert done.returncode == 0 and done.stderr == "", done.stderr
        usage = metadata_usage(store_url, CLAUDE)
        assert usage == {"input_tokens": 11, "output_tokens": 4, "cache_read_input_tokens": 0,
                         "cache_creation_input_tokens": 0, "total_tokens": 15,
                         "model": "mystery-1", "cost_basis": "unknown"}  # fmt: skip
        url = f"{served.url}/api/v1/workspaces/ws-u/sessions/{CLAUDE}/heartbeat"
        auth = {"Authorization": f"Bearer {token}"}
        for body, code in (
            ({"usage": [1]}, "invalid_request_body"),
            ({"usage": {"input_tokens": -3}}, "invalid_session"),
            ({"usage": {"secret": 1}}, "invalid_session"),
        ):
            answer = httpx.post(url, json=body, headers=auth, timeout=10)
            assert answer.status_code == 400 and answer.json()["code"] == code, answer.text
        assert metadata_usage(store_url, CLAUDE) == usage


def test_the_cost_is_said_for_what_it_is_wherever_shown(store: Store) -> None:
    """The Metrics projection (the console's tab 6, the web's Usage card, the API) says whether
    ``cost_usd`` is the agent's own, an estimate, or unknown."""
    from roundtable_console.store.reads.projections import session_metrics

    reports = {
        "s-stated": {"input_tokens": 5, "cost_usd": 0.1},
        "s-estimated": {"input_tokens": 5, "model": "gpt-5"},
        "s-unknown": {"input_tokens": 5, "model": "x[b]y"},
    }
    with store.write() as db:
        for session_id, usage in reports.items():
            agent_writes.register(db=db, session_id=session_id, agent_id="a", run_id="r",
                                  adapter="codex", working_directory="/w")  # fmt: skip
            agent_writes.heartbeat(db=db, session_id=session_id, usage=usage)
        agent_writes.register(db=db, session_id="s-none", agent_id="a", run_id="r",
                              adapter="codex", working_directory="/w")  # fmt: skip
    with store.read() as db:
        said = {
            sid: session_metrics(db=db, session_id=sid).get("cost") for sid in [*reports, "s-none"]
        }
        metrics = session_metrics(db=db, session_id="s-unknown")["usage"]
    assert said == {
        "s-stated": "stated by the agent",
        "s-estimated": "an estimate, from the prices of 2026-12",
        "s-unknown": "cost unknown: no price for the model x[b]y",
        "s-none": None,
    }
    assert "cost_usd" not in metrics and metrics["total_tokens"] == 5  # no 0 in its place


PRICED = """
prices_as_of = "2026-11-30"
[prices."mystery"]
input = 2.0
output = 8.0
"""


def test_the_configurations_prices_are_used_by_the_hook_and_by_the_server(
    store: Store, store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``[prices]`` in config.toml: over the shipped prices, dated, for the hooks that write
    the store themselves and for ``roundtable serve`` (whose configuration decides for the
    hooks that write through it)."""
    config = tmp_path / "xdg-config" / "roundtable" / "config.toml"  # isolated_env's
    config.parent.mkdir(parents=True)
    config.write_text(PRICED)
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ROUNDTABLE_HOOK_SPOOL", str(tmp_path / "state" / "spool.jsonl"))
    transcript = claude_transcript(home)
    transcript.write_text(
        assistant("m1", model="mystery-2", input_tokens=10**6, output_tokens=10**6)
    )
    hook("claude-code", claude("Stop", transcript_path=str(transcript)), "--db", store_url)
    usage = metadata_usage(store_url, CLAUDE)
    assert usage is not None
    assert (usage["cost_usd"], usage["priced_as_of"]) == (10.0, "2026-11-30")

    seed_workspace(store, "ws-p")
    token = create_token(store=store, name="bot", role="agent", agent_id="claude-code").token
    served_config = tmp_path / "serve-home" / "config" / "roundtable" / "config.toml"
    served_config.parent.mkdir(parents=True)  # the server's own (tests.serve_support)
    served_config.write_text(PRICED)
    with serving(store_url, tmp_path / "serve-home") as served:
        url = f"{served.url}/api/v1/workspaces/ws-p/sessions/{CLAUDE}/heartbeat"
        body = {"usage": {"input_tokens": 2 * 10**6, "model": "mystery-3"}}
        with store.write() as db:  # the session into the server's workspace
            db.execute(text("UPDATE agent_sessions SET workspace_id = 'ws-p'"))
        auth = {"Authorization": f"Bearer {token}"}
        answer = httpx.post(url, json=body, headers=auth, timeout=10)
        assert answer.status_code == 200, answer.text
    usage = metadata_usage(store_url, CLAUDE)
    assert usage is not None and (usage["cost_usd"], usage["cost_basis"]) == (4.0, "estimated")


@pytest.mark.parametrize(
    ("toml", "said"),
    [
        ('prices = "cheap"', "a table"),
        ('[prices.x]\ninput = "2"', "is a number"),
        ("[prices.x]\ninput = -1.0", "is a number"),
        ("[prices.x]\nper_token = 1.0", "holds input, output"),
        ("prices_as_of = 7\n[prices.x]\ninput = 1.0", "prices_as_of"),
    ],
)
def test_a_bad_price_table_is_a_clear_error(tmp_path: Path, toml: str, said: str) -> None:
    from roundtable_console.tui.config import ConfigError, load_settings

    config = tmp_path / "config.toml"
    config.write_text(toml)
    with pytest.raises(ConfigError, match=said):
        load_settings(config)


def test_the_usage_is_merged_into_metadata_written_in_between(
    pg_store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A register that lands between a quiet beat's read and its usage write is kept: the
    usage is merged into the metadata as it is then. PostgreSQL's READ COMMITTED lets such a
    write through; SQLite's write lock keeps it out."""
    store = pg_store
    from roundtable_console.store.writes import usage_values

    with store.write() as db:
        agent_writes.register(db=db, session_id="s-1", agent_id="a", run_id="r",
                              adapter="claude", working_directory="/w",
                              metadata={"transcript_path": "/old"})  # fmt: skip
    merge = usage_values.metadata_with_usage
    raced: list[int] = []

    def meanwhile(metadata_json: str | None, usage: dict[str, Any]) -> str | None:
        if not raced:  # another writer's register, committed before this write's update
            raced.append(1)
            with store.engine.begin() as other:
                written = '{"transcript_path":"/new","workspace_id":"ws-x"}'
                other.execute(
                    text("UPDATE agent_sessions SET metadata_json = :m WHERE id = 's-1'"),
                    {"m": written},
                )
        return merge(metadata_json, usage)

    monkeypatch.setattr(usage_values, "metadata_with_usage", meanwhile)
    with store.write() as db:  # a quiet beat (no update of its own, so no lock on the row)
        agent_writes.heartbeat(db=db, session_id="s-1", quiet_seconds=5.0,
                               usage={"input_tokens": 5})  # fmt: skip
    with store.read() as db:
        kept = json.loads(get_session(db=db, session_id="s-1").metadata_json or "{}")
    assert kept["transcript_path"] == "/new" and kept["workspace_id"] == "ws-x"
    assert kept["usage"]["input_tokens"] == 5


def test_a_line_longer_than_a_read_is_passed_over_and_a_damaged_record_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from roundtable_console.agents import usage

    monkeypatch.setattr(usage, "READ_BUDGET", 1024)
    transcript = tmp_path / "t.jsonl"
    place = tmp_path / "state"
    transcript.write_text(
        assistant("m1", input_tokens=1, output_tokens=1)
        + line(type="user", message={"content": "x" * 5000})  # an attachment, say
        + assistant("m2", input_tokens=2, output_tokens=2)
    )
    told = [read_usage("claude", str(transcript), place) for _ in range(8)]
    assert tokens(told[0]) == (1, 1, 0, 0)
    assert tokens(next(found for found in told[1:] if found)) == (3, 3, 0, 0)
    for state in place.iterdir():  # a record damaged (or of another version): read again
        state.write_text('{"offset": "x"}')
    again = [read_usage("claude", str(transcript), place) for _ in range(8)]
    assert tokens(again[0]) == (1, 1, 0, 0)  # from the start, the sums as they were
    assert tokens(next(found for found in again[1:] if found)) == (3, 3, 0, 0)


def test_a_session_registered_again_is_told_its_usage_again(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A resume registers the session again, whose metadata is written anew: the next beat
    tells the usage even though the transcript has not changed since."""
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("ROUNDTABLE_HOOK_SPOOL", str(tmp_path / "state" / "spool.jsonl"))
    transcript = claude_transcript(home)
    transcript.write_text(assistant("m1", input_tokens=3, output_tokens=4))
    where = {"transcript_path": str(transcript)}
    db = ("--db", store_url)
    hook("claude-code", claude("SessionStart", **where), *db)
    hook("claude-code", claude("Stop", **where), *db)
    assert tokens(metadata_usage(store_url, CLAUDE)) == (3, 4, 0, 0)
    hook("claude-code", claude("SessionStart", source="resume", **where), *db)
    assert metadata_usage(store_url, CLAUDE) is None  # the register's metadata, written anew
    hook("claude-code", claude("UserPromptSubmit", prompt="go on", **where), *db)
    assert tokens(metadata_usage(store_url, CLAUDE)) == (3, 4, 0, 0)
