"""The prices a hook estimates a cost with, writing to a store itself: the user's configuration's
``[prices]`` over the shipped ones (``store.writes.usage_values``), read only when a hook has
usage to report. A configuration it cannot read is said once in the hook's line, and the shipped
prices are used."""

from __future__ import annotations

from roundtable_console.agents.config_file import config_dir

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def user_prices(say: Any) -> Any:
    from roundtable_console.store.writes.usage_values import SHIPPED, configured_prices

    source = config_dir() / "config.toml"
    try:
        text = source.read_text(encoding="utf-8")
    except FileNotFoundError:
        return SHIPPED
    except (OSError, UnicodeDecodeError) as error:
        say(f"prices not read from {source} ({type(error).__name__})")
        return SHIPPED
    import tomllib

    try:
        return configured_prices(tomllib.loads(text))
    except (tomllib.TOMLDecodeError, ValueError) as error:
        say(f"prices not read from {source}: {error}")
        return SHIPPED
