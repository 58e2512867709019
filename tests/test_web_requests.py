"""Permission requests in the web console, in-process (issue 30): a session's pending requests on
its page and every reachable one on ``/requests``, each shown as text (its input in a ``<pre>``,
escaped); an operator's allow, allow with one of the agent's suggestions, and deny with a message,
posted as forms (the page's CSRF proof, the origin checked) and answered by a redirect that says
what happened; a viewer offered nothing and refused; another workspace's token told nothing
exists; a second decision told who decided; a Gemini request saying why it cannot be answered
here. On both engines."""

from __future__ import annotations

import re
import time
from typing import Any

from sqlalchemy import text

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.requests.asking import open_request, read_request
from roundtable_console.store.requests.records import WHY_NOT, PermissionRequestRecord
from tests.web_support import OTHER_WORKSPACE, Web, register, tokens, web

SUGGESTIONS = [
    {"type": "addRules", "rules": [{"toolName": "Bash", "ruleContent": "make:*"}],
     "behavior": "allow", "destination": "localSettings"},
]  # fmt: skip
HOSTILE_INPUT = {"command": "echo '<script>alert(1)</script>'", "note": "\x1b[2J\x1b]52;c;aGk=\x07"}
NOTICE = re.compile(r'<div id="notice" class="notice( problem)?"[^>]*>(.*?)</div>', re.DOTALL)
DECISION_FORM = re.compile(r'<form method="post" action="/actions/sessions/[^"]*/requests/')


def ask(
    store: Store,
    session_id: str = "s1",
    *,
    agent: str = "claude-code",
    tool_input: Any = None,
    suggestions: Any = None,
    reason: str = "asks to run Bash: make deploy",
    wait_seconds: float = 600,
) -> PermissionRequestRecord:
    return open_request(
        store,
        session_id=session_id,
        agent=agent,
        tool_name="Bash" if agent != "gemini" else "run_shell_command",
        tool_input=tool_input if tool_input is not None else {"command": "make deploy"},
        suggestions=suggestions,
        reason=reason,
        wait_seconds=wait_seconds,
    )


def decide(
    site: Web,
    record: PermissionRequestRecord,
    decision: str,
    *,
    session_id: str | None = None,
    csrf: str | None = None,
    follow: bool = True,
    **fields: str,
) -> Any:
    """A decision's form posted as the page's does (its CSRF proof read off the page)."""
    where = session_id or record.session_id
    proof = csrf if csrf is not None else site.csrf("/sessions")
    return site.client.post(
        f"/actions/sessions/{where}/requests/{record.id}/{decision}",
        data={"csrf": proof, **fields},
        follow_redirects=follow,
    )


def notice(html: str) -> tuple[bool, str] | None:
    found = NOTICE.search(html)
    if found is None or not found.group(2):
        return None
    return bool(found.group(1)), re.sub(r"<[^>]+>", "", found.group(2)).replace("&#39;", "'")


def test_a_pending_request_is_shown_whole_and_as_text(store: Store) -> None:
    register(store, "s1")
    record = ask(store, tool_input=HOSTILE_INPUT, suggestions=SUGGESTIONS,
                 reason="asks to run Bash: <img src=x onerror=alert(2)> \x1b[31m")  # fmt: skip
    long = ask(store, tool_input={"command": "x" * 70_000})
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        for url in ("/sessions/s1", "/requests"):
            page = site.client.get(url).text
            assert page.count('class="request card"') == 2, url
            shown = re.search(rf'id="request-{record.id}".*?</article>', page, re.DOTALL)[0]
            assert "<script>alert(1)" not in page and "<img src=x" not in page, url
            assert "\x1b" not in page and "\x07" not in page, url
            pre = re.search(r'<pre class="request-input"[^>]*>(.*?)</pre>', shown, re.DOTALL)[1]
            assert "&lt;script&gt;alert(1)&lt;/script&gt;" in pre  # the whole input, as text
            assert "\n" in pre and "&#34;command&#34;: " in pre  # indented, line by line
            assert "&lt;img src=x onerror=alert(2)&gt; \\e[31m" in shown  # the reason, printable
            assert "Asked <time" in shown and "waits until" in shown and "(<time" in shown
            assert ">Allow</button>" in shown and ">Deny</button>" in shown
            assert "Allow, and don't ask again: <code>{&#34;type&#34;: &#34;addRules&#34;" in (
                shown
            )
            assert 'name="suggestion" value="0"' in shown
            assert "Message to the agent" in shown
            assert "Input cut" not in shown
            cut = re.search(rf'id="request-{long.id}".*?</article>', page, re.DOTALL)[0]
            assert "Input cut" in cut
        # The session's page names no session; the fleet's names each, linked.
        assert '<a href="/sessions/s1">s1</a>' in site.client.get("/requests").text
        # Read again in place while the page is open (the live stream said s1 changed).
        part = site.client.get("/fragments/sessions/s1").json()["requests"]
        assert f'data-request="{record.id}"' in part and "<script>alert(1)" not in part
        fleet = site.client.get("/fragments/requests").json()["html"]
        assert f'data-request="{long.id}"' in fleet and 'name="csrf" value="' in fleet


def test_the_requests_page_is_linked_from_every_pages_navigation(store: Store) -> None:
    register(store, "s1")
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        assert '<a href="/requests">Requests</a>' in site.client.get("/sessions").text
        page = site.client.get("/requests").text
        assert '<a href="/requests" aria-current="page">Requests</a>' in page
        assert "No permission request is waiting." in page
        assert "No permission request" not in site.client.get("/sessions/s1").text


def test_an_operator_allows_and_denies_with_a_message(store: Store) -> None:
    register(store, "s1")
    first, second, third = ask(store), ask(store), ask(store, suggestions=SUGGESTIONS)
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        sent = decide(site, first, "allow", back="session", follow=False)
        assert sent.status_code == 303 and sent.headers["location"] == "/sessions/s1"
        back = site.client.get("/sessions/s1")
        assert notice(back.text) == (False, "Allowed Bash for s1.")
        assert f'data-request="{first.id}"' not in back.text  # no longer pending
        assert notice(site.client.get("/sessions/s1").text) is None  # said once
        denied = decide(site, second, "deny", back="requests", message="Not on main.\r\nAsk me.")
        assert denied.url.path == "/requests"
        assert notice(denied.text) == (
            False,
            "Denied Bash for s1, with the message: Not on main.\\nAsk me.",
        )  # one line: its line break shown as an escape
        always = decide(site, third, "allow", suggestion="0")
        assert notice(always.text)[1].startswith("Allowed Bash for s1, and don't ask again: {")
    allowed, refused, remembered = (read_request(store, one.id) for one in (first, second, third))
    assert (allowed.state, allowed.decided_by, allowed.message) == ("allowed", "olivia", None)
    assert (refused.state, refused.decided_by) == ("denied", "olivia")
    assert refused.message == "Not on main.\nAsk me."  # the textarea's CR LF kept as a line break
    assert (remembered.state, remembered.accepted_suggestion) == ("allowed", 0)
    with store.read() as db:
        actors = db.execute(
            text("SELECT actor FROM agent_session_events WHERE event_type = 'permission_decided'")
        ).scalars()
        assert list(actors) == ["olivia"] * 3  # audited, as the token's name


def test_what_the_service_refuses_is_said_and_changes_nothing(store: Store) -> None:
    register(store, "s1")
    record = ask(store, suggestions=SUGGESTIONS)
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        for fields, words in (
            ({"suggestion": "7"}, "The agent offered 1 suggestion(s); there is no number 7."),
            ({"suggestion": "-1"}, "'-1' is not one of the agent's suggestions."),
        ):
            answer = decide(site, record, "allow", **fields)
            assert answer.status_code == 200 and notice(answer.text) == (True, words)
        too_long = decide(site, record, "deny", message="x" * 2001)
        assert notice(too_long.text) == (True, "A message is at most 2000 printable characters.")
        assert decide(site, record, "maybe").status_code == 404
    assert read_request(store, record.id).state == "pending"


def test_an_input_with_hidden_secrets_is_allowed_only_knowing_it(store: Store) -> None:
    register(store, "s1")
    secret = "sk-ant-api03-" + "A" * 40
    record = ask(store, tool_input={"command": f"curl -H 'x-api-key: {secret}' api.example"})
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        page = site.client.get("/sessions/s1").text
        assert secret not in page and "look like secrets and are hidden" in page
        assert 'name="despite_hidden" value="1" required' in page  # the browser asks first
        unknowing = notice(decide(site, record, "allow").text)
        assert unknowing is not None and unknowing[0] and "look like secrets" in unknowing[1]
        assert read_request(store, record.id).state == "pending"
        knowing = notice(decide(site, record, "allow", despite_hidden="1").text)
        assert knowing == (False, "Allowed Bash for s1.")
    assert read_request(store, record.id).state == "allowed"


def test_a_viewer_sees_the_request_and_no_decision_and_is_refused_one(store: Store) -> None:
    register(store, "s1")
    record = ask(store, suggestions=SUGGESTIONS)
    with web(store) as site:
        site.sign_in(tokens(store)["viewer"])
        for url in ("/sessions/s1", "/requests"):
            page = site.client.get(url).text
            assert f'data-request="{record.id}"' in page and "make deploy" in page
            assert DECISION_FORM.search(page) is None and ">Allow</button>" not in page, url
            assert "An operator answers it" in page
        assert (
            DECISION_FORM.search(site.client.get("/fragments/sessions/s1").json()["requests"])
            is None
        )
        refused = decide(site, record, "allow")
        assert refused.status_code == 403 and "only an operator answers" in refused.text
    assert read_request(store, record.id).state == "pending"


def test_another_workspaces_token_is_told_nothing_exists(store: Store) -> None:
    register(store, "s1")
    register(store, "theirs", workspace=OTHER_WORKSPACE)
    record = ask(store)
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["bound"])  # an operator bound to the other workspace
        assert site.client.get("/sessions/s1").status_code == 404
        page = site.client.get("/requests").text
        assert record.id not in page and "No permission request is waiting." in page
        for where in ("s1", "theirs"):  # its own session's path does not reach it either
            refused = decide(site, record, "allow", session_id=where)
            assert refused.status_code == 404, where
            assert "Permission request not found" in refused.text or "not found" in refused.text
        # One of its own sessions' requests is listed for it, and it decides it.
        own = ask(store, "theirs")
        assert f'data-request="{own.id}"' in site.client.get("/requests").text
        site.sign_in(made["operator"])
        assert decide(site, record, "allow", session_id="theirs").status_code == 404
    assert read_request(store, record.id).state == "pending"


def test_a_second_decision_is_told_who_decided(store: Store) -> None:
    register(store, "s1")
    record = ask(store)
    late = ask(store, wait_seconds=0.2)
    oscar = create_token(store=store, name="oscar", role="operator").token
    with web(store) as site:
        made = tokens(store)
        site.sign_in(made["operator"])
        site.sign_in(oscar)
        assert notice(decide(site, record, "allow").text) == (False, "Allowed Bash for s1.")
        site.sign_in(made["operator"])
        lost = decide(site, record, "deny", message="no")
        said = notice(lost.text)
        assert said is not None and said[0]
        assert said[1].startswith("Already allowed by oscar (")
        assert said[1].endswith("): your deny of Bash for s1 was not sent.")
        # The same decision as the first is no exception: it was not this operator's.
        again = notice(decide(site, record, "allow").text)
        assert again is not None and again[1].startswith("Already allowed by oscar")
        time.sleep(0.3)
        expired = notice(decide(site, late, "allow").text)
        assert expired is not None and expired[1].startswith("Too late: the request for Bash")
    settled = read_request(store, record.id)
    assert (settled.state, settled.decided_by, settled.message) == ("allowed", "oscar", None)


def test_a_gemini_request_says_why_it_cannot_be_answered_here(store: Store) -> None:
    register(store, "g1", adapter="gemini")
    record = ask(store, "g1", agent="gemini", tool_input={"command": "rm -rf build"})
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        page = site.client.get("/sessions/g1").text
        shown = re.search(rf'id="request-{record.id}".*?</article>', page, re.DOTALL)[0]
        assert "rm -rf build" in shown and DECISION_FORM.search(shown) is None
        assert "Not answered from here:" in shown
        assert WHY_NOT["gemini"].replace("'", "&#39;") in shown
        forged = notice(decide(site, record, "allow").text)
        assert forged == (True, WHY_NOT["gemini"])
    assert read_request(store, record.id).state == "pending"


def test_a_decision_without_the_pages_proof_or_from_another_site_is_refused(
    store: Store,
) -> None:
    register(store, "s1")
    record = ask(store)
    with web(store) as site:
        made = tokens(store)
        url = f"/actions/sessions/s1/requests/{record.id}/allow"
        signed_out = site.client.post(url, data={"csrf": "x"}, follow_redirects=False)
        assert (
            signed_out.status_code == 303
            and "/sign-in?next=%2Fsessions%2Fs1" in (signed_out.headers["location"])
        )
        site.sign_in(made["operator"])
        assert decide(site, record, "allow", csrf="").status_code == 403
        assert decide(site, record, "allow", csrf="f" * 64).status_code == 403
        evil = site.client.post(
            url, data={"csrf": site.csrf()}, headers={"Origin": "https://evil.example"}
        )
        assert evil.status_code == 403
        # A notice is said only when this sign-in's server set it: one forged is not.
        site.client.cookies.set("roundtable_notice", "LUFsbG93ZWQ.0123456789abcdef")
        assert notice(site.client.get("/sessions/s1").text) is None
    assert read_request(store, record.id).state == "pending"


def test_form_fields_beyond_any_form_are_a_problem_not_a_crash() -> None:
    import pytest

    from roundtable_console.api.problems import Problem
    from roundtable_console.api.web.signin import form_fields

    assert form_fields(b"a=1&b=2") == {"a": "1", "b": "2"}
    with pytest.raises(Problem):
        form_fields("&".join(f"f{n}=x" for n in range(50)).encode())
