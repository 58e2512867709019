"""A session created by an operator over HTTP, as the reference creates one (its ``POST
…/sessions``): no process is started; the agent registers, beats and ends it afterwards."""

from __future__ import annotations

import json
import secrets

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from roundtable_console.store import validation
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import Agent, AgentSession
from roundtable_console.store.db.session_rows import SESSIONS
from roundtable_console.store.errors import AgentNotFound, SessionCreateConflict
from roundtable_console.store.reads.sessions import get_session
from roundtable_console.store.reads.workspaces import get_workspace
from roundtable_console.store.writes.history import append_session_event
from roundtable_console.store.writes.write_values import registered_payload

_AGENTS = Agent.__table__  # type: ignore[attr-defined]
PLACEHOLDER = "{{external_session_id}}"


def create_session(
    *,
    db: Connection,
    workspace_id: str,
    agent_id: str,
    run_id: str,
    adapter: str,
    provider: str | None = None,
    model: str | None = None,
    external_session_id: str | None = None,
    clock: Clock = system_clock,
) -> AgentSession:
    """The reference's create: agent, run and adapter required after trimming; the agent must
    exist (enabled or not), the run is not checked. The id is ``session-<Unix nanoseconds>``,
    the status ``starting``, the working directory the workspace's root, the metadata the
    workspace and its default branch, the stored resume command ``<adapter> resume
    {{external_session_id}}``. A ``registered`` history row, in the same transaction."""
    agent = validation.required("Agent", agent_id)
    run = validation.required("Run", run_id)
    adapter_name = validation.required("Adapter", adapter)
    workspace = get_workspace(db=db, workspace_id=workspace_id)
    known = db.execute(select(_AGENTS.c.id).where(_AGENTS.c.id == agent)).scalar_one_or_none()
    if known is None:
        raise AgentNotFound(f"No agent has the id {agent!r}.")
    moment = clock()
    now = format_ts(moment)
    # The reference's id, Unix nanoseconds; the clock reads microseconds, the rest is random.
    session_id = f"session-{int(moment.timestamp() * 1_000_000) * 1000 + secrets.randbelow(1000)}"
    metadata = {"workspace_id": workspace.id, "branch": workspace.default_branch}
    try:
        with db.begin_nested():
            db.execute(
                insert(SESSIONS).values(
                    id=session_id,
                    agent_id=agent,
                    run_id=run,
                    adapter=adapter_name,
                    provider=validation.optional(provider),
                    model=validation.optional(model),
                    external_session_id=validation.optional(external_session_id),
                    external_resume_command=f"{adapter_name} resume {PLACEHOLDER}",
                    working_directory=workspace.root_path,
                    status="starting",
                    started_at=now,
                    last_seen_at=now,
                    metadata_json=json.dumps(metadata, sort_keys=True),
                    version=0,
                )
            )
    except IntegrityError:
        raise SessionCreateConflict(
            f"A session with the id {session_id!r} exists already; nothing was created. Retry."
        ) from None
    append_session_event(
        db,
        session_id=session_id,
        event_type="registered",
        payload=registered_payload(status="starting", adapter=adapter_name),
        now=now,
    )
    return get_session(db=db, session_id=session_id)
