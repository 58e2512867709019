"""Where the user's ``config.toml`` is: the console's settings (``tui.config``) and what a hook
reads of them (``agents.prices``) agree on it. On Linux it is found as platformdirs finds it
(``$XDG_CONFIG_HOME``, else ``~/.config``) without importing platformdirs, which would cost
every hook that reads it about 10 ms."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "roundtable"


def config_dir() -> Path:
    if sys.platform.startswith("linux"):
        base = os.environ.get("XDG_CONFIG_HOME", "")
        return Path(base.strip() or os.path.expanduser("~/.config")) / APP_NAME
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME))
