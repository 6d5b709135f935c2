"""Recognising a customer's explicit request for a person, without asking the model.

A small model may ignore "I'd like to talk to a human", and a strong one costs a round trip to decide what a regular
expression can. ``asks_for_person`` reads the customer's message against fixed phrase lists for the languages the
demo shop speaks (English, German) and Chinese, and answers which language matched, or None.

What counts (``REQUEST_PATTERNS``): a message that is nothing but a person word ("human", "agent please", "Mensch",
"人工"), or a sentence that asks to talk to / be connected with one ("can I speak to a real person?", "ich möchte
mit einem Mitarbeiter sprechen", "转人工"). What does not (``NOT_A_REQUEST``): a person word used about someone else
("my agent said…", "a travel agent", "human error", "in person", "人工智能"), or a request that is negated ("I don't
need a human"). When in doubt the message goes to the model, which has the ``transfer_to_human`` tool.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Final

from app.playbooks.language import Language

# Words customers use for "a person from your team".
PERSON_WORDS_EN: Final = (
    "human",
    "human being",
    "human agent",
    "live agent",
    "real agent",
    "agent",
    "person",
    "real person",
    "live person",
    "actual person",
    "real human",
    "someone",
    "somebody",
    "representative",
    "rep",
    "operator",
    "staff member",
    "member of staff",
    "member of your team",
    "customer service",
    "support team",
)
PERSON_WORDS_DE: Final = (
    "mensch",
    "menschen",
    "echten menschen",
    "echter mensch",
    "person",
    "einer person",
    "einem menschen",
    "echte person",
    "echten person",
    "mitarbeiter",
    "mitarbeiterin",
    "einem mitarbeiter",
    "einer mitarbeiterin",
    "kundendienst",
    "kundenservice",
    "jemandem",
    "jemanden",
)
# Chinese has no word boundaries: these are matched as substrings (after the exclusions below are removed).
PERSON_PHRASES_ZH: Final = ("转人工", "人工客服", "人工服务", "人工", "真人", "客服人员", "找客服")

POLITE_WORDS_EN: Final = ("please", "pls", "plz", "now", "a", "an", "the", "to", "i", "want", "need", "can", "get")
POLITE_WORDS_DE: Final = ("bitte", "jetzt", "einen", "einem", "eine", "einer", "ich", "will", "möchte", "brauche")
# A message of at most this many words, once polite filler is removed, is read as "just a person, please".
MAX_BARE_REQUEST_WORDS = 3

_EN_VERBS = (
    r"talk|speak|chat|connect|transfer|put|pass|hand|escalate|get|give|want|need|like|prefer|request|reach|"
    r"contact|call"
)
_EN_PERSON = "|".join(re.escape(word) for word in sorted(PERSON_WORDS_EN, key=len, reverse=True))
_DE_PERSON = "|".join(re.escape(word) for word in sorted(PERSON_WORDS_DE, key=len, reverse=True))

REQUEST_PATTERNS: Final[dict[Language, re.Pattern[str]]] = {
    "en": re.compile(
        rf"\b(?:{_EN_VERBS})\b(?:\s+\w+){{0,4}}?\s+(?:to|with|me|through\s+to)?\s*"
        rf"(?:a|an|the|some|your|one\s+of\s+your)?\s*(?:real|live|actual|human)?\s*(?:{_EN_PERSON})\b"
        r"|\b(?:real|live|actual)\s+(?:person|human|agent|people)\b"
        r"|\bhuman\s+(?:please|agent|support|help)\b"
        r"|\bnot\s+(?:a|the)\s+(?:bot|robot|machine|ai)\b"
    ),
    "de": re.compile(
        rf"\bmit\s+(?:{_DE_PERSON})(?:\s+\w+){{0,3}}?\s+(?:sprechen|reden|schreiben|verbinden|chatten)\b"
        rf"|\b(?:verbinden|weiterleiten|sprechen|reden)\b(?:\s+\w+){{0,3}}?\s+(?:mit|an)\s+(?:{_DE_PERSON})\b"
        r"|\b(?:echte[nr]?|richtige[nr]?)\s+(?:mensch|menschen|person|mitarbeiter\w*)\b"
        r"|\bkein(?:en)?\s+(?:bot|roboter)\b"
    ),
}
# A person word about someone else, or a negated request: never a handoff on its own.
NOT_A_REQUEST: Final[dict[Language, re.Pattern[str]]] = {
    "en": re.compile(
        r"\b(?:my|his|her|their|our|a|the)\s+(?:travel|insurance|shipping|real\s+estate|delivery|customs|booking)?"
        r"\s*agent\s+(?:said|says|told|asked|wants|is|was|will|has|had)\b"
        r"|\b(?:travel|insurance|shipping|real\s+estate|customs|booking|secret)\s+agent\b"
        r"|\bhuman\s+(?:error|rights|body|nature|race)\b"
        r"|\bin\s+person\b"
        r"|\b(?:don'?t|do\s+not|doesn'?t|no\s+need|never|not)\s+(?:\w+\s+){0,3}?"
        r"(?:want|need|talk|speak|transfer|connect|human|person|agent|someone|somebody)\b"
    ),
    "de": re.compile(r"\b(?:nicht|kein(?:en)?)\s+(?:\w+\s+){0,3}?(?:mensch|menschen|mitarbeiter\w*|person)\b"),
}
ZH_EXCLUSIONS: Final = ("人工智能", "人工成本", "人工费", "不要人工", "不用人工", "不需要人工")

_WORD = re.compile(r"[\w']+")


def _normalized(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("\u2019", "'").lower().strip()


def _bare_request(words: list[str], filler: tuple[str, ...], persons: tuple[str, ...]) -> bool:
    meaningful = [word for word in words if word not in filler]
    return 0 < len(meaningful) <= MAX_BARE_REQUEST_WORDS and " ".join(meaningful) in persons


def _asks_in_chinese(text: str) -> bool:
    for excluded in ZH_EXCLUSIONS:
        text = text.replace(excluded, "")
    return any(phrase in text for phrase in PERSON_PHRASES_ZH)


def asks_for_person(text: str) -> Language | None:
    """The language of an explicit request for a person in ``text``, or None when it is not one."""
    normalized = _normalized(text)
    if not normalized:
        return None
    if _asks_in_chinese(normalized):
        return "zh"
    words = _WORD.findall(normalized)
    if _bare_request(words, POLITE_WORDS_DE, PERSON_WORDS_DE):
        return "de"
    if _bare_request(words, POLITE_WORDS_EN, PERSON_WORDS_EN):
        return "en"
    for language in ("de", "en"):
        if REQUEST_PATTERNS[language].search(normalized) and not NOT_A_REQUEST[language].search(normalized):
            return language
    return None
