"""Roundtable session console: the store, the console and the ``roundtable`` command line.

The repository's folders install under this one name: ``store`` (the data layer), ``screens``
(the console's screens), ``tui`` (the app, the command line and configuration) and ``assets``.
Nothing is imported here: an agent's heartbeat starts a process that loads only what it needs.
"""
