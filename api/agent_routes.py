"""A session's agent, as routes: its launch and its stop (by its machine's host), its transcript,
and the reply it waits for. The reference's workspace routes (``…/workspaces/{w}/sessions/{id}/…``,
``api.app``) and people's routes by the session's id alone (``/api/v1/sessions/{id}/…``,
``api.people_routes``: a session of no workspace is reached too) are the same operations,
documented once here."""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from roundtable_console.api.hosts import changes as host_changes
from roundtable_console.api.hosts import finish as host_finish
from roundtable_console.api.hosts import launch as host_launch
from roundtable_console.api.hosts import stop_agent as host_stop
from roundtable_console.api.routes import replies as reply_ops
from roundtable_console.api.routes import schemas
from roundtable_console.api.routes import transcripts as transcript_ops
from roundtable_console.api.routes.documented import operation
from roundtable_console.api.routes.parameters import IF_MATCH, REPLY_BODY

# (method, the path after the session's, its name, the operation by workspace and by id, the
# rest of its documentation).
ROUTES: tuple[tuple[str, str, str, Any, Any, dict[str, Any]], ...] = (
    ("POST", "launch", "launch_session", host_launch.launch, host_launch.launch_by_id, {
        "summary": "Resume, then start the agent on its machine's host (an operator's).",
        "model": schemas.Launched, "errors": (409,),
        "parameters": [schemas.idempotency(True), IF_MATCH]}),
    ("POST", "stop-agent", "stop_agent", host_stop.stop, host_stop.stop_by_id, {
        "summary": "Stop the agent's process where it runs: SIGINT, then SIGTERM after "
        "grace_seconds (an operator's).", "errors": (409,), "body": host_stop.BODY}),
    ("GET", "transcript", "session_transcript", transcript_ops.transcript,
     transcript_ops.transcript_by_id, {
        "summary": "What the agent is doing: a page of its own transcript, newest last.",
        "model": schemas.Transcript, "parameters": [schemas.LIMIT, schemas.BEFORE]}),
    ("GET", "changes", "session_diff", host_changes.changes, host_changes.changes_by_id, {
        "summary": "What the session changed, read by its host: the commits on its branch since "
        "its base, the files changed (committed or not), and a page of the patch.",
        "model": schemas.Changes, "parameters": [schemas.OFFSET]}),
    ("POST", "finish", "finish_session", host_finish.finish, host_finish.finish_by_id, {
        "summary": "Remove the session's worktree on its host, keep its branch, end the session "
        "(an operator's; what is not committed answers 409 unless discard).", "errors": (409,),
        "body": host_finish.BODY}),
    ("GET", "reply", "reply_route", reply_ops.reply_way, reply_ops.reply_way_by_id, {
        "summary": "What can carry a reply to the session's agent now (its hook, its tmux "
        "pane) or, in words, why nothing can."}),
    ("POST", "reply", "send_reply", reply_ops.send, reply_ops.send_by_id, {
        "summary": "Reply to the session's agent, which waits for a prompt (an operator's; an "
        "Idempotency-Key is required; nothing that can carry it answers 409).",
        "errors": (409,), "parameters": [schemas.idempotency(True)], "body": REPLY_BODY,
        "body_required": True}),
)  # fmt: skip


def add_agent_routes(app: FastAPI, one: str, *, by_id: bool) -> None:
    """The routes under ``one`` (a session's path): by its workspace, or by its id alone."""
    for method, rest, name, in_workspace, of_id, documented in ROUTES:
        operation(app, method, f"{one}/{rest}", of_id if by_id else in_workspace,
                  name=f"{name}_by_id" if by_id else name, **documented)  # fmt: skip
