"""The data layer: every session operation, with no console and no command line. Shared by the
command line, the console and the server: ``service`` (what they all do), ``errors``,
``clock``, ``rules``, ``records``, ``validation``, and the subpackages ``db``, ``writes``,
``reads``, ``safety`` and ``resume``."""
