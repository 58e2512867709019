"""A signed-in browser's secret (``store.access.web_sessions``) and the CSRF proof its pages'
writes carry beside it: another origin cannot compute the proof, since the cookie that holds the
secret is out of its reach."""

from __future__ import annotations

import hashlib
import hmac
import secrets

# How a browser's secret begins (a sign-in's, and a device's after each proof).
SECRET_PREFIX = "rtw_"


def new_secret() -> str:
    return SECRET_PREFIX + secrets.token_urlsafe(32)


def csrf_proof(secret: str) -> str:
    """What a page's writes carry beside the cookie."""
    return hmac.new(secret.encode("utf-8", "surrogatepass"), b"csrf", hashlib.sha256).hexdigest()


def csrf_holds(secret: str, proof: str | None) -> bool:
    return proof is not None and hmac.compare_digest(csrf_proof(secret), proof.strip())
