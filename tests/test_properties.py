"""Register, heartbeat and end against a small in-Python model of the reference rules (§5).

A Hypothesis state machine drives random sequences on a SQLite store and, after every step,
compares every session row, its history count and the list order with the model.
"""

from __future__ import annotations

import atexit
import shutil
import tempfile
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule
from sqlalchemy import text

from roundtable_console.store.clock import format_ts
from roundtable_console.store.db.database import open_store, sqlite_url
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import SessionNotFound
from roundtable_console.store.reads import keyset, sessions
from roundtable_console.store.writes import agent_writes
from tests.conftest import FakeClock

IDS = st.sampled_from(["s1", "s2", "s3"])
AGENTS = st.sampled_from(["agent-a", "agent-b"])
# None and blanks mean "not given"; the rest are values, some needing a trim.
STATUSES = st.sampled_from([None, "", "  ", "active", "paused", " running ", "custom state"])
EXTERNAL_IDS = st.sampled_from([None, "", "   ", "ext-1", " ext-2 "])
# Whole milliseconds: SQLite's julianday() orders to the millisecond (see the report).
STEPS = st.integers(min_value=0, max_value=5_000)


@dataclass(frozen=True)
class Expected:
    agent_id: str
    status: str
    started_at: str
    last_seen_at: str
    ended_at: str | None
    external_session_id: str | None
    version: int
    history: int


def given(value: str | None) -> str | None:
    """A value the reference treats as given: non-empty after trimming."""
    return value.strip() if value and value.strip() else None


@cache
def template_database() -> Path:
    """One migrated SQLite file, copied for each example (migrating costs more than copying)."""
    directory = tempfile.mkdtemp(prefix="rt-props-")
    atexit.register(shutil.rmtree, directory, True)
    path = Path(directory) / "template.db"
    open_store(sqlite_url(path)).dispose()
    return path


class SessionRules(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = Path(tempfile.mkdtemp(prefix="rt-props-"))
        path = self.directory / "roundtable.db"
        shutil.copyfile(template_database(), path)
        self.store = open_store(sqlite_url(path))
        self.clock = FakeClock(datetime(2026, 9, 17, 17, 0, tzinfo=UTC))
        self.model: dict[str, Expected] = {}

    def teardown(self) -> None:
        self.store.dispose()
        shutil.rmtree(self.directory, ignore_errors=True)

    @rule(milliseconds=STEPS)
    def time_passes(self, milliseconds: int) -> None:
        self.clock.now += timedelta(milliseconds=milliseconds)

    @rule(session_id=IDS, agent_id=AGENTS, status=STATUSES, external=EXTERNAL_IDS)
    def register(self, session_id: str, agent_id: str, status: str | None, external: str | None):
        with self.store.write() as db:
            agent_writes.register(
                db=db,
                session_id=session_id,
                agent_id=agent_id,
                run_id="run-1",
                adapter="codex",
                working_directory="/w",
                status=status,
                external_session_id=external,
                clock=self.clock,
            )
        now = format_ts(self.clock())
        before = self.model.get(session_id)
        self.model[session_id] = Expected(
            agent_id=agent_id,
            status=given(status) or "active",
            started_at=before.started_at if before else now,
            last_seen_at=now,
            ended_at=None,
            external_session_id=given(external),
            version=before.version + 1 if before else 0,
            history=before.history + 1 if before else 1,
        )

    @rule(session_id=IDS, status=STATUSES, external=EXTERNAL_IDS)
    def heartbeat(self, session_id: str, status: str | None, external: str | None):
        before = self.model.get(session_id)
        try:
            with self.store.write() as db:
                agent_writes.heartbeat(
                    db=db,
                    session_id=session_id,
                    status=status,
                    external_session_id=external,
                    clock=self.clock,
                )
        except SessionNotFound:
            assert before is None
            return
        assert before is not None
        self.model[session_id] = replace(
            before,
            status=given(status) or before.status,
            external_session_id=given(external) or before.external_session_id,
            last_seen_at=format_ts(self.clock()),
            version=before.version + 1,
            history=before.history + 1,
        )

    @rule(session_id=IDS, status=STATUSES)
    def end(self, session_id: str, status: str | None):
        before = self.model.get(session_id)
        try:
            with self.store.write() as db:
                agent_writes.end(db=db, session_id=session_id, status=status, clock=self.clock)
        except SessionNotFound:
            assert before is None
            return
        assert before is not None
        now = format_ts(self.clock())
        self.model[session_id] = replace(
            before,
            status=given(status) or "ended",
            ended_at=now,
            last_seen_at=now,
            version=before.version + 1,
            history=before.history + 1,
        )

    def _stored(self) -> dict[str, Expected]:
        with self.store.read() as db:
            rows = db.execute(text("SELECT * FROM agent_sessions")).all()
            counts = dict(
                db.execute(
                    text("SELECT session_id, COUNT(*) FROM agent_session_events GROUP BY 1")
                ).all()
            )
        found = {}
        for row in rows:
            session = AgentSession(**row._mapping)
            found[session.id] = Expected(
                agent_id=session.agent_id,
                status=session.status,
                started_at=session.started_at,
                last_seen_at=session.last_seen_at or "",
                ended_at=session.ended_at,
                external_session_id=session.external_session_id,
                version=session.version,
                history=counts.get(session.id, 0),
            )
        return found

    @invariant()
    def rows_match_the_model(self) -> None:
        assert self._stored() == self.model

    @invariant()
    def status_counts_match_the_model(self) -> None:
        with self.store.read() as db:
            counted = keyset.count_by_status(db=db)
        expected: dict[str, int] = {}
        for session in self.model.values():
            expected[session.status] = expected.get(session.status, 0) + 1
        assert counted == expected

    @invariant()
    def list_is_ordered_by_start_then_id(self) -> None:
        with self.store.read() as db:
            listed = [s.id for s in sessions.list_sessions(db=db, limit=2).items]
            cursor = sessions.list_sessions(db=db, limit=2).next_cursor
            while cursor is not None:
                page = sessions.list_sessions(db=db, limit=2, cursor=cursor)
                listed.extend(s.id for s in page.items)
                cursor = page.next_cursor
        expected = sorted(self.model, key=lambda i: (self.model[i].started_at, i))
        assert listed == expected


SessionRules.TestCase.settings = settings(
    max_examples=40,
    stateful_step_count=15,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestSessionRules = SessionRules.TestCase
