"""The machines that run agents for the console (issue 41, ``docs/teams.md#agents-on-several-
machines``): what a host says it found (``facts``), and its row, written as it connects, is
seen and goes, read by every surface (``registry``)."""
