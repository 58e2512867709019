"""The ``roundtable`` console script's first step. An agent's hook event (``roundtable hooks run
AGENT``) runs once per event of every agent, so it goes to ``agents.hook_run`` before anything
else is imported (not even click); every other command goes on to ``tui.quick_cli``."""

from __future__ import annotations

import gc
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["hooks", "run"]:
        from roundtable_console.agents.hook_run import main as run_hook

        code = run_hook(args[2:])
        gc.freeze()  # the process is about to exit: spare it the last collection
        sys.exit(code)
    from roundtable_console.tui.quick_cli import main as quick_main

    quick_main(args)


if __name__ == "__main__":
    main()
