"""The hosts on the web console (issue 41 point 2): /hosts lists each machine that runs agents,
linked from the overview, for callers bound to no workspace; what a host says of itself is text,
never HTML; a host's token signs in nowhere."""

from __future__ import annotations

import pytest
from markupsafe import escape

from roundtable_console.store.access.tokens import create_token
from roundtable_console.store.db.database import Store
from roundtable_console.store.hosts import registry
from roundtable_console.store.hosts.facts import AgentFound, HostFacts
from tests.web_support import HOSTILE, tokens, web


def connect(store: Store, facts: HostFacts) -> None:
    with store.write() as db:
        registry.connect(db, facts, connection_id=facts.name)


def test_the_hosts_page_lists_the_machines_for_a_viewer(store: Store) -> None:
    connect(store, HostFacts(name="laptop", agents=(AgentFound("claude-code", "2.1.328"),),
                             projects=("/home/ann/api",)))  # fmt: skip
    with web(store) as site:
        made = tokens(store)
        assert site.client.get("/hosts", follow_redirects=False).status_code == 303
        site.sign_in(made["viewer"])
        page = site.client.get("/hosts")
        assert page.status_code == 200
        assert "1 of 1 online" in page.text and "claude-code 2.1.328" in page.text
        assert "/home/ann/api" in page.text and "0 active of 0" in page.text
        assert 'href="/hosts"' in site.client.get("/overview").text


def test_a_token_bound_to_a_workspace_does_not_see_the_hosts(store: Store) -> None:
    connect(store, HostFacts(name="laptop"))
    with web(store) as site:
        site.sign_in(tokens(store)["bound"])
        refused = site.client.get("/hosts")
        assert refused.status_code == 403 and "laptop" not in refused.text


def test_a_hosts_token_cannot_sign_in(store: Store) -> None:
    token = create_token(store=store, name="laptop", role="host").token
    with web(store) as site:
        answer = site.sign_in(token)
        assert answer.status_code == 401  # as any token the server refuses: nothing told
        assert "roundtable_web" not in answer.headers.get("set-cookie", "")
        assert site.client.get("/hosts", follow_redirects=False).status_code == 303


@pytest.mark.parametrize("hostile", [value for value in HOSTILE if value.isprintable()])
def test_what_a_host_says_is_text_on_the_page(store: Store, hostile: str) -> None:
    connect(store, HostFacts(name="laptop", agents=(AgentFound("codex", hostile[:64]),),
                             projects=("/" + hostile,)))  # fmt: skip
    with web(store) as site:
        site.sign_in(tokens(store)["operator"])
        page = site.client.get("/hosts").text
        assert str(escape(hostile[:64])) in page and str(escape("/" + hostile)) in page
        assert "<script>window.__pwned" not in page and "<img src=x" not in page
