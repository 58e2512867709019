"""The hosts connected to this server (issue 41): each machine's ``roundtable host run`` holds
one WebSocket open to it (``links``), and the hosts are listed for every surface (``listing``)."""
