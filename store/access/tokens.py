"""Tokens: the identities of ``roundtable serve`` (``docs/teams.md#serving-sessions-over-http``),
kept hashed in ``api_tokens``.

A token is made from 32 random bytes and shown once, when it is made (``create_token``); the
store keeps its SHA-256, never the token. ``identify`` finds a bearer's identity by that hash on
every request, so a revocation or an expiry holds at once on every server of the store. A token
has a name (the actor of what it does), a role (``ROLES``), optionally the workspaces it
reaches and, for an agent, the agent whose sessions it may write.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, bindparam, insert, literal, select, update
from sqlalchemy.exc import IntegrityError

from roundtable_console.store import errors
from roundtable_console.store.clock import Clock, format_ts, parse_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import ApiToken
from roundtable_console.store.writes.history import Prepared

_TOKENS = ApiToken.__table__  # type: ignore[attr-defined]

# viewer: reads. operator: the human authorization (create, pause, stop, resume, terminate,
# bulk), and reads. agent: registers, beats and ends its own agent's sessions, and reads.
# host: connects the one host of its own name (roundtable host run) and does nothing else.
ROLES = ("viewer", "operator", "agent", "host")
TOKEN_PREFIX = "rt_"
# In SQL: the token aliased ``t`` holds at ``:now`` (neither revoked nor expired).
TOKEN_HOLDS = "t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > :now)"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
_WORKSPACE = re.compile(r"^[^\x00-\x1f\x7f]{1,200}$")


@dataclass(frozen=True)
class Identity:
    """Who a request is: a token's name and what it may reach. ``workspaces`` None: all."""

    name: str
    role: str
    workspaces: tuple[str, ...] | None = None
    agent_id: str | None = None

    def reaches(self, workspace_id: str) -> bool:
        return self.workspaces is None or workspace_id in self.workspaces


@dataclass(frozen=True)
class TokenRecord:
    """A token as ``tokens list`` shows it: everything but the token, which is not kept."""

    name: str
    role: str
    workspaces: tuple[str, ...] | None
    agent_id: str | None
    created_at: str
    expires_at: str | None
    revoked_at: str | None

    def state(self, now: Clock = system_clock) -> str:
        if self.revoked_at is not None:
            return "revoked"
        if is_expired(self.expires_at, now):
            return "expired"
        return "active"

    def to_json(self, now: Clock = system_clock) -> dict[str, Any]:
        return {
            "name": self.name,
            "role": self.role,
            "workspaces": list(self.workspaces) if self.workspaces is not None else None,
            "agent": self.agent_id,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "revoked_at": self.revoked_at,
            "state": self.state(now),
        }


@dataclass(frozen=True)
class NewToken:
    """A token just made: the only time the token itself is known."""

    record: TokenRecord
    token: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.record.name,
            "role": self.record.role,
            "token": self.token,
            "workspaces": list(self.record.workspaces)
            if self.record.workspaces is not None
            else None,
            "agent": self.record.agent_id,
            "expires_at": self.record.expires_at,
        }


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def create_token(
    *,
    store: Store,
    name: str,
    role: str,
    workspaces: tuple[str, ...] = (),
    agent_id: str | None = None,
    expires_in: timedelta | None = None,
    clock: Clock = system_clock,
) -> NewToken:
    """A new token, stored hashed in one durable transaction; refused in words (nothing
    written) for a bad or taken name, an unknown role, or an agent token without its agent."""
    name = name.strip()
    if not _NAME.match(name):
        raise errors.InvalidTokenRequest(
            f"A token's name is 1 to 64 letters, digits and . _ @ -, starting with a letter or "
            f"a digit; {name!r} is not one."
        )
    if role not in ROLES:
        raise errors.InvalidTokenRequest(
            f"A token's role is one of {', '.join(ROLES)}, not {role!r}."
        )
    agent = (agent_id or "").strip() or None
    if role == "agent" and agent is None:
        raise errors.InvalidTokenRequest("An agent token acts for one agent: give --agent A.")
    if role != "agent" and agent is not None:
        raise errors.InvalidTokenRequest("Only an agent token acts for an agent (--role agent).")
    if role == "host" and workspaces:
        raise errors.InvalidTokenRequest(
            "A host token reaches no workspace: it connects its machine only (drop --workspace)."
        )
    chosen = tuple(dict.fromkeys(workspace.strip() for workspace in workspaces))
    bad = [workspace for workspace in chosen if not _WORKSPACE.match(workspace)]
    if bad:
        raise errors.InvalidTokenRequest(f"{bad[0]!r} cannot name a workspace.")
    now = clock()
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    record = TokenRecord(
        name=name,
        role=role,
        workspaces=chosen or None,
        agent_id=agent,
        created_at=format_ts(now),
        expires_at=format_ts(now + expires_in) if expires_in is not None else None,
        revoked_at=None,
    )
    try:
        with store.write(durable=True) as db:
            db.execute(
                insert(_TOKENS).values(
                    name=record.name,
                    role=record.role,
                    token_hash=token_hash(token),
                    workspaces_json=json.dumps(list(chosen)) if chosen else None,
                    agent_id=record.agent_id,
                    created_at=record.created_at,
                    expires_at=record.expires_at,
                )
            )
    except IntegrityError:
        raise errors.InvalidTokenRequest(
            f"A token named {name!r} exists (revoked tokens keep their names): choose another "
            "name, or see roundtable tokens list."
        ) from None
    return NewToken(record=record, token=token)


def list_tokens(*, store: Store) -> list[TokenRecord]:
    with store.read() as db:
        rows = db.execute(select(_TOKENS).order_by(_TOKENS.c.name)).all()
    return [_record(row) for row in rows]


def revoke_token(*, store: Store, name: str, clock: Clock = system_clock) -> TokenRecord:
    """Revoke the token named ``name`` at once: its sign-ins end with it (their push
    subscriptions are told so once, then dropped: ``store.push.telling.tidy``); revoking it
    again keeps the first time."""
    with store.write(durable=True) as db:
        db.execute(
            update(_TOKENS)
            .where(_TOKENS.c.name == name.strip(), _TOKENS.c.revoked_at.is_(None))
            .values(revoked_at=format_ts(clock()))
        )
        row = db.execute(select(_TOKENS).where(_TOKENS.c.name == name.strip())).one_or_none()
    if row is None:
        raise errors.TokenNotFound(
            f"No token is named {name.strip()!r} (roundtable tokens list shows them)."
        )
    return _record(row)


# Built once: every request runs one of them (store.writes.history.Prepared).
_ANY_TOKEN = Prepared(select(literal(1).label("held")).select_from(_TOKENS).limit(1))
_BY_HASH = Prepared(select(_TOKENS).where(_TOKENS.c.token_hash == bindparam("hash")))


def holds_tokens(db: Connection) -> bool:
    """Whether the store holds any token, revoked or expired ones too (while it holds none, a
    server answers as the reference with none: in header mode)."""
    return _ANY_TOKEN.execute(db, {}) is not None


def identify(db: Connection, token: str, *, clock: Clock = system_clock) -> Identity:
    """The identity of a bearer of ``token``; ``invalid_token`` for a token the store does not
    hold, or holds revoked or expired (the same words for all: a guess learns nothing)."""
    found = _BY_HASH.execute(db, {"hash": token_hash(token)})
    return identity_of(found, clock, INVALID)


INVALID = "The bearer token is not valid: unknown, revoked or expired."


def identity_of(found: Mapping[str, Any] | None, clock: Clock, refusal: str) -> Identity:
    """The identity a token's row (as read) gives, while the token holds; ``invalid_token``
    with ``refusal`` for no row, or a row revoked or expired."""
    if found is None or found["revoked_at"] is not None or is_expired(found["expires_at"], clock):
        raise errors.InvalidToken(refusal)
    record = _record(SimpleNamespace(**found))
    return Identity(
        name=record.name, role=record.role, workspaces=record.workspaces, agent_id=record.agent_id
    )


def is_expired(expires_at: str | None, now: Clock) -> bool:
    if expires_at is None:
        return False
    moment = parse_ts(expires_at)
    return moment is None or moment <= now()


def _record(row: Any) -> TokenRecord:
    workspaces = json.loads(row.workspaces_json) if row.workspaces_json else None
    return TokenRecord(
        name=row.name,
        role=row.role,
        workspaces=tuple(workspaces) if workspaces is not None else None,
        agent_id=row.agent_id,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
    )
