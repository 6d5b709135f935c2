"""Who a widget request comes from: signed visitor tokens and verified shop identities.

A visitor token is ``<customer id>.<issued at>.<signature>``, signed with HMAC-SHA256 under the server's secret key;
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
import time
from dataclasses import dataclass

VISITOR_TOKEN_TTL_S = 30 * 24 * 3600
_TOKEN_PURPOSE = b"memdesk-visitor-v1"


class IdentityError(Exception):
    """The caller's identity could not be established."""


@dataclass(frozen=True)
class Visitor:
    customer_id: int
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

    def issue(self, customer_id: int, *, now: float | None = None) -> str:
        payload = f"{customer_id}.{int(now if now is not None else time.time())}"
        return f"{payload}.{self._sign(payload)}"

    def verify(self, token: str | None, *, now: float | None = None) -> Visitor:
        if not token:
            raise IdentityError("A visitor token is required: start a widget session first.")
        parts = token.split(".")
        if len(parts) != 3 or not parts[0].isdigit() or not parts[1].isdigit():
            raise IdentityError("The visitor token is malformed; start a new widget session.")
        payload = f"{parts[0]}.{parts[1]}"
        if not hmac.compare_digest(self._sign(payload), parts[2]):
            raise IdentityError("The visitor token's signature is invalid; start a new widget session.")
        issued_at = int(parts[1])
        current = now if now is not None else time.time()
        if current - issued_at > self.ttl_s:
            raise IdentityError("The visitor token has expired; start a new widget session.")
        return Visitor(customer_id=int(parts[0]), issued_at=issued_at)


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
    if not proof or not hmac.compare_digest(shop_identity_hmac(secret, external_id), proof.lower()):
        raise IdentityError("The customer identity could not be verified: the identity HMAC does not match.")
