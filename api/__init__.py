"""``roundtable serve``: the reference's HTTP API for sessions on its wire
(``docs/reference/roundtable.md#the-http-api``), with real identities. Routes parse, authorize and
call the store's functions; errors become RFC 7807 problems in one place (``problems``); nothing
here keeps state of its own."""
