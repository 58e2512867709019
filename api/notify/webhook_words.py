"""What a webhook is posted, in words a chat shows as written (``serve --notify``)."""

from __future__ import annotations

import re

from roundtable_console.store.push.telling import Notice


def chat_text(words: str) -> str:
    """Words a chat shows as written: Slack's control characters escaped (no ``<!channel>``, no
    disguised ``<url|label>`` link), and no ``@everyone``, ``@here``, ``@channel`` or ``@all``
    (in any case: Mattermost's and Rocket.Chat's too) that pings a room."""
    escaped = words.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return re.sub(r"@(everyone|here|channel|all)\b", "@\u200b\\1", escaped, flags=re.IGNORECASE)


def webhook_body(notice: Notice) -> dict[str, object]:
    """A notice as a webhook posts it: ours, with ``text`` for Slack-compatible receivers and
    ``title``/``message`` for ntfy's JSON."""
    payload = notice.payload()
    return {
        **payload,
        "text": chat_text(f"{notice.title}: {notice.body}"),
        "message": notice.body,
        "event": "roundtable." + notice.kind,
    }
