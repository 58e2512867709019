"""The OpenAPI document (``/api/v1/openapi.json``) fuzzed by schemathesis over every operation,
with its default checks: no 5xx, every response (status, content type, headers, body) as the
document says (issue 20 point 7). The server runs in-process on a seeded SQLite store, as an
operator of header mode so that writes are reached too.

The change stream is left out: it is an endless text/event-stream by design (the suite tests it
on a real server, tests/test_api_live.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from roundtable_console.api.app import create_app
from roundtable_console.api.context import ServerContext
from roundtable_console.store.db.database import open_store
from roundtable_console.store.writes import agent_writes
from tests.api_support import AGENT, HUMAN, WORKSPACE, seed_agent, seed_workspace


@pytest.fixture
def fuzzed_app(tmp_path: Path) -> Iterator[Any]:
    store = open_store(f"sqlite:///{tmp_path / 'roundtable.db'}")
    seed_workspace(store)
    seed_agent(store)
    with store.write() as db:
        for number in range(3):
            agent_writes.register(
                db=db, session_id=f"s{number}", agent_id=AGENT, run_id="run-1",
                adapter="codex", working_directory="/w", metadata={"workspace_id": WORKSPACE},
            )  # fmt: skip
    try:
        yield create_app(ServerContext(store=store))
    finally:
        store.dispose()


@pytest.fixture
def web_schema(fuzzed_app: Any) -> Any:
    return schemathesis.openapi.from_asgi("/api/v1/openapi.json", fuzzed_app)


# The change streams answer until the client goes (a session's own changes are fuzzed).
schema = schemathesis.pytest.from_fixture("web_schema").exclude(
    path_regex=r"(/sessions|/api/v1)/changes$"
)
# The document's own text formats (api/routes/schemas.py), generated as they are defined.
_UNPRINTABLE = ("Cc", "Cf", "Cs", "Zl", "Zp")
schemathesis.openapi.format(
    "printable-text",
    st.text(st.characters(exclude_categories=_UNPRINTABLE), min_size=1).filter(str.strip),
)
# Any text but NUL; no lone surrogate, which no UTF-8 JSON body can carry (schemathesis's own
# negative cases would otherwise fail encoding them, before a request is sent).
schemathesis.openapi.format(
    "text", st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)))
)
# A cursor is opaque: any string fits its schema, only those the server issued are cursors.
# A day its month does not have (2026-02-30) fits the pattern of a date, and is refused.
OPAQUE = {"cursor": "invalid_cursor", "since": "invalid_session"}


@schema.parametrize()
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_every_operation_answers_as_documented(case: Any) -> None:
    response = case.call(headers=HUMAN)
    excluded = []
    if case.path.startswith(("/api/v1/console/", "/api/v1/bulk/")) and response.status_code == 400:
        # The console's questions are its own wire format (store.window.wire), documented as an
        # object; what they must hold is checked there (tests/test_window_wire.py).
        excluded.append(schemathesis.checks.positive_data_acceptance)
    if (
        case.path.endswith("/sessions")
        and case.path.startswith("/api/v1/hosts/")
        and (response.status_code == 400 and response.json().get("code") == "invalid_new_session")
    ):
        # A new session's branch, base and prompt follow git's rules and ours beyond a schema's
        # reach (a branch "a..b", a branch without a worktree): tests/test_hosts_new.py.
        excluded.append(schemathesis.checks.positive_data_acceptance)
    if response.status_code == 400 and any(
        name in (case.query or {}) and response.json().get("code") == code
        for name, code in OPAQUE.items()
    ):
        excluded.append(schemathesis.checks.positive_data_acceptance)
    case.validate_response(response, headers=HUMAN, excluded_checks=excluded)
