"""``python -m roundtable_console``: the ``roundtable`` console script."""

from roundtable_console.tui.quick_cli import main

main()
