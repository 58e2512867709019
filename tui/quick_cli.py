"""The ``roundtable`` console script: the agent's own commands on a quick path, the rest by
``tui.cli``.

Agents run ``roundtable sessions heartbeat`` (and ``end``, ``register``) all day, each time as a
new process, so what a start-up imports is most of what a heartbeat costs. Building the whole
command line (``tui.cli``, a few hundred click options) costs a third of a bare interpreter's
start-up on its own, and the database layer several times that. Here the plain, well-formed
forms of those three commands are read without it and written by ``store.writes.quick_writes``
(``sqlite3`` or ``psycopg`` alone); their output, errors and exit codes are ``tui.cli``'s, from
the same helpers. Anything else — another command, ``--help``, an option this path does not
read (``--every``, ``--operator``, several sessions, a selection), anything click would refuse,
a store the quick writes do not take — goes to ``tui.cli`` untouched, which then does exactly
what it always did.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.agent_output import print_session

EXIT_REFUSED = 1
# Read-only mode's variable (``docs/teams.md#viewers-roles-and-the-audit-trail``): with it set,
# writes are the full path's to refuse.
READ_ONLY_VARIABLE = "ROUNDTABLE_READ_ONLY"
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

_COMMON = {"--db": "db", "--root": "root"}
# Each command's options that take a value, by flag: the parameter of store.writes.quick_writes.
_VALUED: dict[str, dict[str, str]] = {
    "heartbeat": {
        "--session": "session_id",
        "--status": "status",
        "--external-session-id": "external_session_id",
        "--waiting": "waiting",
        "--turn-done": "turn_done",
    },
    "end": {"--session": "session_id", "--status": "status"},
    "register": {
        "--id": "session_id",
        "--agent": "agent_id",
        "--run": "run_id",
        "--adapter": "adapter",
        "--cwd": "working_directory",
        "--provider": "provider",
        "--model": "model",
        "--external-session-id": "external_session_id",
        "--resume-command": "resume_command",
        "--mcp-socket": "mcp_socket",
        "--status": "status",
        "--metadata": "metadata",
    },
}
_REQUIRED = {
    "heartbeat": ("session_id",),
    "end": ("session_id",),
    "register": ("session_id", "agent_id", "run_id", "adapter", "working_directory"),
}


class AgentCommand:
    """One agent command as parsed: its name, its options by parameter name, and --db,
    --root, --json (given to the command or to the ``sessions`` group before it)."""

    def __init__(self, name: str, values: dict[str, str], common: dict[str, str], as_json: bool):
        self.name = name
        self.values = values
        self.db = common.get("db")
        self.root = common.get("root")
        self.json_mode = as_json


def parse(argv: Sequence[str]) -> AgentCommand | None:
    """``sessions [--db U] [--root D] [--json] heartbeat|end|register OPTIONS`` with each option
    once, as ``--flag VALUE`` or ``--flag=VALUE``, and every required one given; None for
    anything else (tui.cli then reads it, and says what is wrong with it)."""
    if len(argv) < 2 or argv[0] != "sessions":
        return None
    if any("\ud800" <= char <= "\udfff" for argument in argv for char in argument):
        return None
    group: dict[str, str] = {}
    rest = list(argv[1:])
    group_json = _read_options(rest, _COMMON, group, stop_at_command=True)
    if group_json is None or not rest or rest[0] not in _VALUED:
        return None
    name = rest.pop(0)
    values: dict[str, str] = {}
    common: dict[str, str] = {}
    flags = {**_VALUED[name], **_COMMON}
    as_json = _read_options(rest, flags, values, stop_at_command=False)
    if as_json is None or rest:
        return None
    for flag in _COMMON.values():
        if flag in values:
            common[flag] = values.pop(flag)
    for flag, value in group.items():
        common.setdefault(flag, value)
    if any(not value.strip() for value in common.values()):
        return None  # a blank --db or --root: click's usage error
    if any(required not in values for required in _REQUIRED[name]):
        return None
    return AgentCommand(name, values, common, as_json or group_json)


def _read_options(
    args: list[str], flags: Mapping[str, str], into: dict[str, str], *, stop_at_command: bool
) -> bool | None:
    """Take options off the front of ``args`` into ``into`` (by parameter name); whether
    --json was among them; None for anything this path does not read."""
    as_json = False
    while args:
        argument = args[0]
        if not argument.startswith("-"):
            return as_json if stop_at_command else None
        args.pop(0)
        if argument == "--json":
            if as_json:
                return None
            as_json = True
            continue
        flag, equals, value = argument.partition("=")
        if flag not in flags or flags[flag] in into:
            return None
        if not equals:
            if not args or args[0].startswith("-"):
                return None
            value = args.pop(0)
        into[flags[flag]] = value
    return as_json


def run(argv: Sequence[str], *, clock: Callable[[], Any] | None = None) -> int | None:
    """The agent command ``argv`` on the quick path: its exit code, or None when it is not
    taken (nothing was written: tui.cli takes it from the start)."""
    command = parse(argv)
    if command is None or os.environ.get(READ_ONLY_VARIABLE, "").strip():
        return None  # read-only mode is the full path's to enforce
    try:
        session = _write(command, clock)
    except KeyboardInterrupt:
        click.echo(err=True)  # as click ends the line an interrupted command was on
        output.write_error(code="interrupted", message="Interrupted.", json_mode=command.json_mode)
        return EXIT_INTERRUPTED
    except Exception as error:  # noqa: BLE001 - a refusal is said; anything else: tui.cli
        from roundtable_console.store.errors import StoreError
        from roundtable_console.tui.config import ConfigError

        if not isinstance(error, StoreError | ConfigError):
            return None
        output.write_error(
            code=error.code,
            message=error.message,
            details=getattr(error, "details", None) or None,
            json_mode=command.json_mode,
        )
        bad_input = isinstance(error, ConfigError) or error.is_bad_input
        return EXIT_USAGE if bad_input else EXIT_REFUSED
    if session is None:
        return None
    print_session(command.name, session, json_mode=command.json_mode)
    return 0


def _write(command: AgentCommand, clock: Callable[[], Any] | None) -> Any:
    from roundtable_console.store.clock import system_clock
    from roundtable_console.store.validation import required
    from roundtable_console.store.writes import quick_writes
    from roundtable_console.tui.config import load_settings, resolve_adapters, resolve_database_url

    # In tui.cli's order: the settings (read-only is the full path's to refuse), the session
    # id, the adapters, then the store.
    settings = load_settings()
    if settings.read_only:
        return None
    values: dict[str, Any] = dict(command.values)
    if command.name != "register":
        values["session_id"] = required("--session", values["session_id"])
    now = clock or system_clock
    if command.name == "register":
        adapters = resolve_adapters(settings, command.root)
        url = resolve_database_url(db=command.db, root=command.root, settings=settings)
        return quick_writes.register(url, adapters=adapters, clock=now, **values)
    url = resolve_database_url(db=command.db, root=command.root, settings=settings)
    if command.name == "heartbeat":
        return quick_writes.heartbeat(url, clock=now, **values)
    return quick_writes.end(url, clock=now, **values)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script ``roundtable``."""
    args = list(sys.argv[1:] if argv is None else argv)
    code = run(args)
    if code is None:
        from roundtable_console.tui.cli import main as full_main

        full_main(args)
        return
    # The process is about to exit: spare it the last garbage-collection sweep (as tui.cli).
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    main()
