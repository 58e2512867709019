"""The console's session list as the store answers it: what a list view asks for (``questions``),
its groups laid out among the rows (``layout``), and the reads that answer it in one snapshot
(``rows``) — for the console on a store, and for ``roundtable serve``, which answers a console
that reads through it with the same functions (``wire``: their JSON)."""
