"""SQLModel tables with the reference store's table and column names
(docs/reference/roundtable.md#the-store).

Everything the reference keeps as TEXT stays TEXT: timestamps are text in several forms, JSON lives
in ``*_json`` columns. Our additions are ``agent_sessions.version`` and ``idempotency_keys``.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Double, Integer, SmallInteger, Table, Text
from sqlmodel import Field, SQLModel

from roundtable_console.store.records import SessionFields


def _text(*, nullable: bool = True, primary_key: bool = False, default: str | None = None) -> str:
    kwargs: dict = {"sa_type": Text, "nullable": nullable, "primary_key": primary_key}
    if default is not None:
        kwargs["default"] = default
    elif nullable:
        kwargs["default"] = None
    return Field(**kwargs)  # type: ignore[no-any-return]


class Workspace(SQLModel, table=True):
    __tablename__ = "workspaces"
    id: str = _text(primary_key=True, nullable=False)
    name: str = _text(nullable=False)
    root_path: str = Field(sa_type=Text, nullable=False, unique=True)
    status: str = _text(nullable=False, default="active")
    created_at: str = _text(nullable=False)
    updated_at: str = _text(nullable=False)
    display_name: str | None = _text()
    root_alias: str | None = _text()
    canonical_repository_identity: str | None = _text()
    default_branch: str | None = _text()
    last_opened_at: str | None = _text()
    revision: int = Field(default=1, sa_type=Integer, nullable=False)


class Agent(SQLModel, table=True):
    __tablename__ = "agents"
    id: str = _text(primary_key=True, nullable=False)
    role: str = _text(nullable=False)
    name: str = _text(nullable=False)
    adapter: str = _text(nullable=False)
    command: str | None = _text()
    status: str = _text(nullable=False, default="idle")
    is_enabled: int = Field(default=1, sa_type=Integer, nullable=False)
    created_at: str | None = _text()


class Run(SQLModel, table=True):
    __tablename__ = "runs"
    id: str = _text(primary_key=True, nullable=False)
    goal: str | None = _text()
    status: str = _text(nullable=False, default="active")
    started_at: str = _text(nullable=False)
    ended_at: str | None = _text()
    metadata_json: str | None = _text()
    workspace_id: str | None = _text()


class Task(SQLModel, table=True):
    __tablename__ = "tasks"
    id: str = _text(primary_key=True, nullable=False)
    title: str = _text(nullable=False)
    body_md: str = _text(nullable=False)
    status: str = _text(nullable=False, default="open")
    priority: int = Field(default=100, sa_type=Integer, nullable=False)
    risk: str = _text(nullable=False, default="normal")
    assigned_agent_id: str | None = _text()
    created_at: str | None = _text()
    updated_at: str | None = _text()


class Claim(SQLModel, table=True):
    __tablename__ = "claims"
    id: str = _text(primary_key=True, nullable=False)
    resource_id: str = _text(nullable=False)
    agent_id: str = _text(nullable=False)
    task_id: str = _text(nullable=False)
    claim_type: str = _text(nullable=False)
    base_hash: str | None = _text()
    status: str = _text(nullable=False, default="active")
    expires_at: str = _text(nullable=False)
    heartbeat_at: str | None = _text()
    renewable: int = Field(default=1, sa_type=Integer, nullable=False)
    resume_policy: str = _text(nullable=False, default="hold")
    rationale_md: str | None = _text()
    created_at: str | None = _text()
    workspace_id: str | None = _text()


class Proposal(SQLModel, table=True):
    __tablename__ = "proposals"
    id: str = _text(primary_key=True, nullable=False)
    task_id: str = _text(nullable=False)
    agent_id: str = _text(nullable=False)
    title: str = _text(nullable=False)
    summary_md: str = _text(nullable=False)
    patch_path: str = _text(nullable=False)
    status: str = _text(nullable=False, default="pending")
    risk: str = _text(nullable=False, default="normal")
    created_at: str | None = _text()
    workspace_id: str | None = _text()
    proposer_session_id: str | None = _text()
    updated_at: str | None = _text()


class Decision(SQLModel, table=True):
    __tablename__ = "decisions"
    id: str = _text(primary_key=True, nullable=False)
    proposal_id: str | None = _text()
    task_id: str | None = _text()
    decision: str = _text(nullable=False)
    rationale_md: str = _text(nullable=False)
    decided_by: str = _text(nullable=False)
    created_at: str | None = _text()


class Event(SQLModel, table=True):
    """The general activity stream."""

    __tablename__ = "events"
    __table_args__ = {"sqlite_autoincrement": True}
    id: int | None = Field(default=None, primary_key=True, sa_type=Integer)
    run_id: str = _text(nullable=False)
    type: str = _text(nullable=False)
    actor_id: str | None = _text()
    task_id: str | None = _text()
    payload_json: str = _text(nullable=False)
    created_at: str = _text(nullable=False)


class AgentSession(SQLModel, SessionFields, table=True):
    """A session row; its behaviour (metadata, active, stale, JSON) is ``SessionFields``."""

    __tablename__ = "agent_sessions"
    id: str = _text(primary_key=True, nullable=False)
    agent_id: str = _text(nullable=False)
    run_id: str = _text(nullable=False)
    adapter: str = _text(nullable=False)
    provider: str | None = _text()
    model: str | None = _text()
    external_session_id: str | None = _text()
    external_resume_command: str | None = _text()
    working_directory: str = _text(nullable=False)
    mcp_socket: str | None = _text()
    status: str = _text(nullable=False, default="active")
    started_at: str = _text(nullable=False)
    last_seen_at: str | None = _text()
    ended_at: str | None = _text()
    metadata_json: str | None = _text()
    workspace_id: str | None = _text()
    version: int = Field(default=0, sa_type=Integer, nullable=False)
    waiting_reason: str | None = _text()
    waiting_since: str | None = _text()
    # The machine the session runs on, as its hook said (migration 0018).
    host: str | None = _text()


class AgentSessionEvent(SQLModel, table=True):
    __tablename__ = "agent_session_events"
    __table_args__ = {"sqlite_autoincrement": True}
    id: int | None = Field(default=None, primary_key=True, sa_type=Integer)
    session_id: str = _text(nullable=False)
    event_type: str = _text(nullable=False)
    payload_json: str = _text(nullable=False)
    created_at: str = _text(nullable=False)
    # Ours (migration 0009): the operator of a lifecycle action, and on PostgreSQL the role that
    # wrote the row (set by the database itself).
    actor: str | None = _text()
    db_user: str | None = _text()


class IdempotencyKey(SQLModel, table=True):
    __tablename__ = "idempotency_keys"
    key: str = _text(primary_key=True, nullable=False)
    action: str = _text(nullable=False)
    session_id: str = _text(nullable=False)
    outcome: str = _text(nullable=False)
    created_at: str = _text(nullable=False)


class ApiToken(SQLModel, table=True):
    """An identity of ``roundtable serve`` (migration 0012): only the token's hash is kept."""

    __tablename__ = "api_tokens"
    name: str = _text(primary_key=True, nullable=False)
    role: str = _text(nullable=False)
    token_hash: str = Field(sa_type=Text, nullable=False, unique=True)
    workspaces_json: str | None = _text()
    agent_id: str | None = _text()
    created_at: str = _text(nullable=False)
    expires_at: str | None = _text()
    revoked_at: str | None = _text()


class ApiWebSession(SQLModel, table=True):
    """A signed-in browser of the web console (migration 0013): only its secret's hash is kept,
    and the hash of the token it was opened with."""

    __tablename__ = "api_web_sessions"
    secret_hash: str = _text(primary_key=True, nullable=False)
    token_hash: str = _text(nullable=False)
    created_at: str = _text(nullable=False)
    expires_at: str = Field(sa_type=Text, nullable=False, index=True)
    # An installed app's sign-in (migration 0022, ``store.access.devices``); null for a tab's.
    device_id: str | None = _text()
    device_name: str | None = _text()
    device_key: str | None = _text()
    last_used_at: str | None = _text()
    device_nonce: str | None = _text()
    previous_secret_hash: str | None = _text()
    previous_csrf: str | None = _text()
    previous_until: str | None = _text()


class PermissionRequest(SQLModel, table=True):
    """An agent's permission request a human answers (migration 0014; ``store.requests``)."""

    __tablename__ = "permission_requests"
    id: str = _text(primary_key=True, nullable=False)
    session_id: str = _text(nullable=False)
    agent: str = _text(nullable=False)
    tool_name: str = _text(nullable=False)
    tool_input_json: str = _text(nullable=False)
    input_cut: int = Field(default=0, sa_type=Integer, nullable=False)
    input_hidden: int = Field(default=0, sa_type=Integer, nullable=False)
    suggestions_json: str | None = _text()
    answers: str = _text(nullable=False)
    reason: str = _text(nullable=False)
    asked_at: str = _text(nullable=False)
    expires_at: str = _text(nullable=False)
    state: str = _text(nullable=False)
    decided_by: str | None = _text()
    decided_at: str | None = _text()
    message: str | None = _text()
    accepted_suggestion: int | None = Field(default=None, sa_type=Integer, nullable=True)
    delivered_at: str | None = _text()
    hook_host: str | None = _text()
    hook_pid: int | None = Field(default=None, sa_type=Integer, nullable=True)


class ReplyListener(SQLModel, table=True):
    """A finished turn's hook listening for a human's reply (migration 0015; ``store.replies``)."""

    __tablename__ = "reply_listeners"
    id: str = _text(primary_key=True, nullable=False)
    session_id: str = _text(nullable=False)
    agent: str = _text(nullable=False)
    opened_at: str = _text(nullable=False)
    expires_at: str = _text(nullable=False)
    state: str = _text(nullable=False)
    message: str | None = _text()
    replied_by: str | None = _text()
    replied_at: str | None = _text()
    delivered_at: str | None = _text()
    ended_at: str | None = _text()
    hook_host: str | None = _text()
    hook_pid: int | None = Field(default=None, sa_type=Integer, nullable=True)


class SessionStatusCount(SQLModel, table=True):
    """Sessions per status, kept by triggers on agent_sessions (migration 0004)."""

    __tablename__ = "session_status_counts"
    status: str = _text(primary_key=True, nullable=False)
    sessions: int = Field(default=0, sa_type=BigInteger, nullable=False)


class SessionGroupCount(SQLModel, table=True):
    """Sessions per group (an agent, a run, a workspace) and status, kept by triggers on
    agent_sessions (migration 0008). ``keyed`` is 0 for the sessions without a workspace, whose
    ``group_key`` is then ''."""

    __tablename__ = "session_group_counts"
    grouping: str = _text(primary_key=True, nullable=False)
    keyed: int = Field(primary_key=True, sa_type=SmallInteger, nullable=False)
    group_key: str = _text(primary_key=True, nullable=False)
    status: str = _text(primary_key=True, nullable=False)
    sessions: int = Field(default=0, sa_type=BigInteger, nullable=False)


class SessionUsageTotal(SQLModel, table=True):
    """The sessions with a usage object in their metadata, and their tokens and cost summed, per
    agent and per run (``grouping``), kept by triggers on agent_sessions (migration 0009)."""

    __tablename__ = "session_usage_totals"
    grouping: str = _text(primary_key=True, nullable=False)
    group_key: str = _text(primary_key=True, nullable=False)
    sessions: int = Field(default=0, sa_type=BigInteger, nullable=False)
    tokens: float = Field(default=0, sa_type=Double, nullable=False)
    cost: float = Field(default=0, sa_type=Double, nullable=False)


# The record kinds of import, export and the demo, in export order, each with its table: the
# reference's tables. idempotency_keys and the session counts tables are ours and are not records.
RECORD_TABLES: dict[str, Table] = {
    kind: model.__table__  # type: ignore[attr-defined]
    for kind, model in (
        ("workspace", Workspace),
        ("agent", Agent),
        ("run", Run),
        ("task", Task),
        ("claim", Claim),
        ("proposal", Proposal),
        ("decision", Decision),
        ("event", Event),
        ("session", AgentSession),
        ("session_event", AgentSessionEvent),
    )
}
# Kinds whose rows are appended history, never replaced by id.
HISTORY_KINDS = frozenset({"event", "session_event"})


class PushKey(SQLModel, table=True):
    """The VAPID key pair the servers of a store sign pushes with (migration 0016)."""

    __tablename__ = "push_keys"
    name: str = _text(primary_key=True, nullable=False)
    public_key: str = _text(nullable=False)
    private_pem: str = _text(nullable=False)
    created_at: str = _text(nullable=False)


class PushSubscription(SQLModel, table=True):
    """A browser's push subscription, owned by the sign-in that made it (``store.push``)."""

    __tablename__ = "push_subscriptions"
    id: str = _text(primary_key=True, nullable=False)
    endpoint: str = Field(sa_type=Text, nullable=False, unique=True)
    p256dh: str = _text(nullable=False)
    auth: str = _text(nullable=False)
    secret_hash: str = Field(sa_type=Text, nullable=False, index=True)
    token_hash: str = Field(sa_type=Text, nullable=False, index=True)
    kinds: str = _text(nullable=False)
    created_at: str = _text(nullable=False)


class PushPresence(SQLModel, table=True):
    """Until when a sign-in has a page of the web console open and visible."""

    __tablename__ = "push_presence"
    secret_hash: str = _text(primary_key=True, nullable=False)
    token_hash: str = Field(sa_type=Text, nullable=False, index=True)
    visible_until: str = _text(nullable=False)
    # When the page said so, in the browser's milliseconds: an older word arriving later is not
    # taken (migration 0017).
    said_at: int | None = Field(default=None, sa_type=BigInteger, nullable=True)


class PushSend(SQLModel, table=True):
    """When a session's news of a kind was last told to a receiver (``push:KIND``, or
    ``webhook:…:KIND``)."""

    __tablename__ = "push_sends"
    receiver: str = _text(primary_key=True, nullable=False)
    session_id: str = _text(primary_key=True, nullable=False)
    sent_at: str = _text(nullable=False)


class PushTold(SQLModel, table=True):
    """One piece of news told to one receiver (``push:`` a subscription, ``webhook:`` a hash),
    until it is answered (migration 0021; ``store.push.told``)."""

    __tablename__ = "push_told"
    id: str = _text(primary_key=True, nullable=False)
    receiver: str = _text(nullable=False)
    session_id: str = _text(nullable=False)
    kind: str = _text(nullable=False)
    about: str = _text(nullable=False)
    told_at: str = _text(nullable=False)
    title: str = _text(nullable=False)
    body: str = _text(nullable=False)
    url: str = _text(nullable=False)
    again_at: str | None = _text()
    answered_at: str | None = _text()
    answered_how: str | None = _text()


class Host(SQLModel, table=True):
    """A machine that runs agents for the console (migration 0019; ``store.hosts``)."""

    __tablename__ = "hosts"
    name: str = _text(primary_key=True, nullable=False)
    connection_id: str | None = _text()
    connected_at: str | None = _text()
    last_seen_at: str | None = _text()
    first_seen_at: str = _text(nullable=False)
    agents_json: str = _text(nullable=False)
    projects_json: str = _text(nullable=False)
    tmux: str | None = _text()
    version: str | None = _text()
    platform: str | None = _text()


class HostCall(SQLModel, table=True):
    """An operation for a host held by another server of the store (migration 0020;
    ``store.hosts.calls``)."""

    __tablename__ = "host_calls"
    id: str = _text(primary_key=True, nullable=False)
    host: str = _text(nullable=False)
    op: str = _text(nullable=False)
    args_json: str = _text(nullable=False)
    asked_at: str = _text(nullable=False)
    expires_at: str = _text(nullable=False)
    taken_by: str | None = _text()
    answer_json: str | None = _text()
    answered_at: str | None = _text()


class UsageDay(SQLModel, table=True):
    """What a session spent on one UTC day, as its hooks reported it (migration 0024;
    ``store.budgets``)."""

    __tablename__ = "usage_days"
    session_id: str = _text(primary_key=True, nullable=False)
    day: str = _text(primary_key=True, nullable=False)
    agent_id: str = _text(primary_key=True, nullable=False)
    run_id: str = _text(primary_key=True, nullable=False)
    # '' for a session of no workspace.
    workspace_id: str = _text(primary_key=True, nullable=False)
    tokens: int = Field(default=0, sa_type=BigInteger, nullable=False)
    cost_usd: float = Field(default=0, sa_type=Double, nullable=False)
    unpriced_tokens: int = Field(default=0, sa_type=BigInteger, nullable=False)
    changed_at: str = _text(nullable=False)


class BudgetCrossing(SQLModel, table=True):
    """A budget that reached a level (80 or 100 %) of its limit in a period, told once
    (migration 0024; ``store.budgets``)."""

    __tablename__ = "budget_crossings"
    id: str = _text(primary_key=True, nullable=False)
    budget_key: str = _text(nullable=False)
    period: str = _text(nullable=False)
    level: int = Field(sa_type=Integer, nullable=False)
    name: str = _text(nullable=False)
    workspace_id: str | None = _text()
    unit: str = _text(nullable=False)
    limit_amount: float = Field(sa_type=Double, nullable=False)
    spent: float = Field(sa_type=Double, nullable=False)
    stop: bool = Field(nullable=False)
    crossed_at: str = _text(nullable=False)
    told_at: str | None = _text()
