"""What every read path shows of store text: the reference's redaction plus credential shapes.

Entry points — everything printed, drawn, notified, copied or written from the store goes through
one of them (``export`` alone is raw: it is the backup):

- ``redact_output_text(text)``: text. The ``marker=value`` / ``marker: value`` / ``Bearer …``
  rules of ``store.safety.redaction``, and every value that looks like a credential wherever it
  stands: private key blocks, passwords in URLs (``scheme://user:[REDACTED]@host``), well-known
  token shapes (GitHub, GitLab, Slack, AWS, OpenAI, Anthropic, Stripe, Google, JWT, npm, PyPI, …)
  and assignments to a few more key names (``apikey``, ``x-api-key``, ``passwd``, ``private_key``,
  ``access_key``, ``AccountKey``).
- ``redact_output_value(value)``: a decoded JSON value. Values under sensitive keys become
  ``"[REDACTED]"`` at any depth, except numbers under token-count keys (``*_tokens``,
  ``tokens``), which are usage; every other string (keys too) goes through the text rule.
- ``redact_output_json_text(raw)``: JSON text (a payload column) redacted as a value and dumped
  compactly; text that is not JSON is redacted as text.

``store.safety.display.printable`` calls ``redact_output_text``, so the CLI's tables and records and
every screen that shows store text through ``screens.text`` / ``store.safety.display`` are covered;
JSON output (``tui.output.emit_json``) calls ``redact_output_value``.

Why a list of patterns here rather than a maintained detector such as ``detect-secrets``' plugins:
detect-secrets 1.5.0 (May 2024, its latest release) imports ``requests`` and its stack with its
plugins (~160 ms, ~340 modules), reports a finding as a value that is not always the secret (``ghp``
for a GitHub token, the header line for a private key), so it cannot say what to hide, and misses
``github_pat_…``, ``sk-proj-…`` and ``sk-ant-…``; its fork bc-detect-secrets has fewer plugins
still. The shapes below follow those plugins' and gitleaks' rules, anchored on each provider's
documented prefix; each is tried only on text holding its prefix, so ordinary text costs a few
substring tests (standard library only, compiled on first use).
"""

from __future__ import annotations

import json
import re
from collections import namedtuple
from functools import cache, lru_cache

from roundtable_console.store.safety.redaction import (
    REDACTED,
    TEXT_MARKERS,
    hides,
    is_token_count,
    redact_json_value,
    redact_text,
)

# typing is not imported at run time: every hook's process would pay ~3 ms for it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Shape(namedtuple("Shape", ("name", "triggers", "pattern"))):
    """One kind of credential: ``pattern`` is tried only on text holding one of ``triggers``
    (plain substrings, so text without any costs a few ``in`` tests). A group
    ``keep`` in the pattern is context that stays shown; the rest of the match is hidden."""

    __slots__ = ()
    name: str
    triggers: tuple[str, ...]
    pattern: str

    @property
    def compiled(self) -> re.Pattern[str]:
        return _compiled(self.pattern)


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.S)


def _hide(match: re.Match[str]) -> str:
    kept = match.groupdict().get("keep")
    return f"{kept}{REDACTED}" if kept else REDACTED


_AWS = ("AKIA", "ASIA", "ABIA", "ACCA", "A3T")
SHAPES: tuple[Shape, ...] = (
    Shape(
        "private key block",
        ("PRIVATE KEY",),
        r"-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|.*)",
    ),
    Shape(
        "password in a URL",
        ("://",),
        r"(?P<keep>\b[A-Za-z][A-Za-z0-9+.-]{0,30}://[^\s:/@]*:)[^\s@/]+(?=@)",
    ),
    Shape("GitHub token", ("gh",), r"\bgh[pousr]_[A-Za-z0-9]{30,255}"),
    Shape("GitHub fine-grained token", ("github_pat_",), r"\bgithub_pat_[A-Za-z0-9_]{22,255}"),
    Shape("GitLab token", ("gl",), r"\bgl(?:pat|dt|ptt|rt|cbt|soat|ft|imt)-[A-Za-z0-9_-]{20,}"),
    Shape("Slack token", ("xox",), r"\bxox[abposre]-[A-Za-z0-9-]{10,}"),
    Shape(
        "Slack webhook",
        ("hooks.slack.com",),
        r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]+",
    ),
    Shape("AWS access key id", _AWS, r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    # OpenAI and Anthropic (sk-proj-…, sk-ant-api03-…); a digit somewhere keeps words out.
    Shape("OpenAI or Anthropic key", ("sk-",), r"\bsk-(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9_-]{20,}"),
    Shape("Stripe key", ("_live_", "_test_"), r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    Shape("Stripe webhook secret", ("whsec_",), r"\bwhsec_[A-Za-z0-9]{24,}"),
    Shape("Google API key", ("AIza",), r"\bAIza[0-9A-Za-z_-]{35}"),
    Shape("Google OAuth token", ("ya29.",), r"\bya29\.[0-9A-Za-z_-]{20,}"),
    Shape(
        "JSON Web Token",
        ("eyJ",),
        r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
    ),
    Shape("npm token", ("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    Shape("PyPI token", ("pypi-",), r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    Shape("SendGrid key", ("SG.",), r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"),
    Shape("Hugging Face token", ("hf_",), r"\bhf_(?=[A-Za-z0-9]*[0-9])[A-Za-z0-9]{30,}\b"),
    Shape("Twilio key", ("SK",), r"\bSK[0-9a-f]{32}\b"),
    Shape("Shopify token", ("shp",), r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    Shape("DigitalOcean token", ("_v1_",), r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    Shape("Vault token", ("hvs.", "hvb.", "hvr."), r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    Shape("Databricks token", ("dapi",), r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b"),
    Shape("Mailchimp key", ("-us",), r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    Shape("Square token", ("sq0",), r"\bsq0(?:atp|csp)-[0-9A-Za-z_-]{22,}"),
    Shape("Telegram bot token", (":AA",), r"\b[0-9]{8,10}:AA[0-9A-Za-z_-]{33}"),
    Shape("Linear key", ("lin_api_",), r"\blin_api_[A-Za-z0-9]{40}\b"),
    Shape("Postman key", ("PMAK-",), r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    Shape("Atlassian token", ("ATATT3",), r"\bATATT3[A-Za-z0-9_=-]{20,}"),
    Shape("age secret key", ("AGE-SECRET-KEY-",), r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
)

# Assignments to key names beyond the reference's markers (``store.safety.redaction``): the name and
# its ``=`` / ``:`` stay shown. Tried only when the lower-cased text holds one of the names.
_ASSIGNED_NAMES = (
    "apikey",
    "api-key",
    "passwd",
    "private_key",
    "private-key",
    "access_key",
    "access-key",
    "accountkey",
)
_ASSIGNMENT = Shape(
    "assignment",
    _ASSIGNED_NAMES,
    r"(?P<keep>(?<![A-Za-z0-9])(?i:(?:x-)?api-?key|passwd|private[_-]key|access[_-]key"
    r"|accountkey)[\"']?[ \t]*[=:][ \t]*[\"']?)[^\s&,;\"']+",
)
# The reference's markers, for the same cheap test before its expression runs.
_MARKERS = (*TEXT_MARKERS, "bearer")


_TRIGGERS: tuple[tuple[str, Shape], ...] = tuple(
    (trigger, shape) for shape in SHAPES for trigger in shape.triggers
)
# No shape matches fewer characters than this (``a://:p@`` is the shortest).
_SHORTEST = 7


# Every token shape is a run of at least this many of these characters: text without one (most
# text: words, ids, times) skips the token shapes; only a key block or a URL can be shorter.
_TOKEN_RUN = re.compile(r"[A-Za-z0-9_.-]{15,}")


def hide_credentials(text: str) -> str:
    """``text`` with every credential of ``SHAPES`` (and assignment to a key name they add)
    replaced by ``[REDACTED]``."""
    if len(text) < _SHORTEST:
        return text
    if "://" in text or "PRIVATE KEY" in text or _TOKEN_RUN.search(text):
        tried: list[Shape] = []
        for trigger, shape in _TRIGGERS:
            if trigger in text and shape not in tried:
                tried.append(shape)
                text = shape.compiled.sub(_hide, text)
    lowered = text.lower()
    if any(name in lowered for name in _ASSIGNED_NAMES):
        text = _ASSIGNMENT.compiled.sub(_hide, text)
    return text


def redact_output_text(text: str) -> str:
    """Store text as every read path shows it (see the module's docstring)."""
    if len(text) <= _REMEMBERED_LENGTH:
        return _remembered(text)
    return _redact(text)


def _redact(text: str) -> str:
    text = hide_credentials(text)
    lowered = text.lower()
    return redact_text(text) if any(marker in lowered for marker in _MARKERS) else text


# Short texts come back again and again (keys, statuses, agents, a screen redrawn on refresh):
# each is redacted once. Long ones (payloads) are not kept, so memory stays bounded.
_REMEMBERED_LENGTH = 200
_remembered = lru_cache(maxsize=16_384)(_redact)


# Key names beyond the reference's markers whose values are credentials (compared without
# ``-`` and ``_``, in any case): ``apiKey``, ``x-api-key``, ``private_key``, ``AccessKey`` ….
_MORE_SENSITIVE_KEYS = ("apikey", "passwd", "privatekey", "accesskey", "accountkey", "cookie")


def hides_value(key: str, value: Any) -> bool:
    """Whether the value under ``key`` is hidden whole: the reference's key markers and a few
    more names, except numbers under token-count keys."""
    if hides(key, value):
        return True
    if is_token_count(key, value):
        return False
    squashed = key.lower().replace("-", "").replace("_", "")
    return any(name in squashed for name in _MORE_SENSITIVE_KEYS)


def redact_output_value(value: Any) -> Any:
    """A decoded JSON value as every read path shows it (see the module's docstring)."""
    return redact_json_value(value, text=redact_output_text, sensitive=hides_value)


def redact_output_json_text(raw: str | None) -> str | None:
    """JSON text redacted as a value and dumped compactly; other text redacted as text."""
    if raw is None:
        return None
    try:
        decoded = json.loads(raw)
    except (json.JSONDecodeError, TypeError, ValueError, RecursionError):
        return redact_output_text(raw)
    return json.dumps(redact_output_value(decoded), separators=(",", ":"), ensure_ascii=False)
