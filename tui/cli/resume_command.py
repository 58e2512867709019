"""``roundtable resume``: a session's resume briefing and plan (``store.service.read_briefing``),
or with --exec the lifecycle resume and the agent launched in the process's place
(``store.resume.launch``)."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, NamedTuple

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.invocation import Invocation, with_source_invocation
from roundtable_console.tui.cli.options import operator_option

if TYPE_CHECKING:
    from roundtable_console.client.server_source import ServerSource
    from roundtable_console.store.service import BriefingView
    from roundtable_console.store.writes.lifecycle_outcomes import ActionOutcome

RESUME_HELP = """Print a session's resume briefing (Markdown), then its resume plan.

With --exec: resume the session (the lifecycle resume, as `sessions resume`) and become its
agent, running the resume plan's argv in the session's working directory (never through a
shell), so the exit status is the agent's. Everything that can be checked is checked first (a
resume plan, the working directory, the program on PATH): a refusal changes nothing. A key is
made (and said on stderr) when --idempotency-key is not given; the same key again launches
without resuming twice. With --json nothing is printed before the agent starts.

With --launch: resume the session and have its machine's host start the agent there, in tmux,
in the session's working directory (a session that runs on another machine, whose host the
store knows: a server that holds the host, or on PostgreSQL the host itself, passes it on).

Through a server (--server, or ROUNDTABLE_SERVER): the server's briefing and plan, its resume
as the token's person; --exec checks the plan here and runs the agent here."""


@click.command("resume", help=RESUME_HELP)
@click.option("--session", "session_id", metavar="S", help="The session to resume.")
@click.option("--agent", metavar="A", help="The agent whose session to resume (active first).")
@click.option("--exec", "launch", is_flag=True, help="Resume, then run the agent in its place.")
@click.option(
    "--launch",
    "by_host",
    is_flag=True,
    help="Resume, then have the session's host start the agent on its machine.",
)
@click.option("--idempotency-key", metavar="K", help="With --exec or --launch: the resume's key.")
@operator_option
@with_source_invocation
def resume_command(
    inv: Invocation,
    session_id: str | None,
    agent: str | None,
    launch: bool,
    by_host: bool,
    idempotency_key: str | None,
    operator: str | None,
) -> None:
    from roundtable_console.store.validation import required

    if (session_id is None) == (agent is None):
        raise click.UsageError("Give exactly one of --session or --agent.")
    if launch and by_host:
        raise click.UsageError("--exec runs the agent here, --launch on its machine: give one.")
    if not (launch or by_host) and (idempotency_key is not None or operator is not None):
        raise click.UsageError("--idempotency-key and --operator go with --exec or --launch.")
    inv.operator_through_server(operator, "resumed")
    chosen = Chosen(
        session_id=None if session_id is None else required("--session", session_id),
        agent_id=None if agent is None else required("--agent", agent),
    )
    if launch or by_host:
        (_resume_by_host if by_host else _resume_and_exec)(
            inv, chosen, idempotency_key=(idempotency_key or "").strip() or None,
            operator=operator,
        )  # fmt: skip
        return
    view = _briefing(inv, chosen)
    briefing, plan = view.briefing, view.plan
    if inv.json_mode:
        output.emit_json(
            {
                "session_id": view.session.id,
                "briefing": briefing.markdown,
                "resumable": plan.resumable,
                "resume_argv": list(plan.argv) if plan.resumable else None,
                "reason": plan.reason,
            }
        )
        return
    output.echo_text(briefing.markdown.rstrip("\n"))
    click.echo()
    if plan.resumable:
        click.echo("Resume command (the briefing above is its last argument):")
        output.echo_text(shlex.join(plan.argv))
    else:
        click.echo(f"Not resumable: {output.cell(plan.reason)}")


class Chosen(NamedTuple):
    """The session the command names, or the agent whose session it is (one of the two)."""

    session_id: str | None
    agent_id: str | None


def _briefing(inv: Invocation, chosen: Chosen) -> BriefingView:
    """The briefing and plan: the server's (its adapters), or read from the store here."""
    if inv.server is not None:
        with inv.server_source() as source:
            return source.briefing(_session_through(source, chosen))
    from roundtable_console.store.service import read_briefing

    adapters = inv.adapters()
    with inv.store() as store:
        return read_briefing(
            store=store, adapters=adapters, session_id=chosen.session_id,
            agent_id=chosen.agent_id, clock=inv.clock,
        )  # fmt: skip


def _session_through(source: ServerSource, chosen: Chosen) -> str:
    if chosen.session_id is not None:
        return chosen.session_id
    return source.find_by_agent(str(chosen.agent_id)).id


def _resume_and_exec(
    inv: Invocation, chosen: Chosen, *, idempotency_key: str | None, operator: str | None
) -> None:
    """The launch plan (store.resume.launch: every check), the lifecycle resume, then ``execvp``.
    Through a server: its briefing and plan, checked here, and its resume of the row read."""
    import os
    from uuid import uuid4

    from roundtable_console.agents.operations import machine_name
    from roundtable_console.store.errors import NotLaunchable
    from roundtable_console.store.hosts.registry import elsewhere_words
    from roundtable_console.store.resume.launch import (
        exec_launch,
        plan_launch,
        planned_here,
        read_launch,
        resume_for_launch,
    )

    key = idempotency_key or str(uuid4())
    path = os.environ.get("PATH")
    if inv.server is not None:
        with inv.server_source() as source:
            view, host = source.launch_view(_session_through(source, chosen), machine_name())
            if host is not None:
                raise NotLaunchable(
                    f"{elsewhere_words(view.session.id, host)} Start it there: --launch. "
                    "Nothing was started.",
                    details={"reason": "elsewhere"},
                )
            launch = plan_launch(planned_here(view, inv.adapters()), path=path)
            outcome = source.act("resume", launch.session.id, idempotency_key=key,
                                 expected_version=launch.session.version)  # fmt: skip
    else:
        adapters, actor = inv.adapters(), inv.operator(operator)
        with inv.store() as store:
            launch = read_launch(
                store=store, adapters=adapters, session_id=chosen.session_id,
                agent_id=chosen.agent_id, clock=inv.clock, path=path, here=machine_name(),
            )  # fmt: skip
            outcome = resume_for_launch(
                store=store, launch=launch, actor=actor, idempotency_key=key, clock=inv.clock
            )
    session = outcome.session
    if not inv.json_mode:
        done = "already resumed with this key" if outcome.replayed else "resumed"
        lines = [
            f"Session {output.cell(session.id)} {done} (now {output.cell(session.status)}, "
            f"idempotency key {key}); starting {output.cell(launch.program)} in "
            f"{output.cell(launch.cwd)}.",
            *(output.cell(note) for note in outcome.notes),
        ]
        click.echo("\n".join(lines), err=True)
    try:
        exec_launch(launch)
    except OSError as error:
        raise NotLaunchable(
            f"Session {session.id!r} was resumed, but {launch.program} could not be started: "
            f"{error.strerror or error}. Run the same command with --idempotency-key {key} to "
            "try again without resuming twice.",
            details={"reason": "exec_failed", "idempotency_key": key},
        ) from None


def _resume_by_host(
    inv: Invocation, chosen: Chosen, *, idempotency_key: str | None, operator: str | None
) -> None:
    """The session's host asked to start it, after the lifecycle resume
    (``store.hosts.launches``: the console's ``R`` does the same; through a server, its
    ``POST …/launch``)."""
    from uuid import uuid4

    key = idempotency_key or str(uuid4())
    if inv.server is not None:
        with inv.server_source() as source:
            session = source.read_session(_session_through(source, chosen))
            started = source.launch_by_host(session, key)
        outcome, host, attach = started.outcome, started.host, started.attach
    else:
        outcome, host, attach = _launch_from_store(inv, chosen, key, operator)
    session = outcome.session
    if inv.json_mode:
        output.emit_json({
            "session_id": session.id, "status": session.status, "host": host,
            "attach": attach, "idempotency_key": key, "replayed": outcome.replayed,
        })  # fmt: skip
        return
    done = "already resumed with this key" if outcome.replayed else "resumed"
    output.echo_text(
        f"Session {output.cell(session.id)} {done} (now {output.cell(session.status)}, "
        f"idempotency key {key}) and started on {output.cell(host)}: there, {attach} shows it."
    )


def _launch_from_store(
    inv: Invocation, chosen: Chosen, key: str, operator: str | None
) -> tuple[ActionOutcome, str, str]:
    from roundtable_console.agents.operations import machine_name
    from roundtable_console.store.errors import NotLaunchable
    from roundtable_console.store.hosts.launches import launch_by_host, plan_launch_by_host
    from roundtable_console.store.reads.sessions import find_by_agent

    adapters, actor = inv.adapters(), inv.operator(operator)
    with inv.store() as store:
        session_id = chosen.session_id
        if session_id is None:  # the agent's session, as the briefing finds it
            with store.read() as db:
                session_id = find_by_agent(db=db, agent_id=str(chosen.agent_id)).id
        plan = plan_launch_by_host(
            store=store, adapters=adapters, session_id=session_id, here=machine_name(),
            clock=inv.clock,
        )  # fmt: skip
        if plan is None:
            raise NotLaunchable(
                f"Session {output.cell(session_id)} does not run on another machine whose host "
                "the store knows: --exec starts it here. Nothing was started."
            )
        outcome = launch_by_host(
            store=store, plan=plan, actor=actor, idempotency_key=key, clock=inv.clock
        )
    return outcome, plan.host, plan.attach
