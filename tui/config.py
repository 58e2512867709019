"""Where the data lives and who is acting: URL resolution, user settings, adapter config.

No Textual here: the agent-facing CLI imports this on every heartbeat.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, NamedTuple

from roundtable_console.store.budgets.limits import Budget, configured_budgets
from roundtable_console.store.resume.adapters import AdapterConfig
from roundtable_console.store.rules import GROUP_COLUMNS, SORT_COLUMNS
from roundtable_console.store.writes.usage_values import (
    PRICES_AS_OF,
    SHIPPED,
    Prices,
    configured_prices,
)

APP_NAME = "roundtable"
DEFAULT_REFRESH_SECONDS = 2.0
DEFAULT_STALE_AFTER_SECONDS = 300.0
# config ``notify``: what the console adds to its notification of a session needing attention.
NOTIFY_MODES: tuple[str, ...] = ("off", "bell", "desktop")
# A hundred years: beyond it a duration no longer fits a datetime sum.
MAX_SECONDS = 100 * 365 * 24 * 3600.0
ADAPTER_TEXT_KEYS = ("command", "resume_pattern", "external_session_id_pattern")
ADAPTER_FLAG_KEYS = (
    "supports_resume",
    "supports_mcp",
    "supports_readonly_workspace",
    "captures_session_id",
)


# What each key of ``config.toml`` does, for the docs' configuration reference (generated from
# ``Settings`` and these words: docs/hooks.py; tests/test_docs.py holds every key to one).
SETTING_HELP: dict[str, str] = {
    "database": "The store's SQLAlchemy URL (as --db; $ROUNDTABLE_DB and --db win over it).",
    "operator": "The actor recorded for every lifecycle action (--operator and "
    "$ROUNDTABLE_OPERATOR win over it; else the OS login name).",
    "refresh_seconds": "How often the console's clock-driven cells move (changes show at once).",
    "stale_after_seconds": "An active session not seen for this long is stale (shown, never "
    "written).",
    "theme": "The console's Textual theme (e.g. textual-dark, textual-light).",
    "sort": "The console list's first order: " + ", ".join(SORT_COLUMNS) + ".",
    "group": "The console list's first grouping: none, " + ", ".join(GROUP_COLUMNS) + ".",
    "read_only": "Open every store read-only: the console offers no action and writing commands "
    "are refused (as --read-only, $ROUNDTABLE_READ_ONLY=1).",
    "adapters": "[adapters.NAME] tables: how each adapter resumes (keys below).",
    "notify": "What the console adds to its notice of a session that needs a human: "
    + ", ".join(NOTIFY_MODES)
    + ".",
    "server": "tui, sessions, requests, reply, resume, watch, audit and budgets go through "
    "roundtable serve at this URL with your token (as --server; --server and $ROUNDTABLE_SERVER "
    "win over it; --db, --root or $ROUNDTABLE_DB name a store instead).",
    "token_env": "The environment variable that holds your token for server (as --token-env; "
    "default ROUNDTABLE_TOKEN). The token itself is never kept in the config.",
    "prices": '[prices."MODEL"] tables: dollars per million tokens (input, output, cache_read, '
    "cache_write) of the models whose name starts with MODEL, over the shipped list prices "
    f"(of {PRICES_AS_OF}); prices_as_of says their date. They estimate the cost of a session "
    "whose agent states none, for the hooks that write a store and for serve.",
    "budgets": "[[budgets]] tables, each a limit on what agents spend: tokens = N or dollars = "
    "N. agent, run and workspace scope it (all given must match; none: every session). per is "
    '"day" (a UTC day) or "all" (the default). stop = true stops its agents at 100 %. At 80 % '
    "and at 100 % the people who may see it are told once: by the console, and by serve "
    "through Web Push and webhooks. An optional name.",
}
# The environment variables roundtable reads, and what for (the docs' configuration reference).
ENVIRONMENT_HELP: dict[str, str] = {
    "ROUNDTABLE_DB": "The store's URL, when --db is not given.",
    "ROUNDTABLE_OPERATOR": "The operator's name, when --operator is not given.",
    "ROUNDTABLE_READ_ONLY": "1: every store read-only, as --read-only.",
    "ROUNDTABLE_SERVER": "The server tui, sessions, requests, reply, resume, watch, audit and "
    "budgets go through, when --server is not given and no store is named.",
    "ROUNDTABLE_TOKEN": "Your token for that server, unless --token-env or the config's "
    "token_env names another variable.",
    "ROUNDTABLE_SESSION_ID": "Set for an agent that R, resume --exec or the web's resume command "
    "started: its hooks report on that session.",
    "ROUNDTABLE_AGENT": "The agent id the hooks register sessions under (when the install gave "
    "no --agent).",
    "ROUNDTABLE_RUN": "The run id the hooks register sessions under (when the install gave no "
    "--run).",
    "ROUNDTABLE_HOOK_SPOOL": "Where the hooks keep what they could not write (default: the user "
    "state directory's hook-spool.jsonl).",
    "XDG_CONFIG_HOME": "Where config.toml is read: $XDG_CONFIG_HOME/roundtable/.",
    "XDG_DATA_HOME": "Where the default store and demo.db live: $XDG_DATA_HOME/roundtable/.",
}


class ConfigError(Exception):
    """Bad configuration or a bad location: the user must fix something (exit 2)."""

    code = "invalid_configuration"

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def config_dir() -> Path:
    from roundtable_console.agents.config_file import config_dir as found

    return found()


def data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME))


def default_database_path() -> Path:
    return data_dir() / "roundtable.db"


def demo_database_path() -> Path:
    """``roundtable tui --demo``'s own store, beside the default one: the demo never seeds a
    store the user works in."""
    return data_dir() / "demo.db"


def demo_agent_home(url: str) -> Path:
    """Where the demo writes its agents' files (their transcripts): beside a SQLite store
    (``demo.db`` → ``demo-agents/``), else in the user data directory."""
    from roundtable_console.store.db.drivers import sqlite_path

    path = sqlite_path(url)
    if path is None:
        return data_dir() / "demo-agents"
    return path.parent / f"{path.stem}-agents"


# A NamedTuple, not a dataclass: every heartbeat reads the settings, and building a dataclass
# compiles its methods at start-up.
class Settings(NamedTuple):
    database: str | None = None
    operator: str | None = None
    refresh_seconds: float = DEFAULT_REFRESH_SECONDS
    stale_after_seconds: float = DEFAULT_STALE_AFTER_SECONDS
    theme: str | None = None
    # The console list's first order: what needs a human first.
    sort: str = "attention"
    # The console list's first grouping (workspace, run or agent), or none.
    group: str | None = None
    # Open every store read-only: the console offers no action, writing commands are refused.
    read_only: bool = False
    adapters: Mapping[str, AdapterConfig] = MappingProxyType({})
    source: Path | None = None
    # What the console adds to its notification of a session that needs attention: the
    # terminal's bell, a desktop notification, or nothing (NOTIFY_MODES).
    notify: str = "off"
    # A person's commands read and act through this roundtable serve (not a store), with the
    # token held by the variable token_env names.
    server: str | None = None
    token_env: str | None = None
    # What a model's tokens cost, for a session whose agent states no cost ([prices]): the
    # shipped list prices, with the configured ones over them.
    prices: Prices = SHIPPED
    # Limits on what agents spend ([[budgets]]): told at 80 % and 100 %, a stop at 100 %.
    budgets: tuple[Budget, ...] = ()


def _budgets(values: Mapping[str, Any], source: Path) -> tuple[Budget, ...]:
    try:
        return configured_budgets(values)
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from None


def _prices(values: Mapping[str, Any], source: Path) -> Prices:
    try:
        return configured_prices(values)
    except ValueError as error:
        raise ConfigError(f"{source}: {error}") from None


def _positive_number(values: Mapping[str, Any], key: str, default: float, source: Path) -> float:
    value = values.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 < value <= MAX_SECONDS
    ):
        raise ConfigError(
            f"{source}: {key} must be a positive number of seconds "
            f"(at most {MAX_SECONDS:.0f}), not {value!r}."
        )
    return float(value)


def _optional_text(values: Mapping[str, Any], key: str, source: Path) -> str | None:
    value = values.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise ConfigError(f"{source}: {key} must be a string, not {value!r}.")
    return value.strip() or None


def _sort(values: Mapping[str, Any], source: Path) -> str:
    value = _optional_text(values, "sort", source) or "attention"
    if value not in SORT_COLUMNS:
        raise ConfigError(
            f"{source}: sort must be one of {', '.join(SORT_COLUMNS)}, not {value!r}."
        )
    return value


def _group(values: Mapping[str, Any], source: Path) -> str | None:
    value = _optional_text(values, "group", source)
    if value is None or value == "none":
        return None
    if value not in GROUP_COLUMNS:
        raise ConfigError(
            f"{source}: group must be one of none, {', '.join(GROUP_COLUMNS)}, not {value!r}."
        )
    return value


def _flag(values: Mapping[str, Any], key: str, source: Path) -> bool:
    value = values.get(key, False)
    if not isinstance(value, bool):
        raise ConfigError(f"{source}: {key} must be true or false, not {value!r}.")
    return value


def _notify(values: Mapping[str, Any], source: Path) -> str:
    value = _optional_text(values, "notify", source) or "off"
    if value not in NOTIFY_MODES:
        raise ConfigError(
            f"{source}: notify must be one of {', '.join(NOTIFY_MODES)}, not {value!r}."
        )
    return value


def _adapter_table(values: Any, source: Path) -> dict[str, AdapterConfig]:
    if values is None:
        return {}
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source}: adapters must be a table of adapter names.")
    adapters = {}
    for name, body in values.items():
        if not isinstance(body, Mapping):
            raise ConfigError(f"{source}: adapters.{name} must be a table.")
        _check_adapter(str(name), body, source)
        adapters[str(name)] = AdapterConfig.from_mapping(str(name), body)
    return adapters


def _check_adapter(name: str, body: Mapping[str, Any], source: Path) -> None:
    """Wrong types are refused rather than coerced (a string "false" is not false)."""
    for key in ADAPTER_TEXT_KEYS:
        value = body.get(key)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{source}: adapters.{name}.{key} must be a string, not {value!r}.")
    for key in ADAPTER_FLAG_KEYS:
        value = body.get(key)
        if value is not None and not isinstance(value, bool):
            raise ConfigError(
                f"{source}: adapters.{name}.{key} must be true or false, not {value!r}."
            )
    pattern = body.get("external_session_id_pattern")
    if pattern:
        try:
            re.compile(pattern)
        except re.error as error:
            raise ConfigError(
                f"{source}: adapters.{name}.external_session_id_pattern is not a valid "
                f"regular expression: {error}."
            ) from None


def load_settings(path: Path | None = None) -> Settings:
    """The user's ``config.toml``; missing means defaults, malformed is a clear error."""
    source = path or config_dir() / "config.toml"
    if not source.is_file():
        return Settings()
    import tomllib  # here, not at the top: an agent's heartbeat with no config file skips it

    try:
        values = tomllib.loads(source.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ConfigError(f"{source} is not valid TOML: {error}.") from None
    except OSError as error:
        raise ConfigError(f"Cannot read {source}: {error.strerror}.") from None
    return Settings(
        database=_optional_text(values, "database", source),
        operator=_optional_text(values, "operator", source),
        refresh_seconds=_positive_number(
            values, "refresh_seconds", DEFAULT_REFRESH_SECONDS, source
        ),
        stale_after_seconds=_positive_number(
            values, "stale_after_seconds", DEFAULT_STALE_AFTER_SECONDS, source
        ),
        theme=_optional_text(values, "theme", source),
        sort=_sort(values, source),
        group=_group(values, source),
        read_only=_flag(values, "read_only", source),
        adapters=_adapter_table(values.get("adapters"), source),
        source=source,
        notify=_notify(values, source),
        server=_optional_text(values, "server", source),
        token_env=_optional_text(values, "token_env", source),
        prices=_prices(values, source),
        budgets=_budgets(values, source),
    )


def workspace_dir(root: str | Path) -> Path:
    """``DIR/.roundtable`` of a Roundtable workspace; DIR must be an existing directory."""
    path = Path(root).expanduser()
    if not path.exists():
        raise ConfigError(f"--root {path}: no such directory.")
    if not path.is_dir():
        raise ConfigError(f"--root {path} is not a directory.")
    return path / ".roundtable"


def workspace_adapters(root: str | Path) -> dict[str, AdapterConfig]:
    """``adapters.<name>`` from the workspace's ``.roundtable/config.yaml`` (ref format)."""
    source = workspace_dir(root) / "config.yaml"
    if not source.is_file():
        return {}
    import yaml

    try:
        values = yaml.safe_load(source.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as error:
        raise ConfigError(f"{source} is not valid YAML: {error}.") from None
    if not isinstance(values, Mapping):
        raise ConfigError(f"{source} must hold a mapping at the top level.")
    return _adapter_table(values.get("adapters"), source)


def resolve_adapters(settings: Settings, root: str | Path | None) -> dict[str, AdapterConfig]:
    """The user's adapters, overridden by the workspace's for that workspace."""
    adapters = dict(settings.adapters)
    if root is not None:
        adapters.update(workspace_adapters(root))
    return adapters


def resolve_database_url(*, db: str | None, root: str | Path | None, settings: Settings) -> str:
    """First that is set wins: --db, $ROUNDTABLE_DB, --root DIR, config ``database``, default."""
    if db and db.strip():
        return db.strip()
    from_env = _environment("ROUNDTABLE_DB")
    if from_env:
        return from_env
    if root is not None:
        directory = workspace_dir(root)
        try:
            directory.mkdir(exist_ok=True)
        except OSError as error:
            raise ConfigError(f"Cannot create {directory}: {error.strerror}.") from None
        return sqlite_url(directory / "roundtable.db")
    if settings.database:
        return settings.database
    return _private_store_url(default_database_path())


def resolve_demo_url(*, db: str | None) -> str:
    """The demo's store: ``--db URL`` when given on the command line, else ``demo.db`` in the
    user data directory. $ROUNDTABLE_DB, --root and the config's ``database`` name stores the
    user works in: the demo never opens (or seeds) them."""
    if db and db.strip():
        return db.strip()
    return _private_store_url(demo_database_path())


def _private_store_url(path: Path) -> str:
    """A store of our own in the user data directory: its directory ``0700`` and its files
    ``0600`` whatever the umask (store.db.private_files); the stores a user names keep theirs."""
    from roundtable_console.store.db.private_files import keep_private

    try:
        keep_private(path)
    except OSError as error:
        raise ConfigError(f"Cannot create {path.parent}: {error.strerror}.") from None
    return sqlite_url(path)


def sqlite_url(path: Path) -> str:
    """A SQLite URL that names exactly ``path``: SQLAlchemy reads ``?`` as the start of the
    query and decodes ``%XX`` in the path, so those two are escaped."""
    escaped = str(path).replace("%", "%25").replace("?", "%3F")
    return f"sqlite:///{escaped}"


def _environment(name: str) -> str:
    """An environment variable, trimmed; bytes that are not UTF-8 are a clear error, not a
    crash when the value reaches the database."""
    value = os.environ.get(name, "").strip()
    if any("\ud800" <= char <= "\udfff" for char in value):
        raise ConfigError(f"${name} is not valid UTF-8 text.")
    return value


_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


def resolve_read_only(*, flag: bool, settings: Settings) -> bool:
    """Read-only when any of --read-only, $ROUNDTABLE_READ_ONLY or config ``read_only`` says so:
    whoever asks for safety gets it."""
    from_env = _environment("ROUNDTABLE_READ_ONLY").lower()
    if from_env not in _TRUE + _FALSE:
        raise ConfigError(
            f"$ROUNDTABLE_READ_ONLY must be 1 or 0 (true/false, yes/no), not {from_env!r}."
        )
    return flag or from_env in _TRUE or settings.read_only


def resolve_operator(*, flag: str | None, settings: Settings) -> str:
    """--operator, config ``operator``, $ROUNDTABLE_OPERATOR, else the OS login name."""
    for candidate in (flag, settings.operator):
        if candidate and candidate.strip():
            return candidate.strip()
    from_env = _environment("ROUNDTABLE_OPERATOR")
    if from_env:
        return from_env
    import getpass  # here, not at the top: a heartbeat never needs the login name

    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown-operator"
