"""What a host does when its server asks (``store.hosts.protocol``): the fixed operations and
nothing else, for sessions of this host only.

Every argument is untrusted: a server's store can hold a forged row (an agent token writes the
rows of its sessions), and a stolen operator token asks whatever it likes. So a call names a
session, and the host acts only when that session says it runs here (its ``host`` is this
host's name); what it then reads goes through the same checks as a read on the agent's own
machine: a transcript only where its agent keeps that session's transcript, a regular file of
this user reached by no link (``agents.transcripts``); a pane only in the host's own tmux
server (``hosts.launching``: where it starts agents), as the session's launch names it
(``agents.panes``). It starts agents as ``hosts.launching`` says, and new sessions as
``hosts.starting`` does.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from roundtable_console.agents.panes import (
    GRACE_MOST,
    read_activity,
    stop_agent,
    type_into_pane,
    verified_pane,
)
from roundtable_console.agents.transcripts import MAX_LIMIT, TranscriptUnavailable
from roundtable_console.hosts import changes, finishing, launching, starting
from roundtable_console.hosts.found import Machine
from roundtable_console.hosts.git import worktree_marker
from roundtable_console.hosts.refusals import Failed, Refused
from roundtable_console.store.errors import InvalidReply
from roundtable_console.store.hosts import protocol
from roundtable_console.store.hosts.facts import HostFacts
from roundtable_console.store.records import SESSION_COLUMNS, SessionRecord
from roundtable_console.store.replies.sending import MAX_REPLY_CHARACTERS, pane_line

log = logging.getLogger("roundtable.hosts")


def answer(machine: Machine, op: Any, args: Any) -> dict[str, Any]:
    """The answer's body (``ok``, ``unavailable`` or ``refused``) to one call."""
    try:
        if op not in protocol.OPERATIONS:
            raise Refused(f"A host does not do {str(op)[:40]!r}.")
        if not isinstance(args, Mapping):
            raise Refused("The call's arguments are not an object.")
        if op in (protocol.PANE, protocol.TYPE, protocol.STOP_AGENT):
            return {"ok": pane(machine.facts, op, args)}
        if op == protocol.START:
            return {"ok": starting.start(machine, args)}
        session = session_of(machine.facts.name, args)
        cwd = launching.checked_directory(machine, session)
        if op == protocol.LAUNCH:
            return {"ok": launching.launch(machine, session, cwd, args)}
        if op == protocol.CHANGES:
            own_worktree(machine, session, cwd, required=False)
            return {"ok": changes.read_changes(cwd, args)}
        if op == protocol.FINISH:
            own_worktree(machine, session, cwd, required=True)
            return {"ok": finishing.finish(machine, session, cwd, args)}
        return {"ok": activity(session, args, machine.facts.name)}
    except Refused as refused:
        return {"refused": str(refused)}
    except (TranscriptUnavailable, Failed) as unavailable:
        return {"unavailable": str(unavailable)}
    except InvalidReply as refused:
        return {"refused": refused.message}
    except Exception as error:  # noqa: BLE001 - answered, so the server does not wait for it
        log.exception("a call went wrong")
        return {"unavailable": f"The host could not do it ({type(error).__name__})."}


def own_worktree(machine: Machine, session: SessionRecord, cwd: str, *, required: bool) -> None:
    """A directory where the host makes worktrees is read or removed only for the session that
    made it there (``hosts.git.worktree_marker``): a session row another wrote naming it (an
    agent's token writes its sessions' rows) reaches nothing. ``required``: only such a one."""
    where = machine.worktrees
    inside = bool(where) and (cwd == where or cwd.startswith(where + os.sep))
    if not inside and not required:
        return
    if not inside or worktree_marker(cwd) != session.id:
        raise Refused("The session's directory is not a worktree the host made for it.")


def encoded(call_id: int, body: dict[str, Any]) -> str:
    """The answer as sent (``activity`` keeps a page within the message's bound)."""
    return json.dumps({"kind": protocol.ANSWER, "id": call_id, **body}, ensure_ascii=False)


def session_of(own_name: str, args: Mapping[str, Any]) -> SessionRecord:
    """The session a call is for, as the server names it (``protocol.SESSION_FIELDS``), when
    it runs on this host."""
    values = args.get("session")
    if not isinstance(values, Mapping) or set(values) != set(protocol.SESSION_FIELDS):
        raise Refused("The call names no session.")
    for name, value in values.items():
        if value is not None and (not isinstance(value, str) or len(value) > protocol.FIELD_MOST):
            raise Refused(f"The session's {name} is not text.")
    if values["host"] != own_name or not values["id"] or not values["working_directory"]:
        raise Refused(f"The session does not run on the host {own_name}.")
    row: dict[str, Any] = dict.fromkeys(SESSION_COLUMNS)
    row.update({name: values[name] for name in protocol.SESSION_FIELDS[:-1]})
    row.update(status="active", version=0, agent_id="", run_id="", started_at="")
    if values["transcript_path"] is not None:
        row["metadata_json"] = json.dumps({"transcript_path": values["transcript_path"]})
    return SessionRecord(row)


def activity(session: SessionRecord, args: Mapping[str, Any], host: str) -> dict[str, Any]:
    """A page of the session's transcript, else of the pane it was started in (in the host's
    own tmux server only: a launch naming another one is not read)."""
    before, limit, launch = args.get("before"), args.get("limit"), args.get("launch")
    if before is not None and (type(before) is not int or before < 0):
        raise Refused("before is a byte offset.")
    if type(limit) is not int or not 1 <= limit <= MAX_LIMIT:
        raise Refused(f"limit is a whole number from 1 to {MAX_LIMIT}.")
    if launch is not None and not isinstance(launch, Mapping):
        raise Refused("The launch is not an object.")
    if launch is not None and not _own_tmux(launch.get("tmux_socket")):
        launch = None
    while True:  # fewer entries until the page fits in one message (older ones: next page)
        page = read_activity(session, launch, before=before, limit=limit, host=host).to_json()
        if len(json.dumps(page).encode()) < protocol.MESSAGE_MOST_BYTES - 4096:
            return page
        if limit == 1:
            raise Failed("The transcript's newest line is too long to send.")
        limit //= 2


def _own_tmux(socket: Any) -> bool:
    own = launching.tmux_socket()
    return isinstance(socket, str) and os.path.realpath(socket) == os.path.realpath(own)


def pane(facts: HostFacts, op: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Whether the pane this host started for a session runs its agent still; with ``TYPE``, a
    reply's line typed into it (one line, no prompt command: ``pane_line``'s rules again); with
    ``STOP_AGENT``, its agent stopped."""
    launch = args.get("launch")
    if not isinstance(launch, Mapping) or launch.get("via_host") != facts.name:
        raise Refused(f"The pane was not started by the host {facts.name}.")
    if not _own_tmux(launch.get("tmux_socket")):
        raise Refused(f"The pane is not on the tmux server of the host {facts.name}.")
    if op == protocol.STOP_AGENT:
        grace = args.get("grace")
        if type(grace) not in (int, float) or not 0 <= grace <= GRACE_MOST:
            raise Refused(f"The grace is a number of seconds from 0 to {GRACE_MOST:.0f}.")
        signal_name, exited = stop_agent(launch, grace=float(grace), host=facts.name)
        return {"signal": signal_name, "exited": exited}
    _, pane_id = verified_pane(launch, running=True, host=facts.name)
    if op == protocol.TYPE:
        line = args.get("line")
        if not isinstance(line, str) or not line or len(line) > MAX_REPLY_CHARACTERS:
            raise Refused("A reply is a line of text.")
        if pane_line(line) != line:
            raise Refused("A reply typed into a pane is one line, as the server makes it.")
        if not type_into_pane(launch, line, host=facts.name):
            raise Failed("The agent's tmux pane did not take the keys: nothing was sent.")
    return {"tmux_pane": pane_id}
