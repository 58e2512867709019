"""A session finished on purpose (issue 43, point 3): its worktree removed by its host (only
when nothing in it is uncommitted, or when asked to discard it: ``WorktreeNotClean`` names what
is), its branch kept, the session ended, and a ``finished`` history row with its actor. Nothing
is pushed, merged or deleted: the commands that would merge or push are given, for a human to
run. Shared by the server's ``POST …/finish`` and the command line on the store.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from typing import Any

from roundtable_console.store.clock import Clock, format_ts, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.errors import HostUnavailable, NotFinishable, WorktreeNotClean
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.new_work import BRANCH, PATH, branch_refusal
from roundtable_console.store.records import SessionFields
from roundtable_console.store.rules import ACTIVE_STATES
from roundtable_console.store.safety.display import one_line, printable
from roundtable_console.store.validation import has_control_characters

FINISH_EVENT = "finished"
FINISH_SECONDS = 60.0


def finish_args(session: SessionFields, *, discard: bool) -> dict[str, Any]:
    worktree = (session.metadata_dict or {}).get("worktree")
    if not isinstance(worktree, dict) or not isinstance(worktree.get("path"), str):
        raise NotFinishable(
            f"Session {one_line(session.id, 60)!r} has no worktree roundtable new made: there "
            "is nothing to remove (end it instead)."
        )
    if not session.host:
        raise NotFinishable("The session runs on a machine with no host: nothing can remove it.")
    return {
        "session": protocol.call_session(session),
        "worktree": {key: worktree.get(key) for key in ("path", "project", "branch")},
        "discard": discard,
    }


def finish_session(
    *,
    store: Store,
    session: SessionFields,
    ask: Callable[[dict[str, Any]], dict[str, Any]],
    actor: str,
    discard: bool = False,
    clock: Clock = system_clock,
) -> dict[str, Any]:
    """The worktree removed by the host (``ask``), the session ended (when it was live), the
    ``finished`` row. Its outcome, with the commands to merge and push. Blocking."""
    args = finish_args(session, discard=discard)
    try:
        answer = ask(args)
    except protocol.HostRefused as refused:
        raise NotFinishable(f"{refused} Nothing was removed.") from None
    except protocol.HostUnreachable as unreachable:
        raise HostUnavailable(f"{unreachable} Nothing was removed.") from None
    listed, count = answer.get("uncommitted"), answer.get("uncommitted_count")
    if not isinstance(listed, list) or type(count) is not int or count < 0:
        raise HostUnavailable(
            f"The host {printable(session.host)} answered with something that is not a finish."
        )
    uncommitted = [printable(path) for path in listed[:200] if isinstance(path, str)]
    if answer.get("finished") is not True:
        shown = ", ".join(uncommitted[:10]) + (f" and {count - 10} more" if count > 10 else "")
        raise WorktreeNotClean(
            f"The worktree of session {one_line(session.id, 60)} holds {count} file(s) not "
            f"committed: {shown}. Commit them there, or finish with --discard (they are lost). "
            "Nothing was removed.",
            details={"uncommitted": uncommitted, "uncommitted_count": count},
        )
    # What the host verified, each in its shape; never the session row's words (an agent's
    # token writes those), which the commands below would otherwise carry.
    removed, project = _path(answer.get("directory")), _path(answer.get("project"))
    branch = answer.get("branch")
    if not isinstance(branch, str) or not BRANCH.fullmatch(branch) or branch_refusal(branch):
        branch = None
    if removed is None:
        raise HostUnavailable(f"The host {printable(session.host)} did not say what it removed.")
    _record(store, session, actor, clock, removed, branch, count if discard else 0)
    outcome: dict[str, Any] = {
        "session_id": session.id, "host": session.host, "removed": removed,
        "branch": branch, "project": project, "discarded": uncommitted if discard else [],
        "commands": [],
    }  # fmt: skip
    if branch and project:
        outcome["commands"] = [
            f"git -C {shlex.quote(project)} merge {shlex.quote(branch)}",
            f"git -C {shlex.quote(project)} push origin {shlex.quote(branch)}",
        ]
    return outcome


def _path(value: Any) -> str | None:
    if not isinstance(value, str) or not PATH.fullmatch(value) or has_control_characters(value):
        return None
    return value


def _record(
    store: Store, session: SessionFields, actor: str, clock: Clock, path: str,
    branch: str | None, discarded: int,
) -> None:  # fmt: skip
    from roundtable_console.store.reads.sessions import get_session
    from roundtable_console.store.writes.agent_writes import end
    from roundtable_console.store.writes.history import append_session_event

    with store.write() as db:
        current = get_session(db=db, session_id=session.id)
        if current.status in ACTIVE_STATES:
            end(db=db, session_id=session.id, status="finished", clock=clock)
        append_session_event(
            db, session_id=session.id, event_type=FINISH_EVENT, now=format_ts(clock()),
            payload={"worktree": path, "branch": branch, "discarded": discarded}, actor=actor,
        )  # fmt: skip


def ask_through_store(store: Store, host: str) -> Callable[[dict[str, Any]], dict[str, Any]]:
    from roundtable_console.store.hosts.calls import ask_and_wait

    def ask(args: dict[str, Any]) -> dict[str, Any]:
        answer = ask_and_wait(store, host, protocol.FINISH, args, seconds=FINISH_SECONDS)
        return protocol.outcome_of(host, answer)

    return ask
