"""store.safety.credentials: credential shapes hidden in any text, token counts shown, nothing
ordinary touched, and the module light enough for the agent-facing commands."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from roundtable_console.store.safety.credentials import (
    SHAPES,
    hide_credentials,
    redact_output_json_text,
    redact_output_text,
    redact_output_value,
)
from roundtable_console.store.safety.redaction import REDACTED
from tests import secret_corpus as corpus


@pytest.mark.parametrize(("secret", "template"), corpus.SHAPES, ids=lambda v: str(v)[:24])
def test_every_shape_of_the_corpus_is_hidden_and_its_context_kept(
    secret: str, template: str
) -> None:
    shown = redact_output_text(template.format(secret))
    assert corpus.leaks(shown) == []
    assert REDACTED in shown
    context = template.split()[0]
    if "{}" not in context and not context.startswith("-----"):  # a key block hides its header
        assert shown.startswith(context)


def test_each_shape_of_the_module_is_met_by_the_corpus() -> None:
    met = {
        shape.name
        for shape in SHAPES
        for text in corpus.TEXTS
        if shape.compiled.search(text) is not None
    }
    assert met == {shape.name for shape in SHAPES}


@pytest.mark.parametrize(
    "text",
    [
        "the deploy finished cleanly after review",
        "https://docs.example.com/guide?page=2 and http://localhost:8080/x",
        "ssh://git@github.com/org/repo.git",
        "sk-learn-experiment-session",
        "ghost_writer and glad-to-help, hooks, SKILLS, AKIA short",
        "0199a1b2-c3d4-7e8f-9a0b-1c2d3e4f5a6b",
        "2026-09-17T17:26:35Z",
        "PWD=/home/ada/work",
        "Tokens were counted; the passwordless login ships, a secretary wrote it.",
        "codex resume ext-9f8e7d --yolo",
        "see eyJ in the docs",
        "-----BEGIN PUBLIC KEY----- is fine",
    ],
)
def test_ordinary_text_is_untouched(text: str) -> None:
    assert redact_output_text(text) == text


def test_url_passwords_keep_the_scheme_user_and_host() -> None:
    assert (
        redact_output_text("postgresql+psycopg://ada:s3cr%40t@db:5432/x")
        == "postgresql+psycopg://ada:[REDACTED]@db:5432/x"
    )


def test_a_private_key_without_its_end_is_hidden_to_the_end_of_the_text() -> None:
    text = "key -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB cut here"
    assert redact_output_text(text) == f"key {REDACTED}"


def test_redacting_twice_changes_nothing_more() -> None:
    once = redact_output_text("\n".join(corpus.TEXTS))
    assert redact_output_text(once) == once
    assert hide_credentials(once) == once


def test_token_counts_are_shown_anywhere_and_strings_under_them_hidden() -> None:
    value = {
        "usage": {"input_tokens": 12, "output_tokens": 3.5, "tokens": 7, "cached_tokens": "x"},
        "deep": [{"total_tokens": 99, "max_tokens": True, "token": 5, "api_key": 1}],
    }
    assert redact_output_value(value) == {
        "usage": {"input_tokens": 12, "output_tokens": 3.5, "tokens": 7, "cached_tokens": REDACTED},
        "deep": [
            {"total_tokens": 99, "max_tokens": REDACTED, "token": REDACTED, "api_key": REDACTED}
        ],
    }


@pytest.mark.parametrize(
    "key", ["apiKey", "x-api-key", "passwd", "privateKey", "AccessKey", "Cookie"]
)
def test_more_key_names_hide_their_values(key: str) -> None:
    assert redact_output_value({key: "v", "other": "v"}) == {key: REDACTED, "other": "v"}


def test_json_text_and_text_that_is_not_json() -> None:
    raw = json.dumps({"note": corpus.TEXTS[0], "n": [1, {"apikey": "k"}]})
    assert json.loads(redact_output_json_text(raw) or "") == {
        "note": f"aws id {REDACTED} in use",
        "n": [1, {"apikey": REDACTED}],
    }
    assert redact_output_json_text("not json ghp_" + "a1" * 18) == f"not json {REDACTED}"
    assert redact_output_json_text(None) is None


def test_the_module_is_standard_library_only_and_compiles_on_first_use() -> None:
    probe = (
        "import sys; before = set(sys.modules); "
        "import roundtable_console.store.safety.credentials as c; "
        "new = sorted(m for m in set(sys.modules) - before "
        "if not m.startswith('roundtable_console')); "
        "import roundtable_console.store.safety.redaction as r; "
        "compiled = lambda: c._compiled.cache_info().currsize + r._secret.cache_info().currsize; "
        "print(repr(new)); print(compiled()); "
        "shown = c.redact_output_text('token=abc ghp_' + 'a' * 36); print(compiled(), shown)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    imported, compiled, after_use = result.stdout.splitlines()
    assert not any(
        name.split(".")[0] in ("sqlalchemy", "click", "rich", "textual", "detect_secrets")
        for name in eval(imported)  # noqa: S307 - our own repr of a list of names
    )
    assert compiled == "0"
    assert after_use == "2 token=[REDACTED] [REDACTED]"
