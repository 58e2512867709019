"""Redaction: every marker occurrence, JSON keys at any depth, and properties that must hold."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from roundtable_console.store.safety.redaction import (
    REDACTED,
    redact_json_text,
    redact_json_value,
    redact_text,
)

MARKERS = ("token", "password", "secret", "api_key", "authorization")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("token=abc", "token=[REDACTED]"),
        ("password:hunter2", "password:[REDACTED]"),
        ("secret = s3 rest", "secret = [REDACTED] rest"),
        ("API_KEY : k1", "API_KEY : [REDACTED]"),
        ("Authorization=xyz", "Authorization=[REDACTED]"),
        ("access_token=1&refresh_token=2", "access_token=[REDACTED]&refresh_token=[REDACTED]"),
        ("token=a,b", "token=[REDACTED],b"),
        ("token=a\nnext line", "token=[REDACTED]\nnext line"),
        ("authorization: Bearer abc", "authorization: Bearer [REDACTED]"),
        ("send Bearer abc.def then", "send Bearer [REDACTED] then"),
        ('{"token": "a b"}', '{"token": "[REDACTED]"}'),
        ("password=", "password="),
    ],
)
def test_redact_text_examples(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_every_occurrence_of_the_same_marker_is_redacted() -> None:
    text = "token=first then token=second, and TOKEN: third&password=p1 password=p2"
    redacted = redact_text(text)
    for secret in ("first", "second", "third", "p1", "p2"):
        assert secret not in redacted
    assert redacted.count(REDACTED) == 5


def test_authorization_with_bearer_hides_the_credential() -> None:
    redacted = redact_text("Authorization: Bearer abc123 rest")
    assert "abc123" not in redacted
    assert redacted.endswith(" rest")


def test_text_without_markers_is_untouched() -> None:
    text = "Tokens were counted; the passwordless login ships, a secretary wrote it."
    assert redact_text(text) == text


def test_json_values_under_sensitive_keys_at_any_depth() -> None:
    value = {
        "Access_Token": "t1",
        "nested": [{"db_password": {"inner": "p1"}, "note": "api_key=k1"}],
        "Chain_Of_Thought": ["reasoning"],
        "usage": {"input_tokens": 12},
        "count": 3,
        "ok": True,
        "none": None,
    }
    redacted = redact_json_value(value)
    assert redacted == {
        "Access_Token": REDACTED,
        "nested": [{"db_password": REDACTED, "note": "api_key=[REDACTED]"}],
        "Chain_Of_Thought": REDACTED,
        "usage": {"input_tokens": 12},  # a token count is usage, shown
        "count": 3,
        "ok": True,
        "none": None,
    }


def test_redact_json_text_dumps_compactly() -> None:
    text = '{ "status": "ok",  "secret": "s",\n "items": [1, "token=x"] }'
    assert (
        redact_json_text(text)
        == '{"status":"ok","secret":"[REDACTED]","items":[1,"token=[REDACTED]"]}'
    )


def test_invalid_json_gets_the_text_treatment() -> None:
    assert redact_json_text('{"token": "abc"') == '{"token": "[REDACTED]"'
    assert redact_json_text("not json password=p") == "not json password=[REDACTED]"
    assert redact_json_text(None) is None


# --- properties ---------------------------------------------------------------------------------

FRAGMENTS = st.sampled_from(
    [*MARKERS, "Bearer ", "bearer", "=", ":", " ", "&", ",", "\n", '"', "'", "abc", "x", "_"]
)
MIXED_TEXT = st.lists(FRAGMENTS | st.text(max_size=4), max_size=24).map("".join)

# Secrets start with "ZZ"; the prose around them never contains "Z", so a survivor is visible.
SECRET = st.text(
    alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+=%!@#$^*~:;'\"", min_size=1, max_size=12
).map(lambda tail: "ZZ" + tail)
PROSE = st.text(alphabet="abcdefghijklmnopqrstuvwxy ", max_size=12)
DELIMITER = st.sampled_from([" ", "&", ",", "\n", " and "])


def _random_case(text: str, flips: list[bool]) -> str:
    padded = (flips + [False] * len(text))[: len(text)]
    return "".join(char.upper() if flip else char for char, flip in zip(text, padded, strict=True))


@st.composite
def planted(draw: st.DrawFn) -> tuple[str, str]:
    """A ``marker<sep>secret`` (or ``Bearer secret``) fragment and its secret."""
    secret = draw(SECRET)
    if draw(st.booleans()) and draw(st.booleans()):
        return f"Bearer {secret}", secret
    marker = draw(st.sampled_from(MARKERS))
    marker = _random_case(marker, draw(st.lists(st.booleans(), max_size=len(marker))))
    prefix = draw(st.sampled_from(["", "access_", "X-"]))
    sep = draw(st.sampled_from(["=", ":", " = ", " :", ": "]))
    scheme = draw(st.sampled_from(["", "", "Bearer "]))
    return f"{prefix}{marker}{sep}{scheme}{secret}", secret


@st.composite
def text_with_secrets(draw: st.DrawFn) -> tuple[str, list[str]]:
    parts: list[str] = []
    secrets: list[str] = []
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        fragment, secret = draw(planted())
        parts += [draw(PROSE), draw(DELIMITER), fragment, draw(DELIMITER)]
        secrets.append(secret)
    return "".join(parts), secrets


@given(MIXED_TEXT)
@settings(max_examples=400)
def test_redact_text_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@given(text_with_secrets())
@example(("bearer token=Bearer ZZ0 ", ["ZZ0"]))  # found by this test: a prose "bearer" took
@example(("bearer bearer ZZ2", ["ZZ2"]))  # the marker as its value and left the secret shown
@example(("Authorization: Bearer bearer ZZ4", ["ZZ4"]))
@example(("bearer access_token=Bearer ZZ0 ", ["ZZ0"]))
@settings(max_examples=300)
def test_no_planted_secret_survives_in_text(case: tuple[str, list[str]]) -> None:
    text, secrets = case
    redacted = redact_text(text)
    for secret in secrets:
        assert secret not in redacted
    assert redact_text(redacted) == redacted


@given(st.text(max_size=80))
@settings(max_examples=400)
def test_text_without_markers_is_unchanged(text: str) -> None:
    lowered = text.lower()
    assume(not any(marker in lowered for marker in (*MARKERS, "bearer")))
    assert redact_text(text) == text


SAFE_KEYS = st.text(alphabet="abcdefghijklmnopqrstuvwxy_", min_size=1, max_size=8).filter(
    lambda key: not any(marker in key for marker in (*MARKERS, "chain_of_thought"))
)
SENSITIVE_KEYS = st.sampled_from(
    ["token", "Password", "client_secret", "API_KEY", "authorization", "chain_of_thought"]
)


@st.composite
def json_with_secrets(draw: st.DrawFn, depth: int = 0) -> tuple[Any, list[str]]:
    """A JSON value hiding secrets both under sensitive keys and inside strings."""
    kind = draw(st.sampled_from(["dict", "list", "text", "scalar"] if depth < 3 else ["text"]))
    if kind == "text":
        text, secrets = draw(text_with_secrets())
        return text, secrets
    if kind == "scalar":
        return draw(st.integers() | st.booleans() | st.none() | PROSE), []
    secrets: list[str] = []
    children = []
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        child, found = draw(json_with_secrets(depth + 1))
        children.append(child)
        secrets += found
    if kind == "list":
        return children, secrets
    value: dict[str, Any] = {draw(SAFE_KEYS) + str(i): child for i, child in enumerate(children)}
    if draw(st.booleans()):
        hidden, hidden_secrets = draw(json_with_secrets(depth + 1))
    else:
        hidden = draw(SECRET)
        hidden_secrets = [hidden]
    value[draw(SENSITIVE_KEYS)] = hidden
    return value, secrets + hidden_secrets


@given(json_with_secrets())
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_no_planted_secret_survives_in_nested_json(case: tuple[Any, list[str]]) -> None:
    value, secrets = case
    as_text = json.dumps(value)
    redacted_text = redact_json_text(as_text)
    dumped = json.dumps(redact_json_value(value))
    assert redacted_text is not None
    for secret in secrets:
        assert secret not in redacted_text
        assert secret not in dumped
    assert redact_json_text(redacted_text) == redacted_text


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(SAFE_KEYS, inner, max_size=3)


@given(st.recursive(st.none() | st.booleans() | st.integers() | PROSE, _containers))
@settings(max_examples=200)
def test_json_without_sensitive_content_is_unchanged(value: Any) -> None:
    assert redact_json_value(value) == value


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        ("bearer token=Bearer ZZ0 ", "bearer token=Bearer [REDACTED] "),
        ("bearer token=ZZ0", "bearer token=[REDACTED]"),
        ("bearer bearer ZZ2", "bearer bearer [REDACTED]"),
        ("Authorization: Bearer bearer ZZ4", "Authorization: Bearer bearer [REDACTED]"),
        ("password=token=abc", "password=token=[REDACTED]"),
        ("bearer X-Token: abc", "bearer X-Token: [REDACTED]"),
        ("password=abctoken=xyz", "password=[REDACTED]"),
        ("Bearer abc token=ZZ1", "Bearer [REDACTED] token=[REDACTED]"),
    ],
)
def test_a_value_is_never_a_bearer_nor_an_assignment(text: str, redacted: str) -> None:
    assert redact_text(text) == redacted
    assert redact_text(redacted) == redacted


_PIECES = st.sampled_from(
    ["token", "TOKEN", "Token", "password", "secret", "api_key", "Authorization", "bearer",
     "BEARER", "=", ":", " ", "abc123", '"', "'", "ſ", "K", "İ", "\n", "&", "x"]
)  # fmt: skip


@settings(max_examples=300)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=6)), max_size=12).map("".join))
@example("TOKEN=abc")
@example("Kelvin: TOKEN = x")
def test_a_text_skipped_unsearched_is_one_the_pattern_leaves_alone(text: str) -> None:
    """``redact_text`` skips the search when no marker is in the text: never a text the
    pattern would have changed."""
    from roundtable_console.store.safety.redaction import _replace, _secret

    assert redact_text(text) == _secret().sub(_replace, text)
