"""Resuming a session: the adapters' settings, the briefing, the resume plan and the launch."""
