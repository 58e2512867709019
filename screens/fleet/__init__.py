"""The fleet-wide screens: the overview, the audit trail, and every pending permission request."""
