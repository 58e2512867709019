"""The host: the one process a machine runs for the console (``roundtable host run``, issue 41).

It finds what the machine has (``found``), says so to the server over one connection it opens
itself and keeps (``link``), or writes it to the store when it reaches the database
(``on_store``); ``service`` prints the unit that keeps it running. A front end over the store's
service layer, as the CLI and the server are.
"""
