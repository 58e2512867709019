"""Reading sessions: lists in keyset pages and their orders, filters, groups and counts, the
change feed, the overview, the audit trail and the detail projections."""
