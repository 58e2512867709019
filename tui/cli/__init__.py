"""The ``roundtable`` command line (``docs/operators-guide.md#the-command-line``): the root group,
which turns every failure into a message and an exit code, the command tree, and ``main``, the full
path of the console script (``tui.quick_cli`` reads the agents' plain writes first and hands the
rest over here).

Start-up time is a feature: agents run ``roundtable sessions heartbeat`` all day. So each module
of this package imports only click, the standard library, ``tui.output``, ``tui.agent_output``,
the plain data of ``store.rules`` and its sibling modules at the top; other store modules are
imported inside the commands that need them, and Textual only by ``roundtable tui``. What a
command does to the store is one ``store`` function (for what the console does too,
``store.service``); the commands parse, resolve and print.

A module per command group, each joining the tree below (click knows a command once it is
added, so this module imports them all):

- ``sessions_commands``: the ``sessions`` group, its list (the default), ``show`` and the
  projections;
- ``agent_commands``: the agents' writes, ``sessions register``, ``heartbeat`` and ``end``;
- ``lifecycle_commands``: ``sessions pause``, ``stop``, ``resume`` and ``terminate``, on one
  session or several (bulk selections and runs);
- ``resume_command``, ``tui_command``, ``watch_command``, ``audit_command``,
  ``budgets_command``, ``new_command``, ``changes_command``,
  ``finish_command``: one command each;
- ``db_commands``: ``db upgrade``, ``db grants``, ``db prune``, ``demo``, ``import``, ``export``.

What they share: ``invocation`` (the options every command takes, resolved, and read-only
mode), ``options`` (the list's filters and the other options several commands take) and
``printing`` (the output and exit codes several commands have in common).
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import click

from roundtable_console.tui import output
from roundtable_console.tui.cli.agent_commands import (
    end_command,
    heartbeat_command,
    register_command,
)
from roundtable_console.tui.cli.audit_command import audit_command
from roundtable_console.tui.cli.budgets_command import budgets_command
from roundtable_console.tui.cli.changes_command import changes_command
from roundtable_console.tui.cli.db_commands import (
    db_group,
    demo_command,
    export_command,
    import_command,
)
from roundtable_console.tui.cli.finish_command import finish_command
from roundtable_console.tui.cli.hooks_commands import hooks_group
from roundtable_console.tui.cli.host_commands import host_group, hosts_command
from roundtable_console.tui.cli.invocation import CliState
from roundtable_console.tui.cli.lifecycle_commands import LIFECYCLE_COMMANDS, stop_agent_command
from roundtable_console.tui.cli.new_command import new_command
from roundtable_console.tui.cli.printing import (
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    EXIT_USAGE,
    OUTPUT_HELP,
)
from roundtable_console.tui.cli.reply_command import reply_command
from roundtable_console.tui.cli.requests_commands import requests_group
from roundtable_console.tui.cli.resume_command import resume_command
from roundtable_console.tui.cli.serve_command import serve_command
from roundtable_console.tui.cli.sessions_commands import sessions_group
from roundtable_console.tui.cli.tokens_commands import tokens_group
from roundtable_console.tui.cli.tui_command import tui_command
from roundtable_console.tui.cli.watch_command import watch_command


class RoundtableGroup(click.Group):
    """The root group. Its ``main`` turns every failure into a message and an exit code, so
    both the console script and ``CliRunner`` behave the same and no traceback reaches a user."""

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> int:
        argv = list(sys.argv[1:] if args is None else args)
        state = extra.setdefault("obj", CliState())
        undecodable = _undecodable_argument(argv)
        if undecodable is not None:
            output.write_error(
                code="usage_error",
                message=f"Argument {undecodable} is not valid UTF-8 text; nothing was done.",
                json_mode=_json_requested(state, argv),
            )
            if standalone_mode:
                sys.exit(EXIT_USAGE)
            return EXIT_USAGE

        def invoke() -> Any:
            return super(RoundtableGroup, self).main(
                argv, prog_name or "roundtable", complete_var, standalone_mode=False, **extra
            )

        code = run_guarded(invoke, state=state, argv=argv)
        if standalone_mode:
            sys.exit(code)
        return code


def _undecodable_argument(argv: Sequence[str]) -> int | None:
    """The 1-based position of an argument holding bytes that were not UTF-8 (Python keeps them
    as lone surrogates, which no database can store), if any."""
    for position, argument in enumerate(argv, start=1):
        if any("\ud800" <= char <= "\udfff" for char in argument):
            return position
    return None


def _json_requested(state: Any, argv: Sequence[str]) -> bool:
    if isinstance(state, CliState) and state.json_mode is not None:
        return state.json_mode
    options = argv[: argv.index("--")] if "--" in argv else argv
    return "--json" in options


def run_guarded(invoke: Callable[[], Any], *, state: Any, argv: Sequence[str]) -> int:
    try:
        result = invoke()
        return result if isinstance(result, int) and not isinstance(result, bool) else 0
    except click.exceptions.NoArgsIsHelpError as error:
        error.show()
        return EXIT_USAGE
    except click.UsageError as error:
        _show_usage(error)
        output.write_error(
            code="usage_error",
            message=error.format_message(),
            json_mode=_json_requested(state, argv),
        )
        return EXIT_USAGE
    except click.ClickException as error:
        output.write_error(
            code="usage_error" if error.exit_code == EXIT_USAGE else "error",
            message=error.format_message(),
            json_mode=_json_requested(state, argv),
        )
        return error.exit_code
    except (click.Abort, KeyboardInterrupt):
        output.write_error(
            code="interrupted", message="Interrupted.", json_mode=_json_requested(state, argv)
        )
        return EXIT_INTERRUPTED
    except Exception as error:
        code, name, message, details = _classify(error)
        output.write_error(
            code=name, message=message, details=details, json_mode=_json_requested(state, argv)
        )
        return code


def _show_usage(error: click.UsageError) -> None:
    ctx = error.ctx
    if ctx is None:
        return
    click.echo(ctx.get_usage(), err=True)
    if ctx.command.get_help_option(ctx) is not None:
        click.echo(f"Try '{ctx.command_path} --help' for help.", err=True)


def _classify(error: Exception) -> tuple[int, str, str, Mapping[str, Any] | None]:
    from roundtable_console.store.errors import StoreError
    from roundtable_console.tui.config import ConfigError

    if isinstance(error, StoreError):
        code = EXIT_USAGE if error.is_bad_input else EXIT_REFUSED
        return code, error.code, error.message, error.details or None
    if isinstance(error, ConfigError):
        return EXIT_USAGE, error.code, error.message, None
    text = str(error).strip().splitlines()
    reason = f": {text[0]}" if text else ""
    return (
        EXIT_REFUSED,
        "internal_error",
        f"Unexpected {type(error).__name__}{reason}. "
        "This is a bug in roundtable; please report it.",
        None,
    )


@click.group(
    "roundtable",
    cls=RoundtableGroup,
    help="Roundtable agent sessions: the store, the CLI agents use, and the operator console.\n\n"
    + OUTPUT_HELP,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.version_option(package_name="roundtable-console", prog_name="roundtable")
def cli() -> None:
    pass


for _command in (
    register_command,
    heartbeat_command,
    end_command,
    *LIFECYCLE_COMMANDS,
    stop_agent_command,
):
    sessions_group.add_command(_command)
for _command in (
    sessions_group,
    resume_command,
    tui_command,
    watch_command,
    demo_command,
    db_group,
    audit_command,
    budgets_command,
    import_command,
    export_command,
    serve_command,
    tokens_group,
    hooks_group,
    requests_group,
    reply_command,
    host_group,
    hosts_command,
    new_command,
    changes_command,
    finish_command,
):
    cli.add_command(_command)


def main(argv: Sequence[str] | None = None) -> None:
    """The console script ``roundtable``."""
    try:
        cli.main(args=argv, prog_name="roundtable")
    finally:
        # The process is about to exit: spare it the interpreter's last garbage-collection sweep
        # over every object the imports made (~90 ms, paid by an agent on every heartbeat).
        gc.freeze()
