"""What is told, to whom, and when.

- **What**: a session that starts waiting on a human (``needs_you``: a question, a permission
  request) or whose agent's turn is done (``turn_done``), in words: the agent, the session and
  the reason, redacted and printable as everywhere (``Notice``). It holds no secret and opens
  the session's page where it can be answered.
- **To whom** (``recipients``): the subscriptions that want that kind, whose sign-in and token
  still hold, whose token may read the session (its role is a human's, its wall admits the
  session), and whose token has no page of the console open and visible (``mark_presence``).
- **When** (``claim``): a session's news of a kind at most once in a cooling period (to the
  devices, and to each webhook), claimed in the store so that of several servers reading the
  same change only one tells it. One row per session and kind, whatever the number of devices:
  the claim holds the store's writer for one short statement.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, NamedTuple
from urllib.parse import quote

from sqlalchemy import Connection, TextClause, text

from roundtable_console.store.access.tokens import TOKEN_HOLDS, token_hash
from roundtable_console.store.access.walls import Wall
from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.push.subscriptions import (
    BUDGET,
    FAILED,
    LIVE_SIGN_IN,
    NEEDS_YOU,
    TURN_DONE,
    signed_in_token,
)
from roundtable_console.store.reads.claims import active_claims
from roundtable_console.store.records import SessionFields
from roundtable_console.store.safety.display import one_line

# A page says it is visible again before this runs out (assets/web/static/app.js).
PRESENCE_SECONDS = 45
TITLE_WIDTH = 80
BODY_WIDTH = 200
MAX_URL = 600
MAX_PAYLOAD = 3000
HUMAN_ROLES = ("operator", "viewer")

# A page's word arriving after a later one of the same sign-in is not taken.
_PRESENT = text(
    "INSERT INTO push_presence (secret_hash, token_hash, visible_until, said_at)"
    " VALUES (:secret_hash, :token_hash, :until, :said_at) ON CONFLICT (secret_hash)"
    " DO UPDATE SET token_hash = excluded.token_hash, visible_until = excluded.visible_until,"
    " said_at = excluded.said_at"
    " WHERE push_presence.said_at IS NULL OR excluded.said_at IS NULL"
    " OR excluded.said_at >= push_presence.said_at"
)
_EVERY_RECIPIENT = (
    "SELECT s.id, s.endpoint, s.p256dh, s.auth, t.role, t.workspaces_json"
    " FROM push_subscriptions s"
    " JOIN api_web_sessions w ON w.secret_hash = s.secret_hash AND w.expires_at > :now"
    " JOIN api_tokens t ON t.token_hash = s.token_hash AND t.token_hash = w.token_hash"
    " WHERE " + TOKEN_HOLDS + " AND s.kinds LIKE :kind"
)
_RECIPIENTS = {
    False: text(
        _EVERY_RECIPIENT + " AND NOT EXISTS (SELECT 1 FROM push_presence p"
        " WHERE p.token_hash = s.token_hash AND p.visible_until > :now)"
    ),
    True: text(_EVERY_RECIPIENT),
}
# Receivers claimed per statement (their ids are bound parameters).
CLAIM_BATCH = 500
# Subscriptions whose sign-in ended (expired, revoked, its token revoked or expired), each
# returned once: to be told so. Sends older than any cooling period.
_ORPHANS = text(
    "DELETE FROM push_subscriptions WHERE NOT EXISTS ("
    + LIVE_SIGN_IN.format(subscription="push_subscriptions")
    + ") RETURNING id, endpoint, p256dh, auth"
)
SIGNED_OUT_TAG = "roundtable:signed-out"
_OLD_SENDS = text("DELETE FROM push_sends WHERE sent_at <= :cooled")
_OLD_PRESENCE = text("DELETE FROM push_presence WHERE visible_until <= :now")


def tag_of(session_id: str) -> str:
    """The browser shows one notification per session (a newer one replaces it; an answered
    push closes it): its tag."""
    if len(session_id) > 64:
        session_id = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
    return "roundtable:" + session_id


def answered_payload(session_id: str, told: str, how: str, at: str) -> str:
    """What an answered push carries: the tag whose notice is closed, what it told, how it was
    answered (no notice is shown for it)."""
    payload = {"kind": "answered", "answered": told, "how": one_line(how, TITLE_WIDTH),
               "tag": tag_of(session_id), "at": at}  # fmt: skip
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


@dataclass(frozen=True)
class Notice:
    """One piece of news of one session, as a push and a webhook tell it."""

    kind: str
    session_id: str
    agent_id: str
    title: str
    body: str
    url: str
    at: str
    # The browser's tag, when the news is not of one session (a budget's).
    tag: str | None = None

    def payload(self) -> dict[str, Any]:
        """What a push carries (encrypted) and a webhook posts."""
        return {
            "kind": self.kind,
            "session_id": self.session_id,
            "agent_id": self.agent_id,
            "title": self.title,
            "body": self.body,
            "url": self.url,
            "at": self.at,
            "tag": self.tag or tag_of(self.session_id),
        }

    def encoded(self) -> str:
        """As a push carries it: UTF-8, within what every push service takes (4 KiB less the
        encryption's overhead); the ids alone of the longest sessions would not fit it, so
        they are left to the URL and tag then."""
        payload = self.payload()
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        if len(text.encode("utf-8", "surrogatepass")) > MAX_PAYLOAD:
            payload["session_id"] = payload["agent_id"] = None
            text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
        return text


def failure_of(
    db: Connection, session: SessionFields, *, stale_after: timedelta, clock: Clock = system_clock
) -> str | None:
    """Why ``session`` is news of the ``failed`` kind now, in words: it failed, or it went
    stale while its agent holds claims (others wait on them); None otherwise."""
    if session.status == "failed":
        return "failed"
    now = clock()
    if not session.is_stale(now, stale_after):
        return None
    # What its workspace's humans may see: that workspace's claims, not yet expired.
    held = [
        claim
        for claim in active_claims(
            db=db, agent_id=session.agent_id, now=now, workspace_id=session.workspace_id
        )
        if not claim.expired
    ]
    if not held:
        return None
    return f"went stale holding {len(held)} claim{'s' if len(held) != 1 else ''}"


def notice_of(
    session: SessionFields,
    kind: str,
    at: str,
    *,
    again: bool = False,
    failure: str | None = None,
) -> Notice | None:
    """The news ``session`` holds now, when it is still ``kind``'s (a wait that ended, or a
    turn followed by another, is told no more); None otherwise. ``again``: a wait told before
    and still unanswered. ``failure``: why it is news of the ``failed`` kind
    (``failure_of``)."""
    agent = one_line(session.agent_id, TITLE_WIDTH // 2)
    where = "/sessions/" + quote(session.id, safe="")
    if len(where) > MAX_URL:  # an id so long its page's path would not fit a push
        where = "/requests" if kind == NEEDS_YOU else "/sessions"
    if kind == NEEDS_YOU and session.waiting is not None:
        reason = session.waiting.reason or "waits for a human"
        title = f"{agent} still needs you" if again else f"{agent} needs you"
        anchor = "#requests"
    elif kind == TURN_DONE and session.turn_done is not None:
        reason = session.turn_done
        title, anchor = f"{agent}: turn done", "#reply"
    elif kind == FAILED and failure is not None:
        reason = failure
        title = f"{agent} failed" if failure == "failed" else f"{agent} went stale"
        anchor = ""
    else:
        return None
    body = f"{one_line(session.id, 40)} · {one_line(reason)}"
    return Notice(
        kind=kind,
        session_id=session.id,
        agent_id=session.agent_id,
        title=one_line(title, TITLE_WIDTH),
        body=one_line(body, BODY_WIDTH),
        url=where + anchor if where.startswith("/sessions/") else where,
        at=at,
    )


def mark_presence(
    *,
    store: Store,
    secret: str,
    visible: bool,
    said_at: int | None = None,
    clock: Clock = system_clock,
) -> bool:
    """The page of this sign-in is visible (for ``PRESENCE_SECONDS``), or no longer; whether
    the sign-in holds. ``said_at``: when the page said it (the browser's milliseconds); what
    another page of the sign-in said later stands."""
    now = clock()
    until = now + timedelta(seconds=PRESENCE_SECONDS) if visible else now
    with store.write() as db:
        owner = signed_in_token(db, secret, format_ts(now))
        if owner is None:
            return False
        db.execute(
            _PRESENT,
            {
                "secret_hash": token_hash(secret),
                "token_hash": owner,
                "until": format_ts(until),
                "said_at": said_at,
            },
        )
    return True


class Recipient(NamedTuple):
    """A device to push to: its subscription's id, endpoint and keys."""

    id: str
    endpoint: str
    p256dh: str
    auth: str


def recipients(
    db: Connection,
    session: SessionFields,
    kind: str,
    *,
    in_view: bool = False,
    clock: Clock = system_clock,
) -> list[Recipient]:
    """The subscriptions to tell ``session``'s ``kind`` of news now (see the module's
    docstring), before the cooling period is looked at. ``in_view``: those of tokens with a
    page in view too (a notice shown before is closed on every device)."""
    values = {"now": format_ts(clock()), "kind": f"%{kind}%"}
    rows = db.execute(_RECIPIENTS[in_view], values).all()
    admitted: dict[tuple[str, str | None], bool] = {}  # a token's role and wall, decided once
    found: list[Recipient] = []
    for device, endpoint, p256dh, auth, role, walls in rows:
        token = (role, walls)
        if token not in admitted:
            workspaces = json.loads(walls) if walls else None
            admitted[token] = role in HUMAN_ROLES and Wall.of(workspaces).admits(session)
        if admitted[token]:
            found.append(Recipient(device, endpoint, p256dh, auth))
    return found


def budget_recipients(
    db: Connection, workspace_id: str | None, *, clock: Clock = system_clock
) -> list[Recipient]:
    """The subscriptions to tell of a budget's crossing: those that want ``budget`` news, of
    humans' tokens that may see the budget (``store.budgets.limits``: its workspace, or every
    workspace for a budget of none), whether a page is in view or not (no page shows it)."""
    values = {"now": format_ts(clock()), "kind": f"%{BUDGET}%"}
    found: list[Recipient] = []
    for device, endpoint, p256dh, auth, role, walls in db.execute(_RECIPIENTS[True], values):
        wall = Wall.of(json.loads(walls) if walls else None)
        seen = wall.reaches(workspace_id) if workspace_id is not None else not wall.bound
        if role in HUMAN_ROLES and seen:
            found.append(Recipient(device, endpoint, p256dh, auth))
    return found


def _claim_statement(size: int) -> TextClause:
    """A receiver is returned when its claim was taken: a row inserted, or one older than the
    cooling period moved on (``VALUES`` names its column ``column1`` on both engines)."""
    rows = ", ".join(f"(:r{index})" for index in range(size))
    return text(
        "INSERT INTO push_sends (receiver, session_id, sent_at)"
        f" SELECT column1, :session_id, :now FROM (VALUES {rows}) AS wanted WHERE true"
        " ON CONFLICT (receiver, session_id) DO UPDATE SET sent_at = excluded.sent_at"
        " WHERE push_sends.sent_at <= :cooled RETURNING receiver"
    )


def claim(
    db: Connection,
    *,
    receivers: list[str],
    session_id: str,
    cooling: timedelta,
    clock: Clock = system_clock,
) -> set[str]:
    """The ``receivers`` (``push:KIND``, ``webhook:…:KIND``) this server tells ``session_id``
    to now: those nobody told it within the cooling period. The claims are written in the
    caller's transaction."""
    now = clock()
    taken: set[str] = set()
    for start in range(0, len(receivers), CLAIM_BATCH):
        batch = receivers[start : start + CLAIM_BATCH]
        values = {f"r{index}": receiver for index, receiver in enumerate(batch)}
        values |= {
            "session_id": session_id,
            "now": format_ts(now),
            "cooled": format_ts(now - cooling),
        }
        taken.update(db.execute(_claim_statement(len(batch)), values).scalars())
    return taken


def signed_out_payload(at: str) -> str:
    """What a device whose sign-in ended is told, once: a notice that opens the sign-in."""
    payload = {"kind": "signed_out", "title": "Roundtable: signed out",
               "body": "Signed out: open the app to keep being told.",
               "url": "/sign-in?next=%2Fnotifications", "tag": SIGNED_OUT_TAG,
               "at": at}  # fmt: skip
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def tidy(*, store: Store, cooling: timedelta, clock: Clock = system_clock) -> list[Recipient]:
    """Drop what can no longer matter: subscriptions of ended sign-ins (returned, to be told
    they are signed out: once, since they are gone after), old sends and presences."""
    now = clock()
    with store.write() as db:
        ended = [Recipient(*row) for row in db.execute(_ORPHANS, {"now": format_ts(now)})]
        db.execute(_OLD_SENDS, {"cooled": format_ts(now - cooling)})
        db.execute(_OLD_PRESENCE, {"now": format_ts(now)})
    return ended
