"""An agent's hook settings file (JSON), merged: our handlers put in or taken out, every other
setting and every hook not ours left as it was; written atomically, keeping the file's mode."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

from roundtable_console.agents.spec import AgentSpec, HookEvent

# A handler is ours when its command runs ``… hooks run AGENT``.
_OURS = re.compile(r"(?:^|\s)hooks run (claude-code|codex|gemini)(?:\s|$)")
NEW_FILE_MODE = 0o600  # the command names the store, whose URL may hold a password


class SettingsError(Exception):
    """A settings file that cannot be read or written, in words; nothing was changed."""


class Change(NamedTuple):
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is left alone (no change)

    @property
    def changed(self) -> bool:
        return self.after is not None and self.after != self.before


def our_agent(handler: Any) -> str | None:
    if not isinstance(handler, dict) or not isinstance(handler.get("command"), str):
        return None
    found = _OURS.search(handler["command"])
    return found.group(1) if found else None


def read_settings(path: Path) -> tuple[str | None, dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, {}
    except (OSError, UnicodeDecodeError) as error:
        raise SettingsError(f"{path} cannot be read ({error}); nothing was changed.") from None
    if not text.strip():
        return text, {}
    try:
        settings = json.loads(text)
    except ValueError as error:
        raise SettingsError(
            f"{path} is not valid JSON ({error}); fix it first. Nothing was changed."
        ) from None
    if not isinstance(settings, dict):
        raise SettingsError(f"{path} does not hold a JSON object; nothing was changed.")
    hooks = settings.get("hooks", {})
    if not isinstance(hooks, dict) or not all(isinstance(v, list) for v in hooks.values()):
        raise SettingsError(
            f'{path}: its "hooks" are not in the shape the agent reads; nothing was changed.'
        )
    return text, settings


# A waiting hook's timeout is this much above its wait: the hook, not the agent, ends the wait.
WAIT_MARGIN_SECONDS = 15


class Waits(NamedTuple):
    """How long hooks wait for a human (seconds; None or 0: they do not)."""

    permission: int | None = None  # a permission request's decision (--permission-wait)
    reply: int | None = None  # a reply to a finished turn (--reply-wait)


NO_WAITS = Waits()


def handler(
    spec: AgentSpec, event: HookEvent, command: str, waits: Waits = NO_WAITS
) -> dict[str, Any]:
    timeout = event.timeout
    if event.asks and waits.permission:
        timeout = max(timeout, waits.permission + WAIT_MARGIN_SECONDS)
    if event.listens and waits.reply and spec.continue_turn is not None:
        timeout = max(timeout, waits.reply + WAIT_MARGIN_SECONDS)
    entry: dict[str, Any] = {
        "type": "command",
        "command": command,
        "timeout": timeout * spec.timeout_unit,
    }
    if spec.named_handlers:
        entry = {"name": "roundtable", **entry}
    return entry


def group(
    spec: AgentSpec, event: HookEvent, command: str, waits: Waits = NO_WAITS
) -> dict[str, Any]:
    entry: dict[str, Any] = {"hooks": [handler(spec, event, command, waits)]}
    return {"matcher": event.matcher, **entry} if event.matcher is not None else entry


def _is_our_group(candidate: Any, agent: str) -> bool:
    hooks = candidate.get("hooks") if isinstance(candidate, dict) else None
    return bool(hooks) and isinstance(hooks, list) and all(our_agent(h) == agent for h in hooks)


def merged(
    settings: dict[str, Any],
    spec: AgentSpec,
    command: str | None,
    waits: Waits = NO_WAITS,
) -> dict[str, Any]:
    """``settings`` with our groups for ``spec`` replaced in place (or appended), or removed
    when ``command`` is None; every other key and group as it was."""
    result = json.loads(json.dumps(settings))
    hooks: dict[str, Any] = result.get("hooks", {})
    wanted = {event.name: event for event in spec.events} if command is not None else {}
    for name in list(hooks):
        groups = hooks[name]
        if name not in wanted:
            groups[:] = [g for g in groups if not _is_our_group(g, spec.name)]
            if not groups:
                del hooks[name]
    for name, event in wanted.items():
        ours = group(spec, event, command or "", waits)
        groups = hooks.setdefault(name, [])
        places = [i for i, g in enumerate(groups) if _is_our_group(g, spec.name)]
        if places:
            groups[places[0]] = ours
            for extra in reversed(places[1:]):
                del groups[extra]
        else:
            groups.append(ours)
    if hooks:
        result["hooks"] = hooks
    else:
        result.pop("hooks", None)
    return result


def render(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def plan_change(
    path: Path, spec: AgentSpec, command: str | None, waits: Waits = NO_WAITS
) -> Change:
    before, settings = read_settings(path)
    after_settings = merged(settings, spec, command, waits)
    if after_settings == settings and (before is not None or command is None):
        return Change(path, before, None)
    if before is None and command is None:
        return Change(path, before, None)
    return Change(path, before, render(after_settings))


def write_atomic(path: Path, text: str) -> None:
    """``text`` into ``path`` by a rename, keeping the file's mode (a new file: 0600). A link
    (a dotfiles repository's, say) stays a link: the file it points to is the one written."""
    if path.is_symlink():
        path = path.resolve()
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = NEW_FILE_MODE
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fchmod(handle.fileno(), mode)
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def installed(path: Path) -> Iterator[tuple[str, str, str]]:
    """(agent, event, command) of each of our handlers in the file at ``path``."""
    try:
        _, settings = read_settings(path)
    except SettingsError:
        return
    for event, groups in settings.get("hooks", {}).items():
        for candidate in groups:
            for entry in candidate.get("hooks", []) if isinstance(candidate, dict) else []:
                agent = our_agent(entry)
                if agent is not None:
                    yield agent, event, entry["command"]
