"""``python -m roundtable_console.tui.cli``: the command line, as the console script's full
path runs it."""

from roundtable_console.tui.cli import main

if __name__ == "__main__":
    main()
