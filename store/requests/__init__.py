"""An agent's permission requests, each a record a human answers
(``docs/agents.md#permission-requests-a-human-answers``, issue 30): what a request holds
(``records``), what the agent's hook writes and waits on (``asking``), a human's decision
(``deciding``) and the reads every surface shares (``reads``)."""
