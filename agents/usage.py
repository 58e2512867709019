"""What an agent spent, from its own transcript: the tokens of its usage records summed, read from
where the last hook stopped, never the whole file again (``docs/reference/agent-facts.md#usage``).

- Claude Code: each assistant message's ``message.usage`` (input, output, cache read, cache
  creation); a message written in several lines is counted once. At the end of each of its runs
  it writes a ``cost-state`` line with the run's cost in dollars (``totalCostUSD``): that cost is
  the agent's own word, for all the usage before it.
- Codex: ``event_msg`` lines of type ``token_count`` carry the session's running totals
  (``total_token_usage``); ``turn_context`` names the model.
- Gemini CLI: each ``gemini`` message's ``tokens`` (input, output, cached, thoughts), written
  again, whole, when the message changes: counted once.

What was read is kept per transcript in a small file beside the hooks' spool (its offset, the
file's identity, the sums): a hook reads only what was appended since, at most ``READ_BUDGET``
bytes (a transcript first seen large is caught up over a few hooks). The totals are what the
hook reports (``store.writes.usage_values``), so a report made twice changes nothing.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

READ_BUDGET = 16 * 1024 * 1024
MOST_TOKENS = 10**15  # store.writes.usage_values.MOST_TOKENS
LONGEST_LINE = 4 * 1024 * 1024  # a longer line is skipped, not parsed
TOKENS = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)
# What a line must hold for its agent's reader to look at it (the rest is not parsed).
_WANTED = {
    "claude": (b'"usage"', b'"cost-state"', b'"type":"user"'),
    "codex": (b'"token_count"', b'"turn_context"'),
    "gemini": (b'"tokens"',),
}


def _count(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        return 0
    return int(min(value, 1e15))


def _fresh() -> dict[str, Any]:
    return {
        "offset": 0,
        "identity": None,
        "sums": dict.fromkeys(TOKENS, 0),
        "model": None,
        "last_id": None,
        "last": dict.fromkeys(TOKENS, 0),
        "base": dict.fromkeys(TOKENS, 0),  # Codex: the totals of runs before a restart
        "stated_cost": 0.0,
        "stated_runs": 0,
        "unstated": False,  # usage read since the agent last stated a cost
        "told": None,  # what the last hook reported
        "skipping": False,  # inside a line longer than READ_BUDGET: read on past its end
    }


def _add(state: dict[str, Any], message_id: Any, values: dict[str, int]) -> None:
    """One message's usage, counted once: a message written again (the same id as the last
    one) replaces what its earlier line added."""
    sums, last = state["sums"], state["last"]
    again = isinstance(message_id, str) and message_id == state["last_id"]
    for key in TOKENS:
        sums[key] += values[key] - (last[key] if again else 0)
    state["last_id"] = message_id if isinstance(message_id, str) else None
    state["last"] = values
    state["unstated"] = True


def _claude(state: dict[str, Any], line: dict[str, Any]) -> None:
    kind = line.get("type")
    if kind == "user":
        state["last_id"] = None  # the next assistant message is a new one, whatever its id
        return
    if kind == "cost-state":
        cost = line.get("totalCostUSD")
        if isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost < 1e9:
            state["stated_cost"] += float(cost)
            state["stated_runs"] += 1
            state["unstated"] = bool(line.get("hasUnknownModelCost"))
        return
    message = line.get("message")
    if kind != "assistant" or not isinstance(message, dict):
        return
    usage = message.get("usage")
    if not isinstance(usage, dict):
        return
    if isinstance(message.get("model"), str):
        state["model"] = message["model"]
    _add(state, message.get("id"), {key: _count(usage.get(key)) for key in TOKENS})


def _codex(state: dict[str, Any], line: dict[str, Any]) -> None:
    payload = line.get("payload")
    if not isinstance(payload, dict):
        return
    if line.get("type") == "turn_context":
        if isinstance(payload.get("model"), str):
            state["model"] = payload["model"]
        return
    info = payload.get("info")
    if line.get("type") != "event_msg" or payload.get("type") != "token_count":
        return
    total = info.get("total_token_usage") if isinstance(info, dict) else None
    if not isinstance(total, dict):
        return
    cached = _count(total.get("cached_input_tokens"))
    values = {
        "input_tokens": max(_count(total.get("input_tokens")) - cached, 0),
        "output_tokens": _count(total.get("output_tokens")),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": _count(total.get("cache_write_input_tokens")),
    }
    if sum(values.values()) < sum(state["last"].values()):  # a new run counts from 0 again
        state["base"] = {key: state["base"][key] + state["last"][key] for key in TOKENS}
    state["last"] = values
    state["sums"] = {key: state["base"][key] + values[key] for key in TOKENS}
    state["unstated"] = True


def _gemini(state: dict[str, Any], line: dict[str, Any]) -> None:
    tokens = line.get("tokens")
    if line.get("type") != "gemini" or not isinstance(tokens, dict):
        return
    if isinstance(line.get("model"), str):
        state["model"] = line["model"]
    cached = _count(tokens.get("cached"))
    values = {
        "input_tokens": max(_count(tokens.get("input")) - cached, 0),
        "output_tokens": _count(tokens.get("output")) + _count(tokens.get("thoughts")),
        "cache_read_input_tokens": cached,
        "cache_creation_input_tokens": 0,
    }
    _add(state, line.get("id"), values)


_READERS = {"claude": _claude, "codex": _codex, "gemini": _gemini}


def _state_file(place: Path, transcript: str) -> Path:
    import zlib  # built in: hashlib costs a hook milliseconds to import

    named = transcript.encode("utf-8", "surrogateescape")
    return place / f"{zlib.crc32(named):08x}{zlib.adler32(named):08x}.json"


def _load(path: Path) -> dict[str, Any]:
    """What was read of the transcript before; anything else than that (a file damaged or of
    another version) starts it again from the beginning."""
    try:
        state = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return _fresh()
    return state if _sound(state) else _fresh()


def _sound(state: Any) -> bool:
    fresh = _fresh()
    if not isinstance(state, dict) or set(state) != set(fresh):
        return False

    def counts(value: Any) -> bool:
        return (
            isinstance(value, dict)
            and set(value) == set(TOKENS)
            and all(type(value[key]) is int and value[key] >= 0 for key in TOKENS)
        )

    return (
        all(counts(state[name]) for name in ("sums", "last", "base"))
        and type(state["offset"]) is int
        and state["offset"] >= 0
        and (state["identity"] is None or isinstance(state["identity"], list))
        and isinstance(state["stated_cost"], int | float)
        and type(state["stated_runs"]) is int
        and all(type(state[name]) is bool for name in ("unstated", "skipping"))
        and (state["model"] is None or isinstance(state["model"], str))
        and (state["last_id"] is None or isinstance(state["last_id"], str))
        and (state["told"] is None or isinstance(state["told"], dict))
    )


def _save(path: Path, state: dict[str, Any]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        partial = path.with_name(path.name + f".{os.getpid()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(state, handle)
        os.replace(partial, path)
    except OSError:
        pass  # read again from where the file says next time: the totals are the same


def read_usage(adapter: str, transcript: str, place: Path) -> dict[str, Any] | None:
    """The session's usage so far, as its transcript tells it (``store.writes.usage_values``'
    shape), or None: no transcript, no usage, or no change since the last hook told it."""
    reader = _READERS.get(adapter)
    if reader is None:
        return None
    kept = _state_file(place, transcript)
    state = _load(kept)
    try:
        fd = os.open(transcript, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        found = os.fstat(fd)
        if not stat.S_ISREG(found.st_mode):
            return None
        identity = [found.st_dev, found.st_ino]
        if state["identity"] != identity or found.st_size < state["offset"]:
            state = _fresh()  # another file, or the same one written anew
            state["identity"] = identity
        start = read_from = state["offset"]
        data = os.pread(fd, min(found.st_size - start, READ_BUDGET), start)
    finally:
        os.close(fd)
    if state["skipping"]:  # the rest of a line too long to read: on to the next one
        past = data.find(b"\n") + 1
        if not past:
            state["offset"] = start + len(data)
            _save(kept, state)
            return None
        state["skipping"] = False
        data, start = data[past:], start + past
    end = data.rfind(b"\n") + 1  # whole lines only: the last may still be being written
    if not end and len(data) == READ_BUDGET:  # no line ends in a whole window: skip it
        state["offset"], state["skipping"] = start + len(data), True
        _save(kept, state)
        return None
    wanted = _WANTED[adapter]
    for raw in data[:end].split(b"\n"):
        if len(raw) > LONGEST_LINE or not any(mark in raw for mark in wanted):
            continue
        try:
            line = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if isinstance(line, dict):
            reader(state, line)
    moved = start + end != read_from  # past what was read, or past a long line's end
    state["offset"] = start + end
    usage = reported(state)
    if usage == state["told"]:
        if moved:
            _save(kept, state)
        return None  # told already
    state["told"] = usage
    _save(kept, state)
    return usage


def tell_again(transcript: str, place: Path) -> None:
    """The next hook tells the usage even if unchanged: a session registered again (a resume,
    a compaction) has its metadata, and the usage in it, written anew without it."""
    kept = _state_file(place, transcript)
    state = _load(kept)
    if state["told"] is not None:
        state["told"] = None
        _save(kept, state)


def reported(state: dict[str, Any]) -> dict[str, Any] | None:
    """What the hook reports: the tokens, the model, and the agent's own cost when it stated
    one for all of them (the store estimates the rest, ``store.writes.usage_values``)."""
    sums = state["sums"]
    if not any(sums.values()) and not state["stated_runs"]:
        return None
    # Within what the store takes (store.writes.usage_values): a report it refused would cost
    # the beat that carries it.
    usage: dict[str, Any] = {key: min(sums[key], MOST_TOKENS) for key in TOKENS}
    model = state["model"]
    if model and len(model) <= 200 and model.isprintable():
        usage["model"] = model
    if state["stated_runs"] and not state["unstated"] and 0 <= state["stated_cost"] < 1e9:
        usage["cost_usd"] = round(state["stated_cost"], 6)
    return usage
