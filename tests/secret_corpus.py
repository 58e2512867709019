"""A corpus of secret shapes and a store seeded with them everywhere a read path reads store text:
session metadata (any depth, in lists, under sensitive keys), history payloads, run events, claim
rationales and proposal titles and summaries. Also what is not a secret and must stay shown."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from sqlalchemy import insert

from roundtable_console.store.clock import fixed_clock, format_ts
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import (
    AgentSessionEvent,
    Claim,
    Decision,
    Event,
    Proposal,
    Task,
)
from tests.helpers import register_session

AT = "2026-09-17T17:00:00Z"
SESSION = "sess-corpus"
AGENT = "agent-corpus"
RUN = "run-corpus"

# (secret, the text it stands in): the secret part must never be shown, the rest may be.
_HEX = "0123456789abcdef"
SHAPES: tuple[tuple[str, str], ...] = (
    ("AKIAIOSFODNN7LEAK001", "aws id {} in use"),
    ("ASIAJ2LEAK002QWERTYZ", "temporary key {}"),
    ("ghp_Leak003aBcDeFgHiJkLmNoPqRsTuVwXyZ0123", "git remote uses {}"),
    ("gho_Leak004aBcDeFgHiJkLmNoPqRsTuVwXyZ0123", "oauth {}"),
    ("github_pat_11ALEAK005A0abcdefghij_klmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVW", "pat {} ok"),
    ("glpat-Leak006xYz0123456789ab", "gitlab {}"),
    ("xoxb-123456789012-1234567890123-Leak007abcdefghijklmn", "slack bot {}"),
    ("xoxp-2345678901-Leak008-abcdefgh", "slack user {}"),
    ("T0LEAK009/B0000000/XXXXXXXXXXXXXXXXXXXXXXXX", "webhook https://hooks.slack.com/services/{}"),
    ("sk-proj-Leak010abcdefghijklmnopqrstuvwxyz0123456789", "openai {}"),
    ("sk-ant-api03-Leak011abcdefghijklmnop_qrstuvwxyz-0123", "anthropic key {} set"),
    ("sk_live_Leak012abcdefghijklmnop", "stripe {}"),
    ("whsec_Leak013abcdefghijklmnopqrstuv", "stripe webhook {}"),
    ("AIzaSyLeak014abcdefghijklmnopqrstuvwxyz", "google {}"),
    ("ya29.Leak015abcdefghijklmnopqrstuv", "gcloud oauth {}"),
    (
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJMZWFrMDE2In0.Leak016SignatureAbCdEf",
        "cookie jwt {} sent",
    ),
    ("npm_Leak017abcdefghijklmnopqrstuvwxyz012", "npmrc {}"),
    ("pypi-AgEIcHlwaS5vcmcLeak018abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGH", "twine {}"),
    ("SG.Leak019abcdefghijklmno.Leak019abcdefghijklmnopqrstuvwxyz0123456789", "sendgrid {}"),
    ("hf_Leak020abcdefghijklmnopqrstuvwxyz", "huggingface {}"),
    ("SK" + "19" + (_HEX * 2)[:30], "twilio {}"),
    ("shpat_" + "21" + (_HEX * 2)[:30], "shopify {}"),
    ("dop_v1_" + "22" + (_HEX * 4)[:62], "digitalocean {}"),
    ("hvs.Leak023abcdefghijklmnopqrstuvwxyz", "vault {}"),
    ("dapi" + "24" + (_HEX * 2)[:30], "databricks {}"),
    ("25" + (_HEX * 2)[:30] + "-us6", "mailchimp {}"),
    ("sq0atp-Leak026abcdefghijklmnop", "square {}"),
    ("123456789:AALeak027abcdefghijklmnopqrstuvwxyz", "telegram {}"),
    ("lin_api_Leak028abcdefghijklmnopqrstuvwxyz0123456", "linear {}"),
    ("PMAK-" + "29" + _HEX[:14] + "abcdef01" + "-" + "29" + (_HEX * 3)[:32], "postman {}"),
    ("ATATT3xFfGF0Leak030abcdefghijklmnop", "atlassian {}"),
    ("AGE-SECRET-KEY-1LEAK031" + ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L" * 2)[:51], "age {}"),
    (
        "MIIEpAIBAAKCAQEALeak032base64body",
        "key:\n-----BEGIN RSA PRIVATE KEY-----\n{}\nmore/body+==\n-----END RSA PRIVATE KEY-----\n"
        "after the key",
    ),
    (
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmULeak033",
        "-----BEGIN OPENSSH PRIVATE KEY-----\n{}\n-----END OPENSSH PRIVATE KEY-----",
    ),
    ("Sup3rLeak034", "dsn postgres://admin:{}@db.internal:5432/app"),
    ("Leak035pass", "cache redis://:{}@cache:6379/0"),
    ("Leak036TokenValue", "Authorization: Bearer {}"),
    ("Leak037hunter", "login password={} then"),
    ("Leak038value", "api_key: {}"),
    ("Leak039value", "x-api-key: {}"),
    ("Leak040val", "client_secret={}&scope=all"),
    ("Leak041val", "export APIKEY={}"),
    ("Leak042val", "url?token={}&next=1"),
    ("Leak043val", "passwd: {}"),
)
# Secrets that only a key marks: (key, secret) — placed as metadata and payload fields.
KEYED: tuple[tuple[str, Any], ...] = (
    ("api_key", "Leak044Key"),
    ("Authorization", "Basic Leak045Auth"),
    ("password", {"nested": ["Leak046Deep"]}),
    ("apiKey", "Leak047Camel"),
    ("access_token", ["Leak048List"]),
    ("prompt_tokens", "Leak049StringUnderTokens"),
    ("chain_of_thought", "Leak050Thinking"),
)
SECRETS: tuple[str, ...] = (
    *(secret for secret, _ in SHAPES),
    "Leak044Key",
    "Leak045Auth",
    "Leak046Deep",
    "Leak047Camel",
    "Leak048List",
    "Leak049StringUnderTokens",
    "Leak050Thinking",
)
TEXTS: tuple[str, ...] = tuple(template.format(secret) for secret, template in SHAPES)

# Not secrets: each must still be shown where it was put.
USAGE = {"input_tokens": 12345, "output_tokens": 6789, "tokens": 4242, "cost_usd": 0.25}
ORDINARY = "the deploy finished cleanly after review"
PLAIN_URL = "https://docs.example.com/guide?page=2"
KEPT_TEXTS: tuple[str, ...] = (ORDINARY, PLAIN_URL)


def keyed() -> dict[str, Any]:
    return dict(KEYED)


def nested(texts: Iterable[str]) -> dict[str, Any]:
    """The texts at several depths and in lists, with the keyed secrets beside them."""
    texts = list(texts)
    return {
        "notes": texts,
        "deep": {"level": [{"text": text} for text in texts]},
        "headers": keyed(),
        "kept": list(KEPT_TEXTS),
    }


def metadata() -> dict[str, Any]:
    return {**nested(TEXTS), **keyed(), "usage": USAGE, "branch": "main"}


def seed(store: Store) -> None:
    """One session whose every read path meets the whole corpus."""
    with store.write() as db:
        register_session(
            db,
            SESSION,
            clock=fixed_clock(_moment()),
            agent_id=AGENT,
            run_id=RUN,
            working_directory="/work/repo",
            metadata=metadata(),
        )
        events = AgentSessionEvent.__table__  # type: ignore[attr-defined]
        for text in TEXTS:
            payload = {"note": text, "list": [text], "kept": ORDINARY, **keyed()}
            db.execute(
                insert(events).values(session_id=SESSION, event_type="note", **_row(payload))
            )
        db.execute(
            insert(events).values(
                session_id=SESSION, event_type="raw", payload_json=" | ".join(TEXTS), created_at=AT
            )
        )
        # The newest event carries everything: the log screen shows it whole.
        db.execute(
            insert(events).values(session_id=SESSION, event_type="all", **_row(nested(TEXTS)))
        )
        run_events = Event.__table__  # type: ignore[attr-defined]
        for number, text in enumerate(TEXTS):
            payload = {"tool": "shell", "action": text, "status": text, "args": [text], **keyed()}
            db.execute(
                insert(run_events).values(
                    run_id=RUN,
                    type="tool.shell",
                    actor_id=AGENT,
                    task_id=f"t{number}",
                    **_row(payload),
                )
            )
        claims = Claim.__table__  # type: ignore[attr-defined]
        proposals = Proposal.__table__  # type: ignore[attr-defined]
        expires = format_ts(_moment() + timedelta(days=3650))
        for number, text in enumerate((*TEXTS, ORDINARY)):
            db.execute(
                insert(claims).values(
                    id=f"claim-{number:02}",
                    resource_id=f"res-{number:02}",
                    agent_id=AGENT,
                    task_id="task-1",
                    claim_type="write",
                    status="active",
                    expires_at=expires,
                    rationale_md=text,
                    created_at=AT,
                )
            )
            db.execute(
                insert(proposals).values(
                    id=f"prop-{number:02}",
                    task_id="task-1",
                    agent_id=AGENT,
                    title=text,
                    summary_md=text,
                    patch_path="/patch",
                    status="pending",
                    created_at=AT,
                )
            )
        _briefing_rows(db)


def _briefing_rows(db: Any) -> None:
    """A task of the agent's and the newest decisions: what the briefing quotes of the store."""
    db.execute(
        insert(Task.__table__).values(  # type: ignore[attr-defined]
            id="task-1",
            title=f"{ORDINARY}: {' | '.join(TEXTS)}",
            body_md="never shown",
            status="in_progress",
            assigned_agent_id=AGENT,
            created_at=AT,
        )
    )
    for number in range(3):
        db.execute(
            insert(Decision.__table__).values(  # type: ignore[attr-defined]
                id=f"decision-{number}",
                decision="accept",
                rationale_md=f"{ORDINARY}\n" + "\n".join(TEXTS),
                decided_by="reviewer",
                created_at=AT,
            )
        )


def _row(payload: dict[str, Any]) -> dict[str, str]:
    return {"payload_json": json.dumps(payload), "created_at": AT}


def _moment():  # type: ignore[no-untyped-def]
    from tests.test_tui_support import FROZEN

    return FROZEN


def _pieces(secret: str) -> set[str]:
    """Every 10-character piece of ``secret`` that no other secret of the corpus holds."""
    others = [other for other in SECRETS if other != secret]
    pieces = {secret[i : i + 10] for i in range(max(len(secret) - 9, 1))}
    return {piece for piece in pieces if not any(piece in other for other in others)}


PIECES: dict[str, set[str]] = {secret: _pieces(secret) for secret in SECRETS}


def leaks(shown: str) -> list[str]:
    """The secrets of the corpus that ``shown`` gives away, whole or by a 10-character piece of
    their own (a cut cell could show part of one)."""
    return [secret for secret, pieces in PIECES.items() if any(p in shown for p in pieces)]
