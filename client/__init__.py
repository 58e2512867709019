"""A person's client of ``roundtable serve``: what the command line's human commands read and do,
through the server's API with that person's token (``store.source.SessionSource``'s second way
in). Imported only when a command is given a server."""
