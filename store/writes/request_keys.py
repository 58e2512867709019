"""Idempotency keys of requests over HTTP (``docs/teams.md#serving-sessions-over-http``): a
retried request gets the first answer.

A key is bound to who sent it, to the request's method and path, and to its body: the record's
key is a hash of the first three and the client's key, its outcome the body's hash and the
answer (status and JSON body). The same request again is answered from the record; the same
key with another body is refused (``idempotency_key_reuse``). Records live in
``idempotency_keys`` beside the lifecycle's own keys, so every server of a store shares them,
and ``roundtable db prune --idempotency-keys-older-than`` removes old ones as it does those.

A success is recorded in the transaction of the write it answers (``record``): two servers that
take the same request at once cannot both apply it; the second fails at the record's primary key
(``RecordedMeanwhile``), rolls back, and answers from the first's record.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, insert, select
from sqlalchemy.exc import IntegrityError

from roundtable_console.store import errors
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.models import IdempotencyKey

_KEYS = IdempotencyKey.__table__  # type: ignore[attr-defined]
RECORD_PREFIX = "http:"
# The key the lifecycle layer records for an action a request asks for (one per request key).
ACTION_PREFIX = "http-action:"
ACTION = "http"


class RecordedMeanwhile(Exception):
    """Another transaction recorded the same request key first: roll back, answer from it."""


@dataclass(frozen=True)
class RequestKey:
    """A client's ``Idempotency-Key`` bound to its caller, method, path and body."""

    client_key: str
    scope: str
    body_hash: str

    @property
    def record_key(self) -> str:
        return RECORD_PREFIX + self.scope

    @property
    def action_key(self) -> str:
        return ACTION_PREFIX + self.scope


@dataclass(frozen=True)
class StoredAnswer:
    status: int
    body: Any


def request_key(*, caller: str, method: str, path: str, client_key: str, body: bytes) -> RequestKey:
    scope = hashlib.sha256(
        "\0".join((caller, method.upper(), path, client_key)).encode()
    ).hexdigest()
    return RequestKey(
        client_key=client_key, scope=scope, body_hash=hashlib.sha256(body).hexdigest()
    )


def stored_answer(db: Connection, key: RequestKey) -> StoredAnswer | None:
    """The first answer to this request, or None; ``idempotency_key_reuse`` when the key was
    used with another body."""
    outcome = db.execute(
        select(_KEYS.c.outcome).where(_KEYS.c.key == key.record_key)
    ).scalar_one_or_none()
    if outcome is None:
        return None
    recorded = json.loads(outcome)
    if recorded.get("request") != key.body_hash:
        raise errors.IdempotencyKeyReuse(
            "The key is already bound to a different request payload: send the first request "
            "again, or use a new key for this one."
        )
    return StoredAnswer(status=int(recorded["status"]), body=recorded["body"])


def record(
    db: Connection,
    key: RequestKey,
    *,
    session_id: str,
    status: int,
    body: Any,
    clock: Clock = system_clock,
) -> None:
    """The answer, recorded under the key in the caller's transaction."""
    outcome = json.dumps({"request": key.body_hash, "status": status, "body": body}, sort_keys=True)
    try:
        db.execute(
            insert(_KEYS).values(
                key=key.record_key,
                action=ACTION,
                session_id=session_id,
                outcome=outcome,
                created_at=format_ts(clock()),
            )
        )
    except IntegrityError:
        raise RecordedMeanwhile() from None
