"""The agents' own formats (``docs/reference/agent-facts.md``): what Claude Code, Codex and
Gemini CLI send their hooks, where they read their hook settings, how they resume — one module per
agent — and the hook process that maps their events onto the store's session operations (or the
server's routes).

Layers: ``agents → store`` (``docs/development.md#layers``). Nothing here is imported by ``store/``,
the console or the server; ``store/`` learns no agent's file format.
"""
