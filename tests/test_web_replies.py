"""Replies in the web console, in-process (issue 30 point 5): while a session's agent waits for a
prompt, its page says what can carry a reply and, to an operator, offers the form; where nothing
can, it says why and offers none; a session that waits for nothing shows nothing of it. The
reply posted as a form (the page's CSRF proof, the origin checked) reaches the listening hook,
audited with the token's name; a viewer, an agent's token, another workspace's token, a page
without the proof or from another site are refused and nothing is written. On both engines."""

from __future__ import annotations

import re
from typing import Any

from sqlalchemy import text

from roundtable_console.store.db.database import Store
from roundtable_console.store.replies import listeners
from tests.test_web_requests import ask, notice
from tests.web_support import OTHER_WORKSPACE, Web, register, tokens, web

REPLY_FORM = re.compile(r'<form method="post" action="/actions/sessions/[^"]*/reply"')


def turn_done(store: Store, session_id: str = "s1", *, hook: bool = True) -> str | None:
    """``session_id``'s turn done (it awaits a prompt) and, with ``hook``, its Stop hook
    listening for a reply."""
    with store.write() as db:
        db.execute(
            text(
                "UPDATE agent_sessions SET waiting_reason = 'finished its turn: Shall I deploy?',"
                " waiting_since = NULL WHERE id = :id"
            ),
            {"id": session_id},
        )
    if not hook:
        return None
    return listeners.open_listener(
        store, session_id=session_id, agent="claude-code", wait_seconds=600
    ).id


def send(site: Web, session_id: str = "s1", *, csrf: str | None = None, **fields: str) -> Any:
    proof = csrf if csrf is not None else site.csrf("/sessions")
    return site.client.post(f"/actions/sessions/{session_id}/reply", data={"csrf": proof, **fields})


def replies(store: Store) -> list[tuple[str, str]]:
    with store.read() as db:
        rows = db.execute(
            text(
                "SELECT payload_json, actor FROM agent_session_events"
                " WHERE event_type = 'replied' ORDER BY id"
            )
        ).all()
    return [(row[0], row[1]) for row in rows]


def test_an_operator_replies_from_the_sessions_page(store: Store) -> None:
    register(store, "s1")
    listener = turn_done(store)
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        page = site.client.get("/sessions/s1").text
        assert "Reply to the agent" in page and REPLY_FORM.search(page)
        assert "The reply goes through Claude Code&#39;s Stop hook, which listens until" in page
        assert 'maxlength="4000" required' in page
        part = site.client.get("/fragments/sessions/s1").json()["requests"]
        assert REPLY_FORM.search(part) and f'data-request="reply:hook:{listener}"' in part

        assert '<input type="hidden" name="via" value="hook">' in page
        moved = notice(send(site, message="go", via="pane").text)
        assert moved is not None and moved[0] and "changed since it was shown" in moved[1]
        unsaid = notice(send(site, message="go").text)  # a form that names no route
        assert unsaid is not None and unsaid[0] and "changed since it was shown" in unsaid[1]
        blank = send(site, message="   ", via="hook")
        assert notice(blank.text) == (True, "Nothing was sent: A reply needs some text.")
        sent = send(site, message="Deploy to staging.\r\nThen <b>stop</b>.", via="hook")
        assert sent.url.path == "/sessions/s1"
        assert notice(sent.text) == (False, "Replied to the agent through its hook.")
        # Its hook has it and its agent goes on: it waits for nothing now.
        assert "Reply to the agent" not in sent.text and REPLY_FORM.search(sent.text) is None
        again = notice(send(site, message="and more", via="hook").text)
        assert again == (
            True,
            "Nothing was sent: Its agent is not waiting for a prompt or an answer.",
        )
    taken = listeners.read_listener(store, listener)
    assert (taken.state, taken.message, taken.replied_by) == (
        "replied",
        "Deploy to staging.\nThen <b>stop</b>.",
        "olivia",
    )
    assert [actor for _payload, actor in replies(store)] == ["olivia"]


def test_what_cannot_carry_a_reply_is_said_and_no_form_is_offered(store: Store) -> None:
    register(store, "s1")
    register(store, "s2")
    register(store, "s3")
    turn_done(store, "s1", hook=False)  # waits, but nothing listens and no pane
    turn_done(store, "s3")
    ask(store, "s3")  # a permission request is answered first
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        page = site.client.get("/sessions/s1").text
        assert REPLY_FORM.search(page) is None
        assert "No reply reaches it from here:" in page and "Nothing here can carry" in page
        waits_not = site.client.get("/sessions/s2").text  # waits for nothing
        assert "Reply to the agent" not in waits_not and REPLY_FORM.search(waits_not) is None
        asks = site.client.get("/sessions/s3").text
        assert "Reply to the agent" not in asks and "Permission requests" in asks
        forged = notice(send(site, "s1", message="go on").text)
        assert forged is not None and forged[0] and "Nothing here can carry" in forged[1]
    assert replies(store) == []


def test_a_viewer_or_an_agents_token_sees_the_route_and_is_refused(store: Store) -> None:
    register(store, "s1")
    listener = turn_done(store)
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["viewer"])
        page = site.client.get("/sessions/s1").text
        assert "The reply goes through" in page and REPLY_FORM.search(page) is None
        assert "An operator replies" in page
        refused = send(site, message="ship it")
        assert refused.status_code == 403 and "only an operator replies" in refused.text
    assert listeners.read_listener(store, listener).state == "listening"
    assert replies(store) == []


def test_another_workspaces_token_is_told_nothing_exists(store: Store) -> None:
    register(store, "s1")
    register(store, "theirs", workspace=OTHER_WORKSPACE)
    listener = turn_done(store)
    with web(store) as site:
        site.sign_in(tokens(store)["bound"])
        assert site.client.get("/sessions/s1").status_code == 404
        assert send(site, "s1", message="go").status_code == 404
    assert listeners.read_listener(store, listener).state == "listening"


def test_a_reply_without_the_pages_proof_or_from_another_site_is_refused(store: Store) -> None:
    register(store, "s1")
    listener = turn_done(store)
    with web(store) as site:
        signed_out = site.client.post(
            "/actions/sessions/s1/reply", data={"csrf": "x", "message": "go"},
            follow_redirects=False,
        )  # fmt: skip
        assert signed_out.status_code == 303
        assert "/sign-in?next=%2Fsessions%2Fs1" in signed_out.headers["location"]
        site.sign_in(tokens(store)["operator"])
        assert send(site, csrf="", message="go").status_code == 403
        assert send(site, csrf="f" * 64, message="go").status_code == 403
        evil = site.client.post(
            "/actions/sessions/s1/reply",
            data={"csrf": site.csrf(), "message": "go"},
            headers={"Origin": "https://evil.example"},
        )
        assert evil.status_code == 403
    assert listeners.read_listener(store, listener).state == "listening"
    assert replies(store) == []
