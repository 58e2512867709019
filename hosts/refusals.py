"""How a host's operation says no (``store.hosts.protocol``'s answers): ``Refused``, not this
host's to do (not its session, not a project it was given, an agent it does not have);
``Failed``, its to do but it could not (tmux refused). Each in one sentence."""


class Refused(Exception):
    """Said to the server as ``refused``."""


class Failed(Exception):
    """Said to the server as ``unavailable``."""
