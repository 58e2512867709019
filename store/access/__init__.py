"""Who may do what through ``roundtable serve``: tokens kept hashed, their roles, workspaces
and agents, and what each role may do."""
