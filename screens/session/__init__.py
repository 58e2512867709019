"""One session: its detail and projection tabs, its history, its briefing, its transcript, and the
lifecycle actions on it (shared with the list)."""
