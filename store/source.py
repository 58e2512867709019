"""What a person's client reads and does, whichever way it reaches the sessions: the store itself
(``StoreSource``) or ``roundtable serve`` with a token (``client.server_source``). The command
line's human commands are written once, against this interface, and are given one of the two at
start-up. Both answer in the same shapes: sessions as ``SessionFields``, lifecycle actions as
``ActionOutcome``, the audit trail as ``roundtable audit --json``'s records."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from roundtable_console.store.reads.paging import Page

if TYPE_CHECKING:  # a read loads none of the actions' code (tests/test_cli_startup.py)
    from roundtable_console.store.budgets.limits import Budget
    from roundtable_console.store.clock import Clock
    from roundtable_console.store.db.database import Store
    from roundtable_console.store.hosts.new_work import NewWork
    from roundtable_console.store.reads.audit import AuditFilter
    from roundtable_console.store.reads.listing import SessionFilter, SessionOrder
    from roundtable_console.store.records import SessionFields
    from roundtable_console.store.requests.records import PermissionRequestRecord
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome


class SessionSource(Protocol):
    """The reads and actions of a person's client. Each call is blocking; each refusal is a
    ``StoreError`` with its code and a sentence. Who acts is the source's own: the operator a
    store's is given, the token's name through a server."""

    def list_sessions(
        self, filters: SessionFilter, order: SessionOrder, limit: int | None, cursor: str | None
    ) -> Page[SessionFields]: ...

    def read_session(self, session_id: str) -> SessionFields: ...

    def act(
        self,
        action: str,
        session_id: str,
        *,
        idempotency_key: str | None = None,
        expected_version: int | None = None,
        impact_details: str | None = None,
    ) -> ActionOutcome: ...

    def audit(
        self, filters: AuditFilter, limit: int | None, cursor: str | None
    ) -> Page[Mapping[str, Any]]: ...

    def projection(self, name: str, session_id: str) -> dict[str, Any]:
        """One of a session's projections that are one record (metrics, environment)."""

    def budgets(self) -> list[dict[str, Any]]:
        """The budgets the caller may see, where each stands (``state_json``'s): the
        configuration's on a store, the server's through it."""

    def start_new(self, work: NewWork) -> dict[str, Any]:
        """A new session started on its host (``store.hosts.new_work``): its id and where it
        runs (``Started.to_json``)."""

    def changes(self, session_id: str, offset: int) -> dict[str, Any]:
        """A page of what the session changed, read by its host (``GET …/changes``'s answer:
        ``available``, and the page or the ``reason`` there is none)."""

    def finish(self, session_id: str, discard: bool) -> dict[str, Any]:
        """The session's worktree removed by its host, its branch kept, the session ended
        (``store.hosts.finishing``); ``WorktreeNotClean`` names what is not committed."""

    def requests(self, session_id: str | None, everything: bool) -> list[PermissionRequestRecord]:
        """Pending permission requests (of one session, or every one), oldest first; with
        ``everything``, every state, newest first."""

    def decide(
        self,
        request_id: str,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool,
    ) -> PermissionRequestRecord: ...

    def projection_page(
        self, name: str, session_id: str, limit: int | None, cursor: str | None
    ) -> Page[dict[str, Any]]:
        """A page of one of a session's paged projections (logs, tool-calls, claims, …)."""


class StoreSource:
    """The store itself: each read in one snapshot, each action the service layer's, as
    ``actor`` (the operator the command names)."""

    def __init__(
        self, store: Store, clock: Clock, actor: str, budgets: Sequence[Budget] = ()
    ) -> None:
        self.store = store
        self.clock = clock
        self.actor = actor
        self.configured_budgets = tuple(budgets)

    def list_sessions(
        self, filters: SessionFilter, order: SessionOrder, limit: int | None, cursor: str | None
    ) -> Page[SessionFields]:
        from roundtable_console.store.reads.sessions import list_sessions

        with self.store.read() as db:
            page = list_sessions(db=db, filters=filters, limit=limit, cursor=cursor, order=order)
        return Page(list(page.items), page.next_cursor)

    def read_session(self, session_id: str) -> SessionFields:
        from roundtable_console.store.service import read_session

        return read_session(store=self.store, session_id=session_id)

    def act(
        self,
        action: str,
        session_id: str,
        *,
        idempotency_key: str | None = None,
        expected_version: int | None = None,
        impact_details: str | None = None,
    ) -> ActionOutcome:
        from roundtable_console.store.service import perform_action

        terminate = {} if action != "terminate" else {"impact_details": impact_details}
        return perform_action(
            store=self.store, action=action, session_id=session_id, actor=self.actor,
            idempotency_key=idempotency_key, expected_version=expected_version,
            clock=self.clock, **terminate,
        )  # fmt: skip

    def audit(
        self, filters: AuditFilter, limit: int | None, cursor: str | None
    ) -> Page[Mapping[str, Any]]:
        from roundtable_console.store.reads.audit import audit_page

        with self.store.read() as db:
            page = audit_page(db=db, filters=filters, limit=limit, cursor=cursor)
        return Page([entry.to_json() for entry in page.items], page.next_cursor)

    def start_new(self, work: NewWork) -> dict[str, Any]:
        from roundtable_console.store.hosts import new_work

        new_work.host_ready(self.store, work.host, self.clock)
        started = new_work.start_new_session(
            store=self.store, work=work, ask=new_work.ask_through_store(self.store, work.host),
            actor=self.actor, session_id=new_work.session_id_for(None), clock=self.clock,
        )  # fmt: skip
        return started.to_json()

    def changes(self, session_id: str, offset: int) -> dict[str, Any]:
        from roundtable_console.store.hosts.changes import changes_on_store

        session = self.read_session(session_id)
        return changes_on_store(self.store, session, offset=offset, clock=self.clock)

    def finish(self, session_id: str, discard: bool) -> dict[str, Any]:
        from roundtable_console.store.hosts import finishing, new_work

        session = self.read_session(session_id)
        if session.host:
            new_work.host_ready(self.store, session.host, self.clock)
        return finishing.finish_session(
            store=self.store, session=session, actor=self.actor, discard=discard,
            ask=finishing.ask_through_store(self.store, session.host or ""), clock=self.clock,
        )  # fmt: skip

    def budgets(self) -> list[dict[str, Any]]:
        from roundtable_console.store.budgets.standing import budget_states, state_json

        with self.store.read() as db:
            states = budget_states(db, self.configured_budgets, self.clock())
        return [state_json(state) for state in states]

    def requests(self, session_id: str | None, everything: bool) -> list[PermissionRequestRecord]:
        from roundtable_console.store.requests.reads import list_requests

        return list_requests(
            store=self.store, session_id=session_id, everything=everything, clock=self.clock
        )

    def decide(
        self,
        request_id: str,
        decision: str,
        message: str | None,
        suggestion: int | None,
        hidden_seen: bool,
    ) -> PermissionRequestRecord:
        from roundtable_console.store.requests.deciding import decide_request

        return decide_request(
            store=self.store, request_id=request_id, decision=decision, actor=self.actor,
            message=message, suggestion=suggestion, hidden_seen=hidden_seen, clock=self.clock,
        )  # fmt: skip

    def projection(self, name: str, session_id: str) -> dict[str, Any]:
        from roundtable_console.store.service import read_projection

        return read_projection(store=self.store, name=name, session_id=session_id)

    def projection_page(
        self, name: str, session_id: str, limit: int | None, cursor: str | None
    ) -> Page[dict[str, Any]]:
        from roundtable_console.store.service import read_projection_page

        return read_projection_page(
            store=self.store, name=name, session_id=session_id, limit=limit, cursor=cursor
        )
