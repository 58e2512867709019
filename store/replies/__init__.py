"""A human's reply to an agent that waits for a prompt
(``docs/agents.md#replies-a-human-answers-a-finished-turn``, issue 30): the hook of a finished turn
that listens for one (``listeners``), and the reply itself, carried by that hook or typed into the
agent's tmux pane, with its history row (``sending``)."""
