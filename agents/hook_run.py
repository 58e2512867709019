"""``roundtable hooks run AGENT``: one hook event on stdin, mapped onto the session it concerns.

Never in the agent's way (``docs/agents.md#connect-your-agents``): whatever happens — a store
locked, missing, corrupt or down, a server that refuses or does not answer, a payload it cannot read
— it exits 0, says what went wrong in one line on stderr, and keeps what it could not write in the
spool, which the next hook that can write replays first, in order and once. Every hook is a new
process: this module imports only the standard library and the quick writes (no click, no
SQLAlchemy) unless a store needs the full path.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# A hook event bigger than this is not read (Claude Code's largest tool inputs are far smaller).
MAX_PAYLOAD_BYTES = 1024 * 1024
_DRAIN_BYTES = 256 * 1024 * 1024
_OPTIONS = {
    "--db": "db",
    "--agent": "agent",
    "--run": "run",
    "--workspace": "workspace",
    "--server": "server",
    "--token-env": "token_env",
    "--spool": "spool",
    "--permission-wait": "permission_wait",
    "--reply-wait": "reply_wait",
}


def say(message: str) -> None:
    """One line on stderr: the agent shows it in its own log, never to the model."""
    text = " ".join(message.split())[:300]
    try:
        sys.stderr.write(f"roundtable hooks: {text}\n")
        sys.stderr.flush()
    except Exception:  # noqa: BLE001 - no stderr (closed, None): nothing to say it on
        pass


def parse(argv: Sequence[str]) -> tuple[str, dict[str, str]]:
    if not argv:
        raise ValueError("no agent named (claude-code, codex or gemini)")
    agent, rest, options = argv[0], list(argv[1:]), {}
    while rest:
        flag, equals, value = rest.pop(0).partition("=")
        if flag not in _OPTIONS:
            raise ValueError(f"unknown option {flag[:40]!r}")
        if not equals:
            if not rest:
                raise ValueError(f"{flag} needs a value")
            value = rest.pop(0)
        options[_OPTIONS[flag]] = value
    return agent, options


def read_payload(stream: Any) -> dict[str, Any]:
    from roundtable_console.agents.events import PayloadError

    data = stream.read(MAX_PAYLOAD_BYTES + 1)
    if len(data) > MAX_PAYLOAD_BYTES:
        drained = len(data)
        while drained < _DRAIN_BYTES and (chunk := stream.read(1 << 20)):
            drained += len(chunk)
        raise PayloadError(f"the event is over {MAX_PAYLOAD_BYTES // 1024} KiB; not read")
    try:
        payload = json.loads(data)
    except (ValueError, RecursionError):
        raise PayloadError("the event is not JSON") from None
    if not isinstance(payload, dict):
        raise PayloadError("the event is not a JSON object")
    return payload


def main(argv: Sequence[str], stdin: Any = None) -> int:
    """Always 0: a hook's failure is said, never the agent's."""
    try:
        run(argv, sys.stdin.buffer if stdin is None else stdin)
    except KeyboardInterrupt:
        say("interrupted")
    except Exception as error:  # noqa: BLE001 - never a traceback into the agent's log
        say(str(error) or type(error).__name__)
    return 0


def run(argv: Sequence[str], stdin: Any) -> None:
    from roundtable_console.agents.operations import Where, operation_for
    from roundtable_console.agents.registry import spec_of
    from roundtable_console.store.clock import format_ts, system_clock

    agent, options = parse(argv)
    try:
        spec = spec_of(agent)
    except KeyError:
        raise ValueError(f"unknown agent {agent[:40]!r} (claude-code, codex or gemini)") from None
    payload = read_payload(stdin)
    event = spec.read_event(payload)
    where = Where(options.get("agent"), options.get("run"), options.get("workspace"))
    key = f"hook:{os.urandom(12).hex()}"
    operation = operation_for(spec, event, where, at=format_ts(system_clock()), key=key)
    if operation is None:
        return
    if operation.op in ("beat", "end"):
        spent = usage_so_far(spec.adapter, event.transcript, options.get("spool"))
        if spent is not None:
            operation.fields["usage"] = spent
    elif operation.op == "start" and event.transcript:
        usage_told_again(event.transcript, options.get("spool"))
    reporter = reporter_for(options)
    if operation.op == "end" or operation.fields.get("turn"):
        reporter.withdraw_with = operation.key  # where the writer can, with the write itself
    written = deliver(operation, reporter, options.get("spool"))
    if written is None:
        return
    if event.ask is not None:
        wait = waited_seconds(options, "permission_wait")
        if wait > 0:
            from roundtable_console.agents.asking import ask_human

            answer(ask_human(asks_through(reporter), spec.name, written, event, event.ask, wait))
    elif operation.op == "end" or operation.fields.get("turn"):
        # Through a server, only hooks installed to wait could have left something waiting (an
        # install gives every event the same options): others cost the server nothing more.
        if not options.get("server") or "permission_wait" in options or "reply_wait" in options:
            reporter.withdraw_requests(written)
        if operation.op == "end":
            return
        wait = waited_seconds(options, "reply_wait")
        if wait > 0 and listens(spec, event.name):
            from roundtable_console.agents.listening import listen_for_reply

            answer(listen_for_reply(listens_through(reporter), spec.name, written, wait))


def usage_so_far(adapter: str, transcript: str | None, spool_file: str | None) -> Any:
    """What the session spent so far, from its transcript (only one in the agent's own home),
    when it changed since the last hook told it; else None. Never in the agent's way: a
    transcript it cannot read reports nothing."""
    from roundtable_console.agents.operations import in_agents_home

    if transcript is None or not in_agents_home(transcript):
        return None
    from roundtable_console.agents.spool import spool_path
    from roundtable_console.agents.usage import read_usage

    try:
        return read_usage(adapter, transcript, spool_path(spool_file).with_name("hook-usage"))
    except Exception as error:  # noqa: BLE001 - the usage is extra: the beat goes on without it
        say(f"usage not read ({type(error).__name__})")
        return None


def usage_told_again(transcript: str, spool_file: str | None) -> None:
    """A session registered again: its next beat tells its usage, changed or not."""
    from roundtable_console.agents.spool import spool_path
    from roundtable_console.agents.usage import tell_again

    try:
        tell_again(transcript, spool_path(spool_file).with_name("hook-usage"))
    except Exception as error:  # noqa: BLE001 - the usage is extra: the start goes on
        say(f"usage not kept ({type(error).__name__})")


def answer(output: dict[str, Any] | None) -> None:
    """The hook's answer to its agent, on stdout; nothing when there is none."""
    if output is not None:
        sys.stdout.write(json.dumps(output))
        sys.stdout.flush()


def listens(spec: Any, event_name: str) -> bool:
    """Whether ``event_name`` is the agent's hook that may carry a human's reply."""
    return spec.continue_turn is not None and any(
        hooked.name == event_name and hooked.listens for hooked in spec.events
    )


def waited_seconds(options: dict[str, str], option: str) -> float:
    """How long this hook waits for a human (``--permission-wait``: a permission request's
    decision; ``--reply-wait``: a reply to a finished turn), set at install with the agent's
    hook timeout above it. 0, and absent (hooks installed before, whose timeout is short):
    nothing is waited for."""
    raw = options.get(option)
    if raw is None:
        return 0.0  # before any import: the hooks' quick path pays for none
    from roundtable_console.store.requests.records import MAX_WAIT_SECONDS

    try:
        seconds = float(raw)
    except ValueError:
        flag = "--" + option.replace("_", "-")
        raise ValueError(f"{flag} is a number of seconds") from None
    return min(max(seconds, 0.0), MAX_WAIT_SECONDS)


def reporter_for(options: dict[str, str]) -> Any:
    from roundtable_console.agents.reporting import LocalReporter, ServerReporter, server_token

    if options.get("server"):
        workspace = options.get("workspace")
        if not workspace:
            raise ValueError("--server needs --workspace")
        from roundtable_console.agents.spool import spool_path

        beats = spool_path(options.get("spool")).with_name("hook-beats")
        token = server_token(options.get("token_env"))
        return ServerReporter(options["server"], token, workspace, beats)
    url = options.get("db") or os.environ.get("ROUNDTABLE_DB", "").strip()
    if not url:
        raise ValueError("no store: the hook was installed without --db (reinstall it)")
    return LocalReporter(url, say)


def asks_through(reporter: Any) -> Any:
    """Where a permission request waits: the reporter's store, or its server."""
    from roundtable_console.agents.reporting import ServerReporter

    if isinstance(reporter, ServerReporter):
        from roundtable_console.agents.over_server import ServerAsks

        return ServerAsks(reporter)
    from roundtable_console.agents.asking import StoreAsks

    return StoreAsks(reporter.url)


def listens_through(reporter: Any) -> Any:
    """Where a finished turn's hook listens: the reporter's store, or its server."""
    from roundtable_console.agents.reporting import ServerReporter

    if isinstance(reporter, ServerReporter):
        from roundtable_console.agents.over_server import ServerListens

        return ServerListens(reporter)
    from roundtable_console.agents.listening import StoreListens

    return StoreListens(reporter.url)


def deliver(operation: Any, reporter: Any, spool_file: str | None = None) -> str | None:
    """The spool first (in order), then ``operation``; what cannot be written now is spooled.
    The session ``operation`` was written to, when it was written now."""
    from roundtable_console.agents.reporting import Refused, Retry
    from roundtable_console.agents.spool import Spool, spool_path

    spool = Spool(spool_path(spool_file))
    if not spool.pending():
        try:
            return reporter.apply(operation)
        except Refused as refused:
            say(f"not written: {refused}")
            return None
        except Retry as retry:
            problem = str(retry)
        with spool.locked() as fd:
            kept = spool.add(fd, operation._replace(target=reporter.target))
        say(
            f"{problem}; kept in {spool.path} for the next hook"
            if kept
            else f"{problem}; the spool {spool.path} is full, this event is lost"
        )
        return None
    operation = operation._replace(target=reporter.target)
    with spool.locked() as fd:
        # One spool holds what hooks of several installs (stores, servers) could not write:
        # this one replays its own, in order, and keeps the others' as they were.
        spooled = spool.read(fd)
        others = [queued for queued in spooled if queued.target != operation.target]
        waiting = [*(queued for queued in spooled if queued.target == operation.target), operation]
        written = None
        for index, queued in enumerate(waiting):
            try:
                written = reporter.apply(queued)
            except Refused as refused:
                written = None
                say(f"not written: {refused}")
            except Retry as retry:
                spool.rewrite(fd, [*others, *waiting[index:]])
                say(f"{retry}; {len(waiting) - index} event(s) kept in {spool.path}")
                return None
        spool.rewrite(fd, others)
        return written
