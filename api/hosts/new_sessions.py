"""``POST /api/v1/hosts/{name}/sessions``: a new session started on the host ``name``, in a
project it was given, optionally in a worktree of its own, with an agent it found and a first
prompt (``store.hosts.new_work``: the order of its steps, so a refusal changes nothing).

An operator's, under a required Idempotency-Key: the key names the session, so the same request
again answers with the session it started instead of starting a second agent. A token bound to
workspaces starts sessions in one of them only (``workspace_id``, required for it). The host is
asked over this server's link, or through the store by the server that holds it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from roundtable_console.api.context import Answer, Call, ServerContext
from roundtable_console.api.hosts.activity import unreachable
from roundtable_console.api.problems import Problem
from roundtable_console.api.routes import bodies, wire
from roundtable_console.store.hosts import new_work, protocol
from roundtable_console.store.hosts.registry import get_host
from roundtable_console.store.safety.display import printable

FIELDS = ("project", "agent", "prompt", "worktree", "branch", "base", "model", "ask",
          "workspace_id")  # fmt: skip
_TEXT = {"type": ["string", "null"], "maxLength": 1024}
BODY = {
    "type": "object",
    "required": ["project", "agent"],
    "properties": {
        "project": {**_TEXT, "description": "A project the host was given: its directory there, "
                    "or its name (the directory's last part)."},
        "agent": {"type": "string", "enum": list(new_work.ADAPTER_OF_AGENT)},
        "prompt": {"type": ["string", "null"], "maxLength": protocol.PROMPT_MOST_BYTES,
                   "description": "The agent's first prompt."},
        "worktree": {"type": "boolean", "description": "In a git worktree of its own."},
        "branch": {**_TEXT, "description": "The worktree's new branch (suggested from the prompt "
                   "when absent)."},
        "base": {**_TEXT, "description": "What the branch starts from (the project's HEAD)."},
        "model": _TEXT,
        "ask": {"type": ["string", "null"], "enum": [*new_work.ASK_MODES, None],
                "description": "How much the agent asks a human (default edits)."},
        "workspace_id": _TEXT,
    },
    "additionalProperties": False,
}  # fmt: skip


async def start(ctx: ServerContext, call: Call, name: str) -> Answer:
    work, session_id, actor = await ctx.in_worker(_prepare, ctx, call, name)
    ask_host = ctx.hosts.from_worker()

    def ask(args: dict[str, Any]) -> dict[str, Any]:
        return ask_host(work.host, protocol.START, args, timeout=new_work.START_SECONDS)

    started = await ctx.in_worker(
        lambda: new_work.start_new_session(
            store=ctx.store, work=work, ask=ask, actor=actor, session_id=session_id,
            clock=ctx.clock,
        )
    )  # fmt: skip
    return Answer(201, {**started.to_json(), "session": wire.session(started.session)})


def _prepare(ctx: ServerContext, call: Call, name: str) -> tuple[new_work.NewWork, str, str]:
    caller = ctx.caller(call)
    caller.require_human()
    key = ctx.request_key(call, caller, required=True)
    with ctx.store.read() as db:
        host = get_host(db, name, clock=ctx.clock)
    if host is None:
        raise Problem("not_found", f"No host is named {printable(name)}.")
    body = bodies.decoded_object(call.body, fields=FIELDS, code="invalid_new_session",
                                 optional=False)  # fmt: skip
    work = new_work.new_work_of({**body, "host": name})
    work = replace(work, bound=caller.workspaces is not None)
    if caller.workspaces is not None:
        if work.workspace_id is None:
            raise Problem(
                "forbidden",
                f"The token {caller.name!r} reaches some workspaces only: a new session names "
                "one of them (workspace_id).",
            )
        if not caller.reaches(work.workspace_id):
            raise Problem("forbidden", f"The token {caller.name!r} does not reach that workspace.")
    if work.workspace_id is not None:
        with ctx.store.read() as db:
            ctx.workspace(db, caller, work.workspace_id)
    why = unreachable(ctx, host)
    if why is not None:
        said = why.replace("The session runs on", "The new session would run on")
        raise Problem("host_unavailable", f"{said} Nothing was started.")
    if key is None:  # required: refused above
        raise Problem("idempotency_key_required", "A new session needs an Idempotency-Key.")
    return work, new_work.session_id_for(key.scope), caller.name
