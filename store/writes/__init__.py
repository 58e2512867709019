"""Writing sessions: the agent's writes, the operators' lifecycle actions (one and many), their
history, import, retention and the demo store."""
