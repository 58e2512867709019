"""A new session started on a host (issue 43, point 1): what ``roundtable new``, the server's
``POST /api/v1/hosts/{name}/sessions`` and the console share.

In order, so that a refusal changes nothing: the request checked here (``new_work_of``), the
host online, the host asked to check (``START`` with ``check``: a project it was given, an agent
it has, tmux; with a worktree, a base that exists and a branch and path that do not); then the
session written as ``starting`` in the directory the host named (its history in the same
transaction), the host asked to start (the worktree made, the agent started in tmux with
``ROUNDTABLE_SESSION_ID`` and the first prompt), and the ``launched`` row of where it did, with
its actor. The agent's own id arrives with its first hook event. A start that fails after the
session was written ends it (``failed_to_start``) and says which step failed.

The host is asked through a callable (``Ask``): a server asks over its link, a process with no
link through the store (``store.hosts.calls``).
"""

from __future__ import annotations

import hashlib
import re
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from roundtable_console.store.clock import Clock, system_clock
from roundtable_console.store.db.database import Store
from roundtable_console.store.db.models import AgentSession
from roundtable_console.store.errors import (
    HostUnavailable,
    InvalidNewSession,
    NotStarted,
    SessionNotFound,
)
from roundtable_console.store.hosts import protocol
from roundtable_console.store.safety.display import one_line, printable
from roundtable_console.store.validation import has_control_characters

# The agents a host starts, by the CLI's name for each, and the adapter their sessions record.
ADAPTER_OF_AGENT = {"claude-code": "claude", "codex": "codex", "gemini": "gemini"}
# How much the agent asks a human (``--ask``), mapped onto each agent's own permission mode by
# the host (``hosts.starting.ASK_WORDS``): "always" asks before anything past reading, "edits"
# lets edits in its directory go ahead and asks for the rest, "agent" lets the agent decide
# alone (Claude Code's auto mode: nothing reaches the console).
ASK_MODES = ("always", "edits", "agent")
_REF_PREFIXES = ("refs", "heads", "tags", "remotes", "origin", "upstream")
DEFAULT_ASK = "edits"
BRANCH = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,99}")
BASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/~^-]{0,199}")
MODEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]{0,99}")
WORKSPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}")
PROJECT_MOST = 1024
START_SECONDS = 90.0  # a worktree of a large repository takes a while; tmux starts at once
# What the host is given of it: past this, it undoes the worktree rather than start the agent
# (the asker has stopped waiting, and ends the session).
HOST_SECONDS = START_SECONDS - 15.0
FAILED_STATUS = "failed_to_start"
_SLUG = re.compile(r"[^a-z0-9]+")
_ONE_WORD = re.compile(r"[a-z][a-z|-]*")
_HEX = re.compile(r"[0-9a-fA-F]{4,64}")


@dataclass(frozen=True)
class NewWork:
    """What a new session is: where, which agent, in which branch, with what first."""

    host: str
    project: str  # a directory of the host's, or its name (the directory's last part)
    agent: str
    prompt: str = ""
    worktree: bool = False
    branch: str | None = None  # with a worktree: the new branch (suggested from the prompt)
    base: str | None = None  # with a worktree: what it starts from (the project's HEAD)
    model: str | None = None
    ask: str = DEFAULT_ASK
    workspace_id: str | None = None
    bound: bool = False  # asked by a token bound to workspaces

    @property
    def adapter(self) -> str:
        return ADAPTER_OF_AGENT[self.agent]

    def args(self, session_id: str, *, check: bool) -> dict[str, Any]:
        """What the host's ``START`` call says (``bound``: the caller reaches its workspace
        only, so the project must be bound to it)."""
        args: dict[str, Any] = {
            "within_seconds": HOST_SECONDS,
            "bound": self.bound,
            "session_id": session_id,
            "host": self.host,
            "workspace_id": self.workspace_id,
            "project": self.project,
            "agent": self.agent,
            "prompt": self.prompt,
            "model": self.model,
            "ask": self.ask,
            "worktree": {"branch": self.branch, "base": self.base} if self.worktree else None,
        }
        return {**args, "check": True} if check else args

    def to_json(self) -> dict[str, Any]:
        """What the ``launched`` row keeps of it (the prompt is the agent's: not kept)."""
        return {
            "project": self.project, "agent": self.agent, "worktree": self.worktree,
            "branch": self.branch, "base": self.base, "model": self.model, "ask": self.ask,
        }  # fmt: skip


def suggested_branch(prompt: str) -> str:
    """A branch named after the prompt's first words (``rt/fix-the-login-form``), or after the
    moment when it has none."""
    words = _SLUG.sub("-", prompt.lower()).strip("-")
    words = "-".join(words.split("-")[:6])[:40].strip("-")
    return f"rt/{words or 'session'}-{secrets.token_hex(2)}"


def branch_refusal(name: str) -> str | None:
    """Why ``name`` cannot be a new branch (the host asks git too), or None."""
    shown = one_line(name, 60)
    if not BRANCH.fullmatch(name):
        return (
            f"The branch {shown!r} is not 1–100 letters, digits, '.', '_', '/' or '-' starting "
            "with a letter or digit."
        )
    parts = name.split("/")
    if _HEX.fullmatch(name) or name.endswith("HEAD") or parts[0] in _REF_PREFIXES:
        return f"The branch {shown!r} would read as another ref (a commit, HEAD, refs/…)."
    if (
        ".." in name
        or "" in parts
        or name.endswith((".", ".lock"))
        or any(part.startswith(".") or part.endswith(".lock") for part in parts)
    ):
        return f"The branch {shown!r} is not a name git takes for a branch."
    return None


def new_work_of(values: Mapping[str, Any]) -> NewWork:
    """A new session as asked (the command line's options, a request's body), each value
    checked; ``InvalidNewSession`` says what is wrong."""

    def text(name: str, *, required: bool = False) -> str | None:
        value = values.get(name)
        if value is None or (isinstance(value, str) and not value.strip() and not required):
            if required:
                raise InvalidNewSession(f"A new session needs its {name}.")
            return None
        if not isinstance(value, str):
            raise InvalidNewSession(f"{name} is text.")
        return value.strip()

    host = text("host", required=True) or ""
    from roundtable_console.store.hosts.facts import NAME

    if not NAME.fullmatch(host):
        raise InvalidNewSession(f"{one_line(host, 60)!r} is not a host's name.")
    project = text("project", required=True) or ""
    if len(project) > PROJECT_MOST or has_control_characters(project) or "\x00" in project:
        raise InvalidNewSession(
            f"The project is a directory or a project's name of at most {PROJECT_MOST} printable "
            "characters."
        )
    agent = text("agent", required=True) or ""
    if agent not in ADAPTER_OF_AGENT:
        raise InvalidNewSession(
            f"The agent is one of {', '.join(ADAPTER_OF_AGENT)}: not {one_line(agent, 40)!r}."
        )
    prompt = values.get("prompt") or ""
    if not isinstance(prompt, str):
        raise InvalidNewSession("The prompt is text.")
    if has_control_characters(prompt.replace("\n", "").replace("\t", "")):
        raise InvalidNewSession(
            "The prompt holds control characters (a terminal's escape, say): it is words only."
        )
    if len(prompt.encode()) > protocol.PROMPT_MOST_BYTES:
        raise InvalidNewSession(
            f"The prompt is longer than {protocol.PROMPT_MOST_BYTES // 1024} KiB."
        )
    if prompt.lstrip().startswith(("/", "!")):
        raise InvalidNewSession(
            "A first prompt that starts with / or ! is the agent's own command (a slash "
            "command, a shell line): start with words."
        )
    if agent == "claude-code" and _ONE_WORD.fullmatch(prompt.strip()):
        raise InvalidNewSession(
            "A first prompt of one lowercase word can be taken by Claude Code as one of its own "
            "commands (update, install): say a little more."
        )
    worktree = values.get("worktree", False)
    if not isinstance(worktree, bool):
        raise InvalidNewSession("worktree is true or false.")
    branch, base = text("branch"), text("base")
    if (branch or base) and not worktree:
        raise InvalidNewSession("A branch and a base go with a worktree (--worktree).")
    if worktree:
        branch = branch or suggested_branch(prompt)
        refusal = branch_refusal(branch)
        if refusal:
            raise InvalidNewSession(refusal)
        if base is not None and (not BASE.fullmatch(base) or ".." in base):
            raise InvalidNewSession(
                f"The base {one_line(base, 60)!r} is not a branch, tag or commit's name."
            )
    model = text("model")
    if model is not None and not MODEL.fullmatch(model):
        raise InvalidNewSession(f"{one_line(model, 60)!r} is not a model's name.")
    ask = (text("ask") or DEFAULT_ASK).lower()
    if ask not in ASK_MODES:
        raise InvalidNewSession(
            f"--ask is one of {', '.join(mode.upper() for mode in ASK_MODES)}: not "
            f"{one_line(ask, 20)!r}."
        )
    workspace = text("workspace_id")
    if workspace is not None and not WORKSPACE.fullmatch(workspace):
        raise InvalidNewSession(f"{one_line(workspace, 60)!r} is not a workspace's id.")
    return NewWork(
        host=host, project=project, agent=agent, prompt=prompt, worktree=worktree,
        branch=branch if worktree else None, base=base if worktree else None, model=model,
        ask=ask, workspace_id=workspace,
    )  # fmt: skip


def session_id_for(scope: str | None) -> str:
    """The new session's id: one request key (its caller's, its route's) names one session (a
    request sent again finds the session it started), else a fresh one."""
    if scope is None:
        return f"new-{secrets.token_hex(10)}"
    return "new-" + hashlib.sha256(scope.encode()).hexdigest()[:20]


@dataclass(frozen=True)
class Place:
    """Where the host said it would start the session (its ``check`` answer, each value only
    in its own shape)."""

    directory: str
    project: str
    branch: str | None
    base: str | None

    @classmethod
    def of(cls, answer: Mapping[str, Any], host: str) -> Place:
        def shaped(key: str, pattern: re.Pattern[str]) -> str | None:
            value = answer.get(key)
            return value if isinstance(value, str) and pattern.fullmatch(value) else None

        directory = shaped("directory", PATH)
        project = shaped("project", PATH)
        if directory is None or project is None or has_control_characters(directory + project):
            raise HostUnavailable(
                f"The host {printable(host)} did not say where it would start the session."
            )
        return cls(directory, project, shaped("branch", BRANCH), shaped("base", _COMMIT))


PATH = re.compile(r"/[^\x00-\x1f\x7f]{0,1023}")
_COMMIT = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")


@dataclass(frozen=True)
class Started:
    session: AgentSession
    place: Place
    tmux_session: str

    @property
    def attach(self) -> str:
        return f"tmux -L {protocol.TMUX_LABEL} attach -t ={self.tmux_session}"

    def to_json(self) -> dict[str, Any]:
        return {
            "session_id": self.session.id,
            "host": self.session.host,
            "directory": self.place.directory,
            "branch": self.place.branch,
            "base": self.place.base,
            "tmux_session": self.tmux_session,
            "attach": self.attach,
        }


Ask = Callable[[dict[str, Any]], dict[str, Any]]  # the host's ``ok`` answer, or raises


class _Meanwhile(Exception):
    """The session was written by the same request sent again, while this one asked."""


def start_new_session(
    *,
    store: Store,
    work: NewWork,
    ask: Ask,
    actor: str,
    session_id: str,
    clock: Clock = system_clock,
) -> Started:
    """The new session checked by its host, written, started, and its ``launched`` row kept.
    Blocking: for a worker. ``HostUnavailable`` / ``NotStarted`` in the host's words."""
    from roundtable_console.store.reads.sessions import get_session

    with store.read() as db:
        try:
            known = get_session(db=db, session_id=session_id)
        except SessionNotFound:
            known = None
    if known is not None:  # asked again under the same key: what it started
        return _replayed(known)
    place = Place.of(_asked(ask, work, work.args(session_id, check=True)), work.host)
    try:
        session = _write_starting(store, work, session_id, place, clock)
    except _Meanwhile:  # the same request, sent again while this one was checked: the first's
        with store.read() as db:
            return _replayed(get_session(db=db, session_id=session_id))
    try:
        started = _asked(ask, work, work.args(session_id, check=False))
        _record(store, session_id, work, place, started, actor, clock)
    except (HostUnavailable, NotStarted) as failed:
        _failed(store, session, clock)
        said = failed.message.removesuffix(" Nothing was started.")
        raise type(failed)(f"{said} The session {session_id} is ended ({FAILED_STATUS}).") from None
    return Started(session, place, protocol.tmux_session_name(session_id))


def _asked(ask: Ask, work: NewWork, args: dict[str, Any]) -> dict[str, Any]:
    try:
        return ask(args)
    except protocol.HostRefused as refused:
        raise NotStarted(f"{refused} Nothing was started.") from None
    except protocol.HostUnreachable as unreachable:
        raise HostUnavailable(f"{unreachable} Nothing was started.") from None


def _write_starting(
    store: Store, work: NewWork, session_id: str, place: Place, clock: Clock
) -> AgentSession:
    from roundtable_console.store.writes.agent_writes import register

    metadata: dict[str, Any] = {"hooks": work.agent, "started_by": "roundtable new"}
    if work.workspace_id:
        metadata["workspace_id"] = work.workspace_id
    if work.worktree:
        metadata["worktree"] = {
            "path": place.directory, "branch": place.branch, "base": place.base,
            "project": place.project,
        }  # fmt: skip
    from roundtable_console.store.reads.sessions import get_session

    with store.write() as db:
        try:
            get_session(db=db, session_id=session_id)
            raise _Meanwhile(session_id)
        except SessionNotFound:
            pass
        return register(
            db=db, session_id=session_id, agent_id=work.agent,
            run_id=place.project.rstrip("/").rsplit("/", 1)[-1] or "new", adapter=work.adapter,
            working_directory=place.directory, model=work.model, status="starting",
            metadata=metadata, clock=clock, host=work.host, workspace_id=work.workspace_id,
        )  # fmt: skip


def _record(
    store: Store,
    session_id: str,
    work: NewWork,
    place: Place,
    started: Mapping[str, Any],
    actor: str,
    clock: Clock,
) -> None:
    from roundtable_console.store.hosts.launches import shaped_launch
    from roundtable_console.store.service import record_launch

    where = shaped_launch(started, work.host)
    record_launch(
        store=store, session_id=session_id, actor=actor, clock=clock, via_host=work.host,
        new={**work.to_json(), "directory": place.directory, "base_commit": place.base},
        **where,
    )  # fmt: skip


def _failed(store: Store, written: AgentSession, clock: Clock) -> None:
    """The session this request wrote ended, unless something else wrote it since (its agent's
    first event, the same request sent again): then it is theirs."""
    from roundtable_console.store.reads.sessions import get_session
    from roundtable_console.store.writes.agent_writes import end

    with store.write() as db:
        if get_session(db=db, session_id=written.id).version == written.version:
            end(db=db, session_id=written.id, status=FAILED_STATUS, clock=clock)


def _replayed(session: AgentSession) -> Started:
    worktree = (session.metadata_dict or {}).get("worktree")
    worktree = worktree if isinstance(worktree, dict) else {}
    place = Place(
        directory=session.working_directory,
        project=str(worktree.get("project") or session.working_directory),
        branch=worktree.get("branch") if isinstance(worktree.get("branch"), str) else None,
        base=worktree.get("base") if isinstance(worktree.get("base"), str) else None,
    )
    return Started(session, place, protocol.tmux_session_name(session.id))


def ask_through_store(store: Store, host: str) -> Ask:
    """The host asked through the store by a process that holds no link to it (the command
    line, the console): the server that holds it, or on PostgreSQL the host itself, answers."""
    from roundtable_console.store.hosts.calls import ask_and_wait

    def ask(args: dict[str, Any]) -> dict[str, Any]:
        answer = ask_and_wait(store, host, protocol.START, args, seconds=START_SECONDS)
        return protocol.outcome_of(host, answer)

    return ask


def host_ready(store: Store, host: str, clock: Clock = system_clock) -> None:
    """``HostUnavailable`` when the store knows no host ``host``, or it is offline."""
    from roundtable_console.store.hosts.registry import get_host

    with store.read() as db:
        found = get_host(db, host, clock=clock)
    if found is None:
        raise HostUnavailable(
            f"No host is named {printable(host)} (roundtable hosts lists them). Nothing was "
            "started."
        )
    if not found.online:
        raise HostUnavailable(
            f"The host {printable(host)} is offline (last seen {found.last_seen_at or 'never'}). "
            "Nothing was started."
        )
