"""Who a widget request comes from: signed visitor tokens and verified shop identities.

A visitor token is ``<customer public id>.<issued at>.<signature>``, signed with HMAC-SHA256 under the server's secret
key. The public id is random and never reused, so erasing a customer revokes every token issued to them: no later
customer can answer to it. The token is
it is what the widget sends on every request (``Authorization: Bearer …``, or ``?token=`` where a browser cannot
set headers, as with EventSource). A shop that knows its logged-in customer proves it to memdesk by having its own
server compute ``hex(HMAC-SHA256(widget identity secret, external id))``; the widget forwards both values and
memdesk links the visitor to that shop customer only when the HMAC matches.

Exception tree::

    IdentityError          the token or the shop identity proof is missing, malformed, forged or expired
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from dataclasses import dataclass

VISITOR_TOKEN_TTL_S = 30 * 24 * 3600
_TOKEN_PURPOSE = b"memdesk-visitor-v2"
_SUBJECT = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ISSUED_AT = re.compile(r"[0-9]{1,12}")


def secure_equals(given: str, expected: str) -> bool:
    """Constant-time comparison of two strings of any content (``hmac.compare_digest`` refuses non-ASCII str).

    Compared as UTF-8 bytes; ``surrogatepass`` lets a lone surrogate from a hostile client be compared (and fail)
    instead of raising."""
    return hmac.compare_digest(given.encode("utf-8", "surrogatepass"), expected.encode("utf-8", "surrogatepass"))


class IdentityError(Exception):
    """The caller's identity could not be established."""


@dataclass(frozen=True)
class Visitor:
    customer_public_id: str
    issued_at: int


class VisitorTokens:
    """Issues and checks visitor tokens."""

    def __init__(self, secret: str, *, ttl_s: int = VISITOR_TOKEN_TTL_S) -> None:
        if not secret:
            raise ValueError("VisitorTokens needs a non-empty secret key (MEMDESK_SECRET_KEY).")
        self._key = hashlib.sha256(_TOKEN_PURPOSE + secret.encode()).digest()
        self.ttl_s = ttl_s

    def _sign(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def issue(self, customer_public_id: str, *, now: float | None = None) -> str:
        if not _SUBJECT.fullmatch(customer_public_id):
            raise ValueError(f"A visitor token's subject must be a public customer id, got {customer_public_id!r}.")
        payload = f"{customer_public_id}.{int(now if now is not None else time.time())}"
        return f"{payload}.{self._sign(payload)}"

    def verify(self, token: str | None, *, now: float | None = None) -> Visitor:
        if not token:
            raise IdentityError("A visitor token is required: start a widget session first.")
        parts = token.split(".")
        if len(parts) != 3 or not _SUBJECT.fullmatch(parts[0]) or not _ISSUED_AT.fullmatch(parts[1]):
            raise IdentityError("The visitor token is malformed; start a new widget session.")
        payload = f"{parts[0]}.{parts[1]}"
        if not secure_equals(parts[2], self._sign(payload)):
            raise IdentityError("The visitor token's signature is invalid; start a new widget session.")
        issued_at = int(parts[1])
        current = now if now is not None else time.time()
        if current - issued_at > self.ttl_s:
            raise IdentityError("The visitor token has expired; start a new widget session.")
        return Visitor(customer_public_id=parts[0], issued_at=issued_at)


def shop_identity_hmac(secret: str, external_id: str) -> str:
    """What the shop's server computes for its logged-in customer (documented for integrators)."""
    return hmac.new(secret.encode(), external_id.encode(), hashlib.sha256).hexdigest()


def verify_shop_identity(secret: str | None, external_id: str, proof: str | None) -> None:
    """Raise ``IdentityError`` unless ``proof`` is the shop's HMAC of ``external_id``."""
    if not secret:
        raise IdentityError(
            "This memdesk has no MEMDESK_WIDGET_IDENTITY_SECRET, so shop customer ids cannot be verified; "
            "start an anonymous session instead."
        )
    if not proof or not secure_equals(proof.lower(), shop_identity_hmac(secret, external_id)):
        raise IdentityError("The customer identity could not be verified: the identity HMAC does not match.")
