"""Codex runs no hook its user's ``config.toml`` does not trust (``codex exec`` skips them without a
word): one ``[hooks.state."<hooks file>:<event>:<group>:<handler>"]`` table per handler, whose
``trusted_hash`` is the SHA-256 of the handler's compact JSON, keys sorted
(``docs/reference/agent-facts.md#codex-runs-only-trusted-hooks``). The installer writes those of
our handlers and takes them out again; every other line of the file stays as it was (tomlkit)."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from roundtable_console.agents.settings_files import Change, SettingsError, our_agent

DEFAULT_TIMEOUT = 600
SHORT_EVENTS = {"SessionEnd": 3, "Interrupt": 3}


def snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def handler_hash(event: str, matcher: str | None, entry: dict[str, Any]) -> str:
    timeout = entry.get("timeout", SHORT_EVENTS.get(event, DEFAULT_TIMEOUT))
    normal = {
        "type": "command",
        "command": entry["command"],
        "timeout": timeout,
        "async": bool(entry.get("async", False)),
    }
    described: dict[str, Any] = {"event_name": snake(event), "hooks": [normal]}
    if matcher is not None:
        described["matcher"] = matcher
    text = json.dumps(described, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def our_trust(
    hooks_file: Path, settings: dict[str, Any], command: str | None = None
) -> dict[str, str]:
    """The trust entries of our groups in ``settings`` (the hooks file's): groups of our
    handlers alone, and with ``command`` only handlers running exactly it. A handler merely
    mentioning ``hooks run codex`` (a project's own hooks file may hold anything) is never
    trusted by the installer: Codex's trust is the user's word, not ours to give to others."""
    entries: dict[str, str] = {}
    for event, groups in settings.get("hooks", {}).items():
        for group_index, group in enumerate(groups):
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if not isinstance(handlers, list) or not handlers:
                continue
            if not all(our_agent(entry) == "codex" for entry in handlers):
                continue
            for handler_index, entry in enumerate(handlers):
                if command is not None and entry.get("command") != command:
                    continue
                key = f"{hooks_file}:{snake(event)}:{group_index}:{handler_index}"
                entries[key] = handler_hash(event, group.get("matcher"), entry)
    return entries


def plan_trust(config: Path, old: dict[str, str], new: dict[str, str]) -> Change:
    """``config.toml`` with the trust entries ``old`` (ours, as they were) replaced by ``new``."""
    import tomlkit
    from tomlkit.exceptions import TOMLKitError

    try:
        before: str | None = config.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = None
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{config} cannot be read ({error}); nothing was changed.") from None
    try:
        document = tomlkit.parse(before or "")
    except TOMLKitError as error:
        raise SettingsError(f"{config} is not valid TOML ({error}); nothing was changed.") from None
    hooks = document.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(f"{config}: [hooks] is not a table; nothing was changed.")
    state = (hooks or {}).get("state")
    current = {
        key: value.get("trusted_hash")
        for key, value in (state or {}).items()
        if isinstance(value, dict)
    }
    stale = (set(old) - set(new)) & set(current)
    if all(current.get(key) == value for key, value in new.items()) and not stale:
        return Change(config, before, None)
    if hooks is None:
        hooks = tomlkit.table(is_super_table=True)
        document["hooks"] = hooks
    if state is None:
        state = tomlkit.table(is_super_table=True)
        hooks["state"] = state
    for key in old:
        if key not in new and key in state:
            del state[key]
    for key, value in new.items():
        entry = tomlkit.table()
        entry["trusted_hash"] = value
        state[key] = entry
    if not state:
        del hooks["state"]
    if not hooks:
        del document["hooks"]
    text = tomlkit.dumps(document)
    if not (before or "").endswith("\n\n"):  # the blank line our table left behind
        text = text.rstrip("\n") + "\n" if text.strip() else ""
    return Change(config, before, text)


def hooks_in_config(config: Path) -> bool:
    """Whether ``config.toml`` declares hooks itself (Codex reads one of the two per layer)."""
    import tomllib

    try:
        document = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    hooks = document.get("hooks")
    return isinstance(hooks, dict) and any(key != "state" for key in hooks)


def trusted(config: Path, needed: dict[str, str]) -> bool:
    import tomllib

    try:
        document = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    state = document.get("hooks", {}).get("state", {})
    return all(
        isinstance(state.get(k), dict) and state[k].get("trusted_hash") == v
        for k, v in needed.items()
    )
