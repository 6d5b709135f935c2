"""Deciding whether the customer has explicitly said yes to a proposed write action.

The model proposes an action (cancel, refund, address change), the customer answers, and the model calls the tool
with ``confirmed: true``. The server does not take the model's word for it: the customer's *latest* message must
read as an explicit yes (``is_affirmative``), and that yes must still be unspent: no write action may have succeeded
since it (one "yes" never authorizes two actions), and no write action may have been *proposed* since it (a
``confirmation_required`` answer after the yes means the customer has not seen that proposal yet). The check is
deliberately conservative: a question, a hedge ("yes but…", "wait", "not yet") or a long message is not a
confirmation; the model simply asks again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from compression.messages import function_calls, message_text

MAX_CONFIRMATION_WORDS = 40
CONFIRMATION_REQUIRED_CODE = "confirmation_required"  # ErrorCode.CONFIRMATION_REQUIRED, as it appears in JSON

_AFFIRMATIVE = re.compile(
    r"\b(?:yes|yeah|yea|yep|yup|sure|ok|okay|alright|all right|confirm|confirmed|i confirm|go ahead|go for it|"
    r"please do|do it|proceed|that's right|that is right|correct|absolutely|definitely|of course|sounds good|"
    r"affirmative|please go ahead|ja|jawohl|genau|gerne|gern|einverstanden|bestätigt|bestätige|mach das|machen sie "
    r"das|in ordnung|richtig|passt)\b"
    r"|👍|✅|是的|好的|可以|确认|没问题|行|对|好",
)
_SINGLE_LETTER_YES = re.compile(r"^\s*y\s*[.!]*\s*$")
_NEGATIVE = re.compile(
    r"\bno\b(?!\s+(?:problem|worries)\b)|\bnope\b|\bnah\b|n't\b|\bnot\b|\bwait\b|\bstop\b|\bhold on\b|"
    r"\bhold off\b|\bnever ?mind\b|\bchanged my mind\b|\brather not\b|\bbut\b|\binstead\b|\bactually\b|"
    r"\bdon'?t\b|\bcancel that\b|\bhang on\b|👎"
    r"|\bnein\b|\bnicht\b|\bkein\w*|\bwarte\b|\bstopp\b|\baber\b|\blieber\b|\bdoch\b|\bmoment\b"
    r"|不|别|没|等等|等一下|算了|但是|可是",
)
# A plain no to a proposal: the customer declined it (anything else unclear is neither yes nor no).
_PLAIN_NO = re.compile(
    r"^\s*(?:no thanks|no thank you|no|nope|nah|don't|do not|nein danke|nein|lieber nicht|bitte nicht|"
    r"不要|不用|不了|算了|不|别)(?![a-z'])"
)
MAX_REFUSAL_WORDS = 12


def is_affirmative(text: str) -> bool:
    """True when ``text`` reads as an explicit, unconditional yes."""
    normalized = text.lower().replace("\u2019", "'").strip()
    if not normalized or normalized.endswith(("?", "？", "吗")):
        return False
    if len(normalized.split()) > MAX_CONFIRMATION_WORDS:
        return False
    if _NEGATIVE.search(normalized):
        return False
    return bool(_AFFIRMATIVE.search(normalized) or _SINGLE_LETTER_YES.match(normalized))


def is_refusal(text: str) -> bool:
    """True when ``text`` starts with a plain no ("no thanks, I'll keep it", "nein", "不用了")."""
    normalized = text.lower().replace("\u2019", "'").strip()
    if len(normalized.split()) > MAX_REFUSAL_WORDS or normalized.endswith(("?", "？")):
        return False
    return bool(_PLAIN_NO.match(normalized))


def latest_customer_message_index(messages: Sequence[Mapping[str, Any]]) -> int | None:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].get("role") == "user":
            return index
    return None


def customer_confirmed_in_messages(messages: Sequence[Mapping[str, Any]], *, write_tools: Collection[str]) -> bool:
    """The customer's latest message is a yes, not yet spent by a write action (``write_tools``) after it."""
    index = latest_customer_message_index(messages)
    if index is None or not is_affirmative(message_text(messages[index])):
        return False
    return not _yes_spent(messages[index + 1 :], write_tools)


def _yes_spent(messages: Sequence[Mapping[str, Any]], write_tools: Collection[str]) -> bool:
    """A write action succeeded, or asked for confirmation, in ``messages`` (those after the customer's yes)."""
    call_names: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant":
            call_names.update((call.id, call.name) for call in function_calls(message))
        elif message.get("role") == "tool" and call_names.get(str(message.get("tool_call_id"))) in write_tools:
            code = _error_code(message_text(message))
            if code is None or code == CONFIRMATION_REQUIRED_CODE:
                return True
    return False


def _error_code(content: str) -> str | None:
    """The ``error.code`` of a tool message's JSON content; None for a successful result."""
    try:
        value = json.loads(content)
    except json.JSONDecodeError:
        return None
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        return str(value["error"].get("code"))
    return None
