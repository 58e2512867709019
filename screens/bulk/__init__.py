"""A lifecycle action on every marked session: its preview dialog and its run."""
