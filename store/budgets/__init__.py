"""Budgets (issue 46 point 3): limits on what agents spend, the spending they count, and the
crossings of 80 % and 100 % that are told once each."""
