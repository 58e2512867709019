"""``python -m roundtable_console``: the ``roundtable`` console script."""

from roundtable_console.tui.entry import main

main()
