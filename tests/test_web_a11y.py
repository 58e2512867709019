"""Every page and dialog of the web console checked by a rule suite nobody here wrote: Deque's
axe-core (from npm, tests/axe, which the suite brings: tests/provisioning.py) run in Chromium
against a real ``roundtable serve``, at desk and phone widths, in light and dark: no serious or
critical violation; the moderate ones are printed. And every action by keyboard alone (issue 33)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, BrowserContext, Page, expect, sync_playwright
from sqlalchemy import text

from roundtable_console.store.access.devices import device_key_of
from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.access.web_sessions import sign_in
from roundtable_console.store.db.database import open_store
from roundtable_console.store.hosts.facts import AgentFound, HostFacts
from roundtable_console.store.hosts.registry import connect as connect_host
from roundtable_console.store.hosts.registry import disconnect as disconnect_host
from roundtable_console.store.replies import listeners
from roundtable_console.store.requests.asking import open_request
from roundtable_console.store.writes.agent_writes import heartbeat
from tests.api_support import seed_agent, seed_workspace
from tests.serve_support import ROOT, serving
from tests.test_device_sign_ins import AppKey
from tests.web_support import WORKSPACE, hold_claim, register

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
AXE = ROOT / "tests" / "axe" / "node_modules" / "axe-core" / "axe.min.js"
SIZES = {"desk": {"width": 1280, "height": 800}, "phone": {"width": 390, "height": 844}}
SCHEMES = ("light", "dark")
FAILING = ("serious", "critical")
CLAUDE_ID = "3f0c8a52-7c1e-4b8e-9a57-2f1d7c0e9b11"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    assert Path(CHROMIUM).exists(), "Chromium is needed (apt-get install chromium)"
    assert AXE.exists(), f"{AXE} is missing: run `npm ci --prefix tests/axe` (the suite does)"
    home = tmp_path_factory.mktemp("web-a11y")
    url = f"sqlite:///{home / 'roundtable.db'}"
    store = open_store(url)
    seed_workspace(store, WORKSPACE)
    seed_agent(store, "agent-1")
    transcript = home / "agent" / ".claude" / "projects" / "-w" / f"{CLAUDE_ID}.jsonl"
    transcript.parent.mkdir(parents=True)
    lines = [
        {"type": "user", "message": {"role": "user", "content": "Fix the build"}},
        {"type": "assistant", "message": {"role": "assistant", "content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "make test"}}]}},
        {"type": "assistant", "message": {"role": "assistant", "content": "Fixed."}},
    ]  # fmt: skip
    transcript.write_text("".join(json.dumps(line) + "\n" for line in lines))
    register(store, "a-calm", agent="agent-1")
    register(store, "a-asks", agent="agent-1")
    register(store, "a-done", agent="agent-2", adapter="claude", external_session_id=CLAUDE_ID,
             metadata={"transcript_path": str(transcript)})  # fmt: skip
    register(store, "a-held", agent="agent-3")
    with store.write() as db:
        heartbeat(db=db, session_id="a-asks", waiting="asks to run Bash: rm -rf build/")
        heartbeat(db=db, session_id="a-done", status="active", turn_done="Fixed.")
        db.execute(text("UPDATE agent_sessions SET status = 'paused' WHERE id = 'a-held'"))
    hold_claim(store, "agent-1")
    # Pending permission requests: one with the agent's suggestion and a secret in its input
    # (hidden: an allow says it knows), one Gemini's (said why it cannot be answered here),
    # shown on their sessions' pages and on /requests.
    open_request(
        store, session_id="a-asks", agent="claude-code", tool_name="Bash",
        tool_input={"command": "rm -rf build/", "description": "Clean the build",
                    "env": {"TOKEN": "sk-ant-api03-" + "A" * 40}},
        suggestions=[{"type": "addRules", "behavior": "allow", "destination": "localSettings",
                      "rules": [{"toolName": "Bash", "ruleContent": "rm -rf build/:*"}]}],
        reason="asks to run Bash: rm -rf build/", wait_seconds=3600,
    )  # fmt: skip
    open_request(
        store, session_id="a-held", agent="gemini", tool_name="run_shell_command",
        tool_input={"command": "make"}, suggestions=None, reason="asks to run make",
        wait_seconds=3600,
    )  # fmt: skip
    # a-done's turn is done and its Stop hook listens: its page offers a reply.
    listeners.open_listener(store, session_id="a-done", agent="claude-code", wait_seconds=3600)
    with store.write() as db:  # a host online with its agents, one offline with none
        for name, agents in (("laptop", (AgentFound("claude-code", "2.1.328"),)), ("ci", ())):
            connect_host(db, HostFacts(name=name, agents=agents, projects=("/srv/api",)),
                         connection_id=name)  # fmt: skip
        disconnect_host(db, "ci", connection_id="ci")
    made = {
        role: create_token(store=store, name=name, role=role).token
        for role, name in (("operator", "olivia"), ("viewer", "vic"))
    }
    # The operator's phone is kept signed in: the notifications page lists it.
    sign_in(
        store=store, token=made["operator"], device=device_key_of("Olivia's phone", AppKey().public)
    )
    with serving(url, home) as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield {"store": store, "served": served, "tokens": made, "browser": browser}
        finally:
            browser.close()
            store.dispose()


# A page is whole once loaded and, where it follows the store, once its stream is open: the same
# violations as after the network has been idle for half a second (checked on every page).
SETTLED = """() => {
    const state = document.querySelector('#live-state');
    return !state || state.dataset.state !== 'off';
}"""


def _context(site: dict[str, Any], size: str, scheme: str, role: str | None) -> BrowserContext:
    """A browser of its own at ``size`` in ``scheme``, signed in as ``role`` (None: not)."""
    browser: Browser = site["browser"]
    # The page's CSP lets no script in but its own: axe is added past it, for the test only.
    context = browser.new_context(viewport=SIZES[size], color_scheme=scheme, bypass_csp=True)
    context.set_default_timeout(10_000)
    if role is not None:
        page = context.new_page()
        page.goto(site["served"].url + "/sign-in")
        page.fill("#token", site["tokens"][role])
        page.click("button[type=submit]")
        page.wait_for_url("**/sessions")
        page.close()
    return context


def _page(site: dict[str, Any], size: str, scheme: str, role: str | None = "operator") -> Page:
    page = _context(site, size, scheme, role).new_page()
    page.goto(site["served"].url + "/sign-in" if role is None else site["served"].url + "/sessions")
    return page


def _axe(page: Page, where: str) -> list[dict[str, Any]]:
    """The serious and critical violations on ``page`` now; moderate ones printed."""
    page.add_script_tag(path=str(AXE))
    result = page.evaluate(
        "async () => (await axe.run(document, {resultTypes: ['violations']})).violations"
    )
    found = []
    for violation in result:
        nodes = [node["target"] for node in violation["nodes"]][:5]
        line = f"{where}: {violation['impact']} {violation['id']}: {violation['help']} {nodes}"
        if violation["impact"] in FAILING:
            found.append(line)
        else:
            print("axe (not failing):", line)
    return found


PAGES = [
    ("sign-in", None, "/sign-in"),
    ("sessions", "operator", "/sessions"),
    ("session", "operator", "/sessions/a-asks"),
    ("session (reply)", "operator", "/sessions/a-done"),
    ("briefing", "operator", "/sessions/a-asks/briefing"),
    ("transcript", "viewer", "/sessions/a-done/transcript"),
    ("overview", "viewer", "/overview"),
    ("audit", "operator", "/audit"),
    ("hosts", "viewer", "/hosts"),
    ("requests", "operator", "/requests"),
    ("requests (viewer)", "viewer", "/requests"),
    ("notifications", "operator", "/notifications"),
    ("offline", None, "/offline"),
]


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", list(SIZES))
def test_every_page_has_no_serious_violation(site: dict[str, Any], size: str, scheme: str):
    """Each page loaded afresh, in one tab per role (a browser signed in once per role)."""
    problems: list[str] = []
    contexts: dict[str | None, BrowserContext] = {}
    tabs: dict[str | None, Page] = {}
    try:
        for name, role, path in PAGES:
            if role not in contexts:
                contexts[role] = _context(site, size, scheme, role)
                tabs[role] = contexts[role].new_page()
            page = tabs[role]
            page.goto(site["served"].url + path)
            page.wait_for_function(SETTLED)
            problems += _axe(page, f"{name} ({size}, {scheme})")
    finally:
        for context in contexts.values():
            context.close()
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize("scheme", SCHEMES)
@pytest.mark.parametrize("size", list(SIZES))
def test_every_dialog_has_no_serious_violation(site: dict[str, Any], size: str, scheme: str):
    problems: list[str] = []
    page = _page(site, size, scheme)
    page.goto(site["served"].url + "/sessions/a-calm")
    page.get_by_role("button", name="Terminate").first.click()
    expect(page.locator("#dialog")).to_be_visible()
    problems += _axe(page, f"terminate dialog ({size}, {scheme})")
    page.keyboard.press("Escape")
    page.goto(site["served"].url + "/sessions")
    page.get_by_role("checkbox", name="Select a-calm", exact=True).check()
    page.locator("#bulk-bar").get_by_role("button", name="Pause…").click()
    expect(page.locator("#dialog")).to_be_visible()
    problems += _axe(page, f"bulk dialog ({size}, {scheme})")
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Keyboard shortcuts").click()
    expect(page.locator("#dialog")).to_be_visible()
    problems += _axe(page, f"keys dialog ({size}, {scheme})")
    page.context.close()
    assert problems == [], "\n".join(problems)


def _tab_to(page: Page, target: Any, most: int = 80) -> None:
    """Tab (and only Tab) until ``target`` has the focus, as a keyboard user would."""
    for _ in range(most):
        if target.evaluate("element => element === document.activeElement"):
            return
        page.keyboard.press("Tab")
    raise AssertionError(f"Tab never reached {target}")


def _focus_is_visible(page: Page) -> bool:
    return bool(page.evaluate(
        """() => {
            const style = getComputedStyle(document.activeElement);
            return (style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) > 0)
                || style.boxShadow !== 'none';
        }"""
    ))  # fmt: skip


def _status(site: dict[str, Any], session_id: str) -> str:
    with site["store"].read() as db:
        return str(
            db.execute(
                text("SELECT status FROM agent_sessions WHERE id = :id"), {"id": session_id}
            ).scalar_one()
        )


def test_pause_and_terminate_by_keyboard_alone(site: dict[str, Any]) -> None:
    """Tab to an action, Enter, the dialog holds the focus (Tab stays in it), Escape or its
    buttons close it, and the focus comes back to where it was; every focus is visible."""
    register(site["store"], "k-pause", agent="agent-k")
    register(site["store"], "k-end", agent="agent-1")  # agent-1 holds a claim: impact needed
    page = _page(site, "desk", "light")
    page.goto(site["served"].url + "/sessions/k-pause")
    pause = page.locator("#session-head").get_by_role("button", name="Pause k-pause")
    _tab_to(page, pause)
    assert _focus_is_visible(page)
    page.keyboard.press("Enter")
    dialog = page.locator("#dialog")
    if dialog.is_visible():  # a confirmation: its own button by keyboard too
        for _ in range(6):
            page.keyboard.press("Tab")
            inside = page.evaluate(
                "document.getElementById('dialog').contains(document.activeElement)"
            )
            assert inside, "Tab left the open dialog"
        confirm = page.locator("#dialog-confirm")
        _tab_to(page, confirm)
        page.keyboard.press("Enter")
    expect(page.locator("#notice")).to_contain_text("paused")
    assert _status(site, "k-pause") == "paused"

    page.goto(site["served"].url + "/sessions/k-end")
    terminate = page.locator("#session-head").get_by_role("button", name="Terminate k-end")
    _tab_to(page, terminate)
    assert _focus_is_visible(page)
    page.keyboard.press("Enter")
    expect(dialog).to_be_visible()
    impact = page.locator("#dialog textarea")
    expect(impact).to_be_focused()  # the dialog takes the focus, where the typing goes
    for _ in range(8):
        page.keyboard.press("Tab")
        inside = page.evaluate("document.getElementById('dialog').contains(document.activeElement)")
        assert inside, "Tab left the open dialog"
        assert _focus_is_visible(page)
    page.keyboard.press("Escape")  # closed without acting: the focus back on its button
    expect(dialog).to_be_hidden()
    expect(terminate).to_be_focused()
    assert _status(site, "k-end") == "active"
    page.keyboard.press("Enter")
    expect(impact).to_be_focused()
    page.keyboard.type("claim-1 released by hand")
    _tab_to(page, page.locator("#dialog-confirm"))
    page.keyboard.press("Enter")
    expect(page.locator("#notice")).to_contain_text("terminated")
    assert _status(site, "k-end") == "terminated"
    page.context.close()
