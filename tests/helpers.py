"""Helpers shared by several test files: a session registered with everyday defaults, reads of
raw rows and history, every error code, and the CLI run in-process."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from click.testing import CliRunner, Result
from sqlalchemy import Connection, func, insert, select, text
from sqlalchemy import table as sql_table

from roundtable_console.store.clock import Clock
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import DatabaseUnavailable
from roundtable_console.store.reads import sessions
from roundtable_console.store.writes import agent_writes
from roundtable_console.store.writes.transfer import export_records
from roundtable_console.tui.cli import cli
from roundtable_console.tui.cli.invocation import CliState
from tests.conftest import FakeClock

# Every error code: the reference's names (``docs/reference/roundtable.md#errors``), then ours.
DESIGN_ERROR_CODES = frozenset(
    {
        "invalid_session",
        "invalid_session_status",
        "session_not_found",
        "agent_not_found",
        "agent_unavailable",
        "illegal_session_transition",
        "session_transition_conflict",
        "session_branch_conflict",
        "termination_impact_required",
        "idempotency_key_required",
        "idempotency_key_reuse",
        "invalid_limit",
        "invalid_cursor",
        "invalid_import",
        "database_unavailable",
        "read_only",
        "not_launchable",
        "host_unavailable",
        # The server's (issue 20): identities, workspaces, created sessions, event positions.
        "invalid_token",
        "invalid_token_request",
        "token_not_found",
        "device_not_found",
        "invalid_device",
        "workspace_not_found",
        "session_create_conflict",
        "invalid_event_cursor",
        # Permission requests and replies (issue 30).
        "request_not_found",
        "request_already_settled",
        "invalid_decision",
        "not_deliverable",
        "no_reply_path",
        "invalid_reply",
        # Hooks asking through the server, and hosts (issue 41).
        "too_many_pending_requests",
        "invalid_host",
        "agent_not_running",
        # A client of the server: the command line and the console through it (issue 42).
        "server_unavailable",
        "not_through_server",
        # New sessions on a host (issue 43).
        "invalid_new_session",
        "not_started",
        "not_finishable",
        "worktree_not_clean",
    }
)


def seed_listener(url: str, session_id: str, listener_id: str = "reply-1") -> None:
    """A Stop hook listening for a reply to ``session_id`` (``store.replies.listeners``), its
    session waiting for a prompt."""
    from sqlalchemy import text

    opened = open_store(url)
    try:
        with opened.write() as db:
            db.execute(
                text(
                    "INSERT INTO reply_listeners (id, session_id, agent, opened_at, expires_at,"
                    " state) VALUES (:id, :session, 'claude-code', '2026-09-17T10:00:00.000000Z',"
                    " '2999-01-01T00:00:00.000000Z', 'listening')"
                ),
                {"id": listener_id, "session": session_id},
            )
            db.execute(
                text(
                    "UPDATE agent_sessions SET waiting_reason = 'waits for a prompt',"
                    " waiting_since = '2026-09-17T10:00:00.000000Z' WHERE id = :session"
                ),
                {"session": session_id},
            )
    finally:
        opened.dispose()


def seed_request(
    url: str,
    request_id: str,
    session_id: str,
    *,
    agent: str = "claude-code",
    state: str = "pending",
    asked_at: str = "2026-09-17T10:00:00.000000Z",
    expires_at: str = "2999-01-01T00:00:00.000000Z",
) -> None:
    """A permission request as a hook records it (``store.requests.asking``)."""
    from sqlalchemy import text

    answers = "" if agent == "gemini" else "allow,deny"
    opened = open_store(url)
    try:
        with opened.write() as db:
            db.execute(
                text(
                    "INSERT INTO permission_requests (id, session_id, agent, tool_name,"
                    " tool_input_json, input_cut, answers, reason, asked_at, expires_at, state)"
                    " VALUES (:id, :session, :agent, 'Bash', '{\"command\": \"make\"}', 0,"
                    " :answers, 'asks to run Bash: make', :asked, :expires, :state)"
                ),
                {"id": request_id, "session": session_id, "agent": agent, "answers": answers,
                 "asked": asked_at, "expires": expires_at, "state": state},
            )  # fmt: skip
    finally:
        opened.dispose()


SESSION_DEFAULTS: dict[str, Any] = {
    "agent_id": "a",
    "run_id": "r",
    "adapter": "codex",
    "working_directory": "/w",
}


def register_session(
    db: Connection, session_id: str = "s1", *, clock: Clock | None = None, **values: Any
) -> AgentSession:
    """``agent_writes.register`` with the required fields filled in; ``values`` override them."""
    extra = {"clock": clock} if clock is not None else {}
    return agent_writes.register(
        db=db, session_id=session_id, **{**SESSION_DEFAULTS, **values}, **extra
    )


def session_row(store: Store, session_id: str = "s1") -> dict[str, Any]:
    """The stored row as the database holds it (no model in between)."""
    with store.read() as db:
        found = db.execute(
            text("SELECT * FROM agent_sessions WHERE id = :id"), {"id": session_id}
        ).one()
    return dict(found._mapping)


def count(store: Store, table: Any) -> int:
    """Rows in a table, named or given as a Table."""
    source = sql_table(table) if isinstance(table, str) else table
    with store.read() as db:
        return int(db.execute(select(func.count()).select_from(source)).scalar_one())


def history(store: Store, session_id: str = "s1") -> list[tuple[str, dict[str, Any]]]:
    """The session's ``agent_session_events``, oldest first, payloads decoded."""
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT event_type, payload_json FROM agent_session_events "
                "WHERE session_id = :id ORDER BY id"
            ),
            {"id": session_id},
        ).all()
    return [(event_type, json.loads(payload)) for event_type, payload in rows]


def last_stderr_line(result: Result) -> str:
    """What a command said last on stderr: its error line."""
    return result.stderr.strip().splitlines()[-1]


@dataclass
class Cli:
    """The real CLI in-process against one store, with a clock the test moves."""

    url: str
    clock: FakeClock

    def __call__(self, *args: str, input: str | None = None, db: bool = True) -> Result:
        argv = [*args, "--db", self.url] if db else list(args)
        result = CliRunner().invoke(cli, argv, input=input, obj=CliState(clock=self.clock))
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            result.exception
        )
        assert "Traceback" not in result.output
        return result

    def register(self, session_id: str = "s1", *extra: str, agent: str = "a1") -> Result:
        result = self(
            "sessions", "register", "--id", session_id, "--agent", agent, "--run", "r1",
            "--adapter", "codex", "--cwd", "/work", *extra,
        )  # fmt: skip
        assert result.exit_code == 0, result.stderr
        return result

    def json(self, *args: str) -> Any:
        result = self(*args, "--json")
        assert result.exit_code == 0, result.stderr
        return json.loads(result.stdout)

    def with_store(self, action: Callable[[Store], Any]) -> Any:
        opened = open_store(self.url)
        try:
            return action(opened)
        finally:
            opened.dispose()

    def session(self, session_id: str) -> AgentSession:
        def read(opened: Store) -> AgentSession:
            with opened.read() as db:
                return sessions.get_session(db=db, session_id=session_id)

        return self.with_store(read)  # type: ignore[no-any-return]

    def session_row(self, session_id: str) -> dict[str, Any]:
        return self.with_store(lambda opened: session_row(opened, session_id))  # type: ignore[no-any-return]

    def insert(self, model: Any, **values: Any) -> None:
        def write(opened: Store) -> None:
            with opened.write() as db:
                db.execute(insert(model.__table__).values(**values))

        self.with_store(write)

    def rows(self, model: Any) -> list[Any]:
        def read(opened: Store) -> list[Any]:
            with opened.read() as db:
                return list(db.execute(select(model.__table__)).all())

        return self.with_store(read)  # type: ignore[no-any-return]

    def dump(self) -> list[str]:
        """Every record of the store, to prove a refusal changed nothing."""

        def export(opened: Store) -> list[str]:
            lines: list[str] = []
            with opened.read() as db:
                export_records(db=db, write=lines.append)
            return lines

        return self.with_store(export)  # type: ignore[no-any-return]


class UnavailableAtCommit:
    """A write transaction that fails as it commits, as when the server goes away."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __enter__(self) -> Any:
        return self.inner.__enter__()

    def __exit__(self, *exc: Any) -> bool:
        self.inner.__exit__(RuntimeError, RuntimeError("gone"), None)
        raise DatabaseUnavailable("The database is unavailable: gone. Retry.")
