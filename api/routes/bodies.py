"""Request bodies, read strictly: one JSON object of known fields and the types they take.

The reference refuses an unknown field, or anything but one JSON object, with
``invalid_session`` for the session bodies (create, and ours: register); our other bodies
(heartbeat, end, terminate) with ``invalid_request_body``. A body that is not JSON at all is
``invalid_request_body``. Every refusal says which field and why, and nothing is written.
"""

from __future__ import annotations

import json
from typing import Any

from roundtable_console.api.problems import Problem
from roundtable_console.store.validation import has_control_characters

# Each body: its fields, and whether a field may hold an object (metadata) rather than text.
CREATE_FIELDS = ("agent_id", "run_id", "adapter", "provider", "model", "external_session_id")
REGISTER_FIELDS = (
    "agent_id",
    "run_id",
    "adapter",
    "working_directory",
    "provider",
    "model",
    "external_session_id",
    "resume_command",
    "mcp_socket",
    "status",
    "metadata",
    "host",
)
HEARTBEAT_FIELDS = (
    "external_session_id", "waiting", "turn_done", "tool_calls", "quiet_seconds", "usage",
)  # fmt: skip
END_FIELDS = ("status", "usage")
TERMINATE_FIELDS = ("impact_details",)
OBJECT_FIELDS = frozenset({"metadata", "usage"})
# Ours, a hook's beat: the tools its agent ran (a list, checked by the store) and how long a
# beat that changes nothing writes no heartbeat row (seconds, at most a minute).
LIST_FIELDS = frozenset({"tool_calls"})
NUMBER_FIELDS = {"quiet_seconds": 60.0}
# Names and states: printable text (every other text field: anything but NUL).
PRINTABLE_FIELDS = frozenset(
    {"agent_id", "run_id", "adapter", "status", "waiting", "turn_done", "host"}
)


def read_object(
    raw: bytes, *, fields: tuple[str, ...], code: str, optional: bool
) -> dict[str, Any]:
    """The body's fields by name (missing ones absent), each text (or an object where
    ``OBJECT_FIELDS`` says so) or null; an empty body is ``{}`` when the body is ``optional``."""
    decoded = decoded_object(raw, fields=fields, code=code, optional=optional)
    for name, value in decoded.items():
        if name in LIST_FIELDS:
            if value is not None and not isinstance(value, list):
                raise Problem(code, f"The field {name!r} must be a list, or null.")
            continue
        if name in NUMBER_FIELDS:
            if value is not None and not (
                isinstance(value, int | float)
                and not isinstance(value, bool)
                and 0 <= value <= NUMBER_FIELDS[name]
            ):
                limit = NUMBER_FIELDS[name]
                raise Problem(code, f"The field {name!r} is a number from 0 to {limit:g}, or null.")
            continue
        allowed: tuple[type, ...] = (str, dict) if name in OBJECT_FIELDS else (str,)
        if value is not None and not isinstance(value, allowed):
            kind = "a string or an object" if name in OBJECT_FIELDS else "a string"
            raise Problem(code, f"The field {name!r} must be {kind}, or null.")
        if isinstance(value, str) and name in PRINTABLE_FIELDS and has_control_characters(value):
            refused = "invalid_session_status" if name == "status" else code
            raise Problem(refused, f"The field {name!r} must not hold control characters.")
        if isinstance(value, str) and "\x00" in value:
            raise Problem(code, f"The field {name!r} must not hold a NUL character.")
    return decoded


def _not_finite(constant: str) -> Any:
    # Python's JSON reads NaN and Infinity, which JSON has not: stored, no answer could show them.
    raise Problem("invalid_request_body", f"The body holds {constant}: JSON numbers are finite.")


def decoded_object(
    raw: bytes, *, fields: tuple[str, ...], code: str, optional: bool
) -> dict[str, Any]:
    """The body as one JSON object with none but ``fields`` (values unchecked)."""
    if not raw.strip():
        if optional:
            return {}
        raise Problem(code, "The request needs a JSON object as its body.")
    try:
        decoded = json.loads(raw.decode("utf-8"), parse_constant=_not_finite)
    except UnicodeDecodeError:
        raise Problem("invalid_request_body", "The body is not UTF-8 text.") from None
    except RecursionError:
        raise Problem("invalid_request_body", "The body's JSON is nested too deeply.") from None
    except json.JSONDecodeError as error:
        raise Problem(
            "invalid_request_body",
            f"The body is not JSON: {error.msg} (line {error.lineno}, column {error.colno}).",
        ) from None
    except ValueError:  # an integer of more digits than Python reads (sys.int_info)
        raise Problem("invalid_request_body", "The body holds a number too long to read.") from None
    if not isinstance(decoded, dict):
        raise Problem(code, "The body must be one JSON object.")
    unknown = sorted(name for name in decoded if name not in fields)
    if unknown:
        raise Problem(
            code,
            f"Unknown field {unknown[0]!r}: the body takes {', '.join(fields)}.",
            metadata={"unknown_fields": unknown[:20]},
        )
    return decoded
