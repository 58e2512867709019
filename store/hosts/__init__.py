"""The machines that run agents for the console (issue 41): what a host says it found
(``facts``), its connection's messages (``protocol``), and its row, written as it connects, is
seen and goes, read by every surface (``registry``). How to run one:
``docs/how-to/several-machines.md``."""
