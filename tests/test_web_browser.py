"""The web console in a real browser (issue 21 point 6): Debian's Chromium, headless, driven by
Playwright, against a real ``roundtable serve`` on a free loopback port. The suite brings Chromium
(tests/provisioning.py); without it these tests fail, never skip.

Each test makes sessions of its own in the server's store (a SQLite file this process writes
too, as an agent's CLI would), so the tests share one server per worker."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright
from sqlalchemy import text

from roundtable_console.api.web.reads import FIRST_PAGE_SIZE, PAGE_SIZE
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store, open_store
from roundtable_console.store.requests.asking import open_request, read_request
from tests.api_support import seed_agent, seed_workspace
from tests.serve_support import ROOT, serve_env, serving
from tests.web_support import HOSTILE, WORKSPACE, hold_claim, register

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DESK = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    assert Path(CHROMIUM).exists(), "Chromium is needed (apt-get install chromium)"
    home = tmp_path_factory.mktemp("web-browser")
    url = f"sqlite:///{home / 'roundtable.db'}"
    store = open_store(url)
    seed_workspace(store, WORKSPACE)
    seed_agent(store, "agent-1")
    made = {
        role: create_token(store=store, name=name, role=role).token
        for role, name in (("operator", "olivia"), ("viewer", "vic"))
    }
    with serving(url, home) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield {"store": store, "served": served, "tokens": made, "browser": browser,
                   "url": url, "home": home}  # fmt: skip
        finally:
            browser.close()
            store.dispose()


def signed_in(site: dict[str, Any], role: str = "operator", size: dict[str, int] = DESK,
              **options: Any) -> Page:  # fmt: skip
    browser: Browser = site["browser"]
    context = browser.new_context(viewport=size, **options)
    page = context.new_page()
    page.set_default_timeout(10_000)
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda error: page.errors.append(str(error)))  # type: ignore[attr-defined]
    page.goto(site["served"].url + "/sessions")
    page.fill("#token", site["tokens"][role])
    page.click("button[type=submit]")
    page.wait_for_url("**/sessions")
    expect(page.locator("#live-state")).to_have_text("Live")
    return page


def row(page: Page, session_id: str) -> Any:
    """The session's row, scrolled to when it is further down than the first page.

    The tests of a worker share one site and its sessions, in whatever order the workers ran
    them, so another test's sessions may come first in the attention order.
    """
    found = page.locator(f'tr.row[data-session="{session_id}"]')
    if found.count() == 0:
        every_row(page, until=found)
    return found


def every_row(page: Page, until: Any = None) -> None:
    """Scroll to the list's end until it says so: the next pages come as the reader nears it."""
    end = page.locator("p.more-line, p.end-line")
    for _ in range(40):
        if "The end of the list." in end.inner_text():
            return
        if until is not None and until.count():
            return
        page.locator("#rows > tr").last.scroll_into_view_if_needed()
        page.mouse.wheel(0, 4000)
        page.wait_for_timeout(100)
    raise AssertionError("the list did not reach its end")


def status_of(store: Store, session_id: str) -> str:
    with store.read() as db:
        return str(
            db.execute(
                text("SELECT status FROM agent_sessions WHERE id = :id"), {"id": session_id}
            ).scalar_one()
        )


def test_signing_in_with_a_refused_token_says_why(site: dict[str, Any]) -> None:
    page = site["browser"].new_page()
    page.goto(site["served"].url + "/sessions/anything")
    assert "/sign-in" in page.url
    page.fill("#token", "rt_not-a-token")
    page.click("button[type=submit]")
    expect(page.locator(".sign-in .error")).to_have_text(
        "That token is not valid: unknown, revoked or expired."
    )
    assert page.context.cookies() == []
    page.fill("#token", site["tokens"]["viewer"])
    page.click("button[type=submit]")
    page.wait_for_url("**/sessions/anything")  # back where it was going
    cookie = page.context.cookies()[0]
    assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"]) == (
        "roundtable_web", True, "Strict",
    )  # fmt: skip
    assert page.evaluate("document.cookie") == ""  # no script reads it
    page.context.close()


def test_the_list_is_in_attention_order_and_filters_stay_in_the_url(site: dict[str, Any]) -> None:
    register(site["store"], "b-calm", agent="agent-b")
    register(site["store"], "b-waits", agent="agent-b")
    with site["store"].write() as db:
        db.execute(text("UPDATE agent_sessions SET waiting_reason = 'approve the plan', "
                        "waiting_since = started_at WHERE id = 'b-waits'"))  # fmt: skip
    page = signed_in(site, "viewer")
    ids = page.locator("tr.row").evaluate_all("rows => rows.map(r => r.dataset.session)")
    assert ids.index("b-waits") < ids.index("b-calm")
    expect(row(page, "b-waits")).to_contain_text("⚑ waiting")
    page.fill("#f-agent", "agent-b")
    page.click(".filters button[type=submit]")
    page.wait_for_url("**agent=agent-b**")
    ids = page.locator("tr.row").evaluate_all("rows => rows.map(r => r.dataset.session)")
    assert ids == ["b-waits", "b-calm"]
    page.reload()
    expect(page.locator("#f-agent")).to_have_value("agent-b")
    row(page, "b-calm").locator("a").first.click()
    page.wait_for_url("**/sessions/b-calm")
    expect(page.locator("h1.id")).to_have_text("b-calm")
    expect(page.locator("#fields")).to_contain_text("agent-b")
    page.context.close()


def test_each_action_and_the_confirmations(site: dict[str, Any]) -> None:
    store = site["store"]
    register(store, "c-acts")
    page = signed_in(site)
    actions = row(page, "c-acts")
    actions.get_by_role("button", name="Pause c-acts").click()
    expect(page.locator("#notice")).to_contain_text("c-acts is now paused")
    expect(row(page, "c-acts")).to_contain_text("paused")
    assert status_of(store, "c-acts") == "paused"
    row(page, "c-acts").get_by_role("button", name="Resume c-acts").click()
    expect(page.locator("#dialog")).to_be_visible()
    page.locator("#dialog-confirm").click()
    expect(row(page, "c-acts")).to_contain_text("resuming")
    row(page, "c-acts").get_by_role("button", name="Heartbeat c-acts").click()
    expect(page.locator("#notice")).to_contain_text("Heartbeat: c-acts")
    row(page, "c-acts").get_by_role("button", name="Stop c-acts").click()
    page.locator("#dialog-cancel").click()
    assert status_of(store, "c-acts") == "resuming"  # cancelled: nothing done
    row(page, "c-acts").get_by_role("button", name="Stop c-acts").click()
    page.locator("#dialog-confirm").click()
    expect(row(page, "c-acts")).to_contain_text("stopped")
    assert status_of(store, "c-acts") == "stopped"
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()


def test_terminate_with_claims_needs_the_impact_and_without_does_not(
    site: dict[str, Any],
) -> None:
    store = site["store"]
    register(store, "d-held", agent="agent-d")
    register(store, "d-free", agent="agent-e")
    hold_claim(store, "agent-d", "claim-d")
    page = signed_in(site)
    row(page, "d-held").get_by_role("button", name="Terminate d-held").click()
    dialog = page.locator("#dialog")
    expect(dialog).to_contain_text("src/app.py")
    page.locator("#dialog-confirm").click()  # the textarea is required: the browser stops it
    assert status_of(store, "d-held") == "active"
    page.fill("#impact-details", "claim-d handed back to the queue")
    page.locator("#dialog-confirm").click()
    expect(row(page, "d-held")).to_contain_text("terminated")
    row(page, "d-free").get_by_role("button", name="Terminate d-free").click()
    expect(dialog).to_contain_text("holds no active claim")
    page.locator("#dialog-confirm").click()
    expect(row(page, "d-free")).to_contain_text("terminated")
    with store.read() as db:
        payload = db.execute(
            text(
                "SELECT payload_json FROM agent_session_events WHERE "
                "session_id = 'd-held' AND event_type = 'terminated'"
            )
        ).scalar()
    assert "claim-d handed back to the queue" in payload
    page.context.close()


def test_a_conflict_says_what_changed_and_retries(site: dict[str, Any]) -> None:
    store = site["store"]
    register(store, "e-race")
    page = signed_in(site)
    read_version = row(page, "e-race").get_attribute("data-version")
    # Another operator pauses and resumes it meanwhile, through the CLI; the row follows.
    cli(site, "sessions", "pause", "--session", "e-race")
    cli(site, "sessions", "resume", "--session", "e-race", "--idempotency-key", "cli-resume")
    expect(row(page, "e-race")).to_contain_text("resuming")
    # This operator acts on what they read before (as a page that missed the news would).
    page.evaluate(
        """version => document.querySelectorAll('[data-session="e-race"]')
           .forEach(node => { node.dataset.version = version; })""",
        read_version,
    )
    row(page, "e-race").get_by_role("button", name="Pause e-race").click()
    notice = page.locator("#notice")
    expect(notice).to_contain_text("changed since this page read it")
    expect(notice.get_by_role("button", name="Refresh")).to_be_visible()
    assert status_of(store, "e-race") == "resuming"
    notice.get_by_role("button", name="Retry").click()
    expect(row(page, "e-race")).to_contain_text("paused")
    assert status_of(store, "e-race") == "paused"
    page.context.close()


def cli(site: dict[str, Any], *args: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "roundtable_console", *args, "--db", site["url"]],
        check=True, capture_output=True, cwd=ROOT, env=serve_env(site["home"]),
    )  # fmt: skip


def test_a_change_made_by_the_cli_shows_within_a_second(site: dict[str, Any]) -> None:
    register(site["store"], "f-live")
    page = signed_in(site, "viewer")
    expect(row(page, "f-live")).to_contain_text("active")
    row(page, "f-live").locator("a").first.focus()
    began = time.monotonic()
    cli(site, "sessions", "heartbeat", "--session", "f-live", "--waiting", "review the diff")
    expect(row(page, "f-live")).to_contain_text("⚑ waiting", timeout=5_000)
    assert time.monotonic() - began < 1.0 + 1.0  # the CLI's own start-up is most of it
    # The row was read again in place: the page did not reload or move.
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    page.context.close()


def test_a_row_out_of_view_is_read_again_soon_and_one_in_view_at_once(
    site: dict[str, Any],
) -> None:
    store = site["store"]
    for number in range(8):
        register(store, f"v-{number}", agent="agent-v")
    page = signed_in(site, "viewer", size=PHONE)
    page.goto(site["served"].url + "/sessions?agent=agent-v")
    expect(page.locator("#live-state")).to_have_text("Live")
    ids = page.locator("tr.row").evaluate_all("rows => rows.map(r => r.dataset.session)")
    top, bottom = ids[0], ids[-1]
    row(page, top).scroll_into_view_if_needed()  # below the filters on a phone: brought up
    assert not row(page, bottom).is_visible() or row(page, bottom).bounding_box()["y"] > 844
    cli(site, "sessions", "pause", "--session", top)
    cli(site, "sessions", "pause", "--session", bottom)
    began = time.monotonic()
    expect(row(page, top)).to_contain_text("paused", timeout=2_000)
    assert time.monotonic() - began < 1.5
    expect(row(page, bottom)).to_have_attribute("data-stale", "1")  # told, not read yet
    expect(row(page, bottom)).to_contain_text("paused", timeout=6_000)
    page.context.close()


def test_a_viewer_sees_no_action(site: dict[str, Any]) -> None:
    register(site["store"], "g-view")
    page = signed_in(site, "viewer")
    expect(row(page, "g-view")).to_be_visible()
    assert page.locator("[data-action]").count() == 0
    page.goto(site["served"].url + "/sessions/g-view")
    assert page.locator("[data-action]").count() == 0
    page.keyboard.press("p")
    assert status_of(site["store"], "g-view") == "active"
    page.context.close()


def test_the_keys_match_the_consoles(site: dict[str, Any]) -> None:
    register(site["store"], "h-keys")
    page = signed_in(site)
    row(page, "h-keys").focus()
    page.keyboard.press("p")
    expect(row(page, "h-keys")).to_contain_text("paused")
    row(page, "h-keys").focus()
    page.keyboard.press("Enter")
    page.wait_for_url("**/sessions/h-keys")
    page.keyboard.press("b")
    page.wait_for_url("**/sessions/h-keys/briefing")
    page.keyboard.press("Escape")
    page.wait_for_url("**/sessions")
    page.keyboard.press("?")
    expect(page.locator("#dialog")).to_contain_text("Keyboard shortcuts")
    page.context.close()


def test_the_list_brings_its_next_pages_as_the_reader_scrolls_to_its_end(
    site: dict[str, Any],
) -> None:
    store = site["store"]
    for number in range(FIRST_PAGE_SIZE + PAGE_SIZE + 5):
        register(store, f"scroll-{number:03d}")
    with store.read() as db:
        total = int(db.execute(text("SELECT count(*) FROM agent_sessions")).scalar_one())
    page = signed_in(site)
    first_load = page.context.request.get(site["served"].url + "/sessions").text()
    assert first_load.count('<tr class="row ') == FIRST_PAGE_SIZE  # a few screens' worth
    # A next page that fails is said, and the link asks for it again.
    page.route("**/sessions?*cursor=*", lambda route: route.fulfill(status=503, body="down"))
    page.reload()
    page.locator("#more").scroll_into_view_if_needed()
    expect(page.locator("#notice")).to_contain_text("The next sessions did not load")
    expect(page.locator("#rows > tr")).to_have_count(FIRST_PAGE_SIZE)
    page.unroute("**/sessions?*cursor=*")
    page.locator("#more").click()
    expect(page.locator("#rows > tr")).to_have_count(FIRST_PAGE_SIZE + PAGE_SIZE)
    # Nothing more is clicked: scrolling towards the end brings each next page.
    every_row(page)
    shown = page.locator("#rows > tr").evaluate_all("rows => rows.map(r => r.dataset.session)")
    assert len(shown) == total and len(set(shown)) == total  # every session, each once
    assert page.errors == []  # type: ignore[attr-defined]


def test_many_sessions_act_together_after_the_consoles_preview(site: dict[str, Any]) -> None:
    store = site["store"]
    for session_id in ("m-one", "m-two", "m-held"):
        register(store, session_id, agent="agent-m")
    with store.write() as db:
        db.execute(text("UPDATE agent_sessions SET status = 'paused' WHERE id = 'm-held'"))
    page = signed_in(site)
    every_row(page)  # the earlier tests' sessions come first
    bar = page.locator("#bulk-bar")
    expect(bar.locator("#bulk-count")).to_have_text("No session selected")
    page.get_by_role("checkbox", name="Select m-one", exact=True).check()
    page.get_by_role("checkbox", name="Select m-held", exact=True).check()
    expect(bar.locator("#bulk-count")).to_have_text("2 sessions selected")
    bar.get_by_role("button", name="Pause…").click()
    dialog = page.locator("#dialog")
    expect(dialog).to_contain_text("Pause applies to 1 of the 2 selected sessions")
    expect(dialog).to_contain_text("already paused: m-held")
    assert status_of(store, "m-one") == "active"  # the preview wrote nothing
    page.get_by_role("button", name="Pause 1").click()
    expect(page.locator("#notice")).to_contain_text("Pause: 1 of 2 done")
    expect(row(page, "m-one")).to_contain_text("paused")
    assert status_of(store, "m-one") == "paused"
    # What was done is no longer selected; what was skipped stays, as in the console.
    expect(page.get_by_role("checkbox", name="Select m-one", exact=True)).not_to_be_checked()
    expect(page.get_by_role("checkbox", name="Select m-held", exact=True)).to_be_checked()
    page.keyboard.press("u")
    expect(bar.locator("#bulk-count")).to_have_text("No session selected")
    # The console's keys: space selects the focused row, then t acts on the selection.
    hold_claim(store, "agent-m", "claim-m")
    row(page, "m-two").focus()
    page.keyboard.press(" ")
    expect(bar.locator("#bulk-count")).to_have_text("1 session selected")
    page.keyboard.press("t")
    expect(dialog).to_contain_text("Agent agent-m: 1 claim")
    expect(dialog).to_contain_text("Impact (required)")
    page.get_by_role("button", name="Terminate 1").click()
    expect(page.locator("#dialog-error")).to_contain_text("Say what terminating does")
    assert status_of(store, "m-two") == "active"
    page.fill("#impact-details", "claim-m released by hand")
    page.get_by_role("button", name="Terminate 1").click()
    expect(page.locator("#notice")).to_contain_text("Terminate: 1 of 1 done")
    assert status_of(store, "m-two") == "terminated"
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()


def test_the_briefing_copies_its_markdown(site: dict[str, Any]) -> None:
    register(site["store"], "i-brief")
    page = signed_in(site, "viewer", permissions=["clipboard-read", "clipboard-write"])
    page.goto(site["served"].url + "/sessions/i-brief/briefing")
    expect(page.locator(".markdown h1")).to_have_text("Roundtable Resume Briefing")
    page.get_by_role("button", name="Copy Markdown of the briefing").click()
    expect(page.locator("#notice")).to_have_text("Copied.")
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith("# Roundtable Resume Briefing") and "agent-1" in copied
    assert copied == page.locator("#briefing-markdown").text_content()
    page.context.close()


def test_the_phone_size_has_no_sideways_scroll_and_big_targets(site: dict[str, Any]) -> None:
    register(site["store"], "j-phone-with-a-rather-long-session-identifier-0001")
    page = signed_in(site, size=PHONE)
    for path in (
        "/sessions",
        "/sessions/j-phone-with-a-rather-long-session-identifier-0001",
        "/requests",
        "/overview",
        "/audit",
    ):
        page.goto(site["served"].url + path)
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (path, width)
        for box in page.locator("main button:visible, main .button:visible").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().height)"
        ):
            assert box >= 44, (path, box)
    page.goto(site["served"].url + "/sessions")
    for box in page.locator("main .mark-target:visible").evaluate_all(
        "els => els.map(e => e.getBoundingClientRect().height)"
    ):
        assert box >= 44, ("a row's selection", box)
    page.context.close()


def test_hostile_values_render_as_text_and_run_nothing(site: dict[str, Any]) -> None:
    for number, hostile in enumerate(HOSTILE):
        register(site["store"], f"k-hostile-{number}", agent=hostile, model=hostile)
    page = signed_in(site)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(site["served"].url + "/sessions?q=k-hostile")
    expect(row(page, "k-hostile-0")).to_contain_text("<script>window.__pwned = 1</script>")
    expect(row(page, "k-hostile-1")).to_contain_text('"><img src=x onerror=')
    expect(row(page, "k-hostile-4")).to_contain_text("\\u202etxt.exe")
    page.goto(site["served"].url + "/sessions/k-hostile-1")
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img").count() == 0 and dialogs == []
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()


def test_a_lost_connection_is_shown_and_recovered(site: dict[str, Any]) -> None:
    store = site["store"]
    register(store, "l-back")
    with serving(site["url"], site["home"] / "second") as second:
        page = site["browser"].new_page()
        page.goto(second.url + "/sign-in")
        page.fill("#token", site["tokens"]["viewer"])
        page.click("button[type=submit]")
        expect(page.locator("#live-state")).to_have_text("Live")
        every_row(page)  # the earlier tests' sessions come first
        port = second.url.rsplit(":", 1)[1]
        assert second.stop() == 0
        expect(page.locator("#live-state")).to_have_text("Live: reconnecting…")
        with serving(site["url"], site["home"] / "third", port=int(port)):
            expect(page.locator("#live-state")).to_have_text("Live", timeout=15_000)
            cli(site, "sessions", "pause", "--session", "l-back")
            expect(row(page, "l-back")).to_contain_text("paused", timeout=5_000)
        page.context.close()


def test_revoking_the_token_signs_its_open_page_out(site: dict[str, Any]) -> None:
    register(site["store"], "m-revoked")
    site["tokens"]["short-lived"] = create_token(
        store=site["store"], name="sam", role="viewer"
    ).token
    page = signed_in(site, "short-lived")
    cli(site, "tokens", "revoke", "--name", "sam")
    cli(site, "sessions", "heartbeat", "--session", "m-revoked")  # a change wakes the stream
    expect(page.locator("#notice")).to_contain_text("Your sign-in ended", timeout=5_000)
    page.reload()
    assert "/sign-in" in page.url
    page.context.close()


def test_the_transcript_page_follows_the_agents_transcript(site: dict[str, Any]) -> None:
    """What the agent is doing, on its page: the transcript's newest entries, as text, read
    again while the page is seen and shown when the file grew."""
    import json

    external = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"
    path = site["home"] / "agent" / ".claude" / "projects" / "-w" / f"{external}.jsonl"
    path.parent.mkdir(parents=True)

    def say(role: str, words: str) -> None:
        with path.open("a") as handle:
            line = {"type": role, "message": {"role": role, "content": words}}
            handle.write(json.dumps(line) + "\n")

    say("user", "<img src=x onerror=window.__pwned=1> fix it")
    register(site["store"], "j-transcript", adapter="claude", external_session_id=external,
             metadata={"transcript_path": str(path)})  # fmt: skip
    page = signed_in(site, "viewer")
    page.goto(site["served"].url + "/sessions/j-transcript/transcript")
    entries = page.locator("#transcript .entry")
    expect(entries).to_have_count(1)
    expect(entries.first.locator("pre")).to_have_text("<img src=x onerror=window.__pwned=1> fix it")
    say("assistant", "Fixed, and the tests pass.")
    expect(entries).to_have_count(2, timeout=10_000)
    expect(entries.nth(1)).to_contain_text("Fixed, and the tests pass.")
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()


def test_a_permission_request_is_allowed_from_the_sessions_page(site: dict[str, Any]) -> None:
    """The session's page shows its pending request (the input as text); Allow is a form: the
    page comes back saying what was done, and the record is allowed by the operator. A request
    asked while the page is open shows without a reload; at a phone's width nothing scrolls
    sideways and every button is a thumb's size."""
    store = site["store"]
    session_id = "n-asks-with-a-rather-long-session-identifier-0001"
    register(store, session_id, agent="agent-n")

    def ask(command: str) -> Any:
        return open_request(
            store, session_id=session_id, agent="claude-code", tool_name="Bash",
            tool_input={"command": command, "description": "Deploy the site"},
            suggestions=[{"type": "addRules", "behavior": "allow", "destination": "localSettings",
                          "rules": [{"toolName": "Bash", "ruleContent": "make deploy:*"}]}],
            reason=f"asks to run Bash: {command}", wait_seconds=600,
        )  # fmt: skip

    record = ask("make deploy <script>window.__pwned = 4</script>")
    page = signed_in(site)
    page.goto(f"{site['served'].url}/sessions/{session_id}")
    card = page.locator(f'[data-request="{record.id}"]')
    expect(card.locator("pre")).to_contain_text('"make deploy <script>window.__pwned = 4</script>"')
    expect(card).to_contain_text("Allow, and don't ask again:")
    card.get_by_role("button", name="Allow", exact=True).click()
    page.wait_for_url(f"**/sessions/{session_id}")
    expect(page.locator("#notice")).to_have_text(f"Allowed Bash for {session_id}.")
    expect(card).to_have_count(0)
    decided = read_request(store, record.id)
    assert (decided.state, decided.decided_by) == ("allowed", "olivia")
    expect(page.locator("#live-state")).to_have_text("Live")
    later = ask("make clean")
    expect(page.locator(f'[data-request="{later.id}"]')).to_be_visible(timeout=5_000)
    assert page.evaluate("window.__pwned") is None
    assert page.errors == []  # type: ignore[attr-defined]
    page.context.close()

    phone = signed_in(site, size=PHONE)
    for path in (f"/sessions/{session_id}", "/requests"):
        phone.goto(site["served"].url + path)
        expect(phone.locator(f'[data-request="{later.id}"]')).to_be_visible()
        width = phone.evaluate("document.documentElement.scrollWidth")
        assert width <= PHONE["width"], (path, width)
        for box in phone.locator(".request button:visible").evaluate_all(
            "els => els.map(e => e.getBoundingClientRect().height)"
        ):
            assert box >= 44, (path, box)
    phone.fill(f"#deny-{later.id}", "Not today.")
    phone.get_by_role("button", name="Deny", exact=True).click()
    phone.wait_for_url("**/requests")
    expect(phone.locator("#notice")).to_contain_text("Denied Bash for")
    assert read_request(store, later.id).message == "Not today."
    phone.context.close()


def test_a_reply_is_sent_from_the_sessions_page_on_a_phone(site: dict[str, Any]) -> None:
    """While a session's agent waits for a prompt and its Stop hook listens, its page offers a
    reply (shown without a reload once the hook listens); at a phone's width nothing scrolls
    sideways and the button is a thumb's size; the reply reaches the hook as typed, as text."""
    from roundtable_console.store.replies import listeners
    from roundtable_console.store.writes.agent_writes import heartbeat

    store = site["store"]
    session_id = "n-waits-for-a-prompt-with-a-rather-long-session-identifier"
    register(store, session_id, agent="agent-r")
    with store.write() as db:
        heartbeat(db=db, session_id=session_id, status="active", turn_done="Shall I deploy?")
    phone = signed_in(site, size=PHONE)
    phone.goto(f"{site['served'].url}/sessions/{session_id}")
    expect(phone.locator("#live-state")).to_have_text("Live")
    expect(phone.locator("#reply")).to_contain_text("No reply reaches it from here")
    listener = listeners.open_listener(
        store, session_id=session_id, agent="claude-code", wait_seconds=600
    )
    form = phone.locator("#reply form")
    expect(form).to_be_visible(timeout=5_000)  # the hook's listening, followed live
    expect(phone.locator("#reply-route")).to_contain_text("through Claude Code's Stop hook")
    width = phone.evaluate("document.documentElement.scrollWidth")
    assert width <= PHONE["width"], width
    assert phone.locator("#reply button").bounding_box()["height"] >= 44
    words = "Deploy <script>window.__pwned = 5</script>\nthen stop."
    phone.fill("#reply-message", words)
    phone.get_by_role("button", name="Send reply").click()
    phone.wait_for_url(f"**/sessions/{session_id}")
    expect(phone.locator("#notice")).to_have_text("Replied to the agent through its hook.")
    expect(phone.locator("#reply")).to_have_count(0)  # its agent goes on: it waits no more
    taken = listeners.read_listener(store, listener.id)
    assert (taken.state, taken.message, taken.replied_by) == ("replied", words, "olivia")
    assert phone.evaluate("window.__pwned") is None
    assert phone.errors == []  # type: ignore[attr-defined]
    phone.context.close()
