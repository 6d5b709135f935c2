"""Which of the desk's languages a customer writes in: Chinese, German or English, without a model.

Chinese is told by its script. German by its letters (ä, ö, ü, ß) or its most common short words, counted against
English ones: a customer who writes "Wo ist meine Bestellung?" gets German, one who writes "yes" gets English. A
message with no words to go on (an order number alone) gives None: the caller keeps the language it had.
"""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["en", "de", "zh"]

_CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
_WORD = re.compile(r"[^\W\d_]+")
_GERMAN_LETTERS = re.compile(r"[äöüß]", re.IGNORECASE)
_GERMAN_WORDS_TEXT = (
    "ich du sie wir ihr mein meine meiner meinen meinem ist sind wo wann wie was warum und oder nicht kein keine "
    "bitte danke der die das den dem des ein eine einen einem mit von zu zum zur auf für noch schon habe hast hat "
    "haben bestellung paket lieferung sendung rückerstattung geld kann können möchte will würde gerne ja nein "
    "hallo guten tag adresse ändern stornieren zurückschicken kaputt beschädigt bekommen geliefert"
)
GERMAN_WORDS = frozenset(_GERMAN_WORDS_TEXT.split())
_ENGLISH_WORDS_TEXT = (
    "i you we my me is are where when how what why and or not no the a an of to for with on in it this that have "
    "has had can could would will want need please thanks thank yes order package parcel delivery refund hello hi "
    "change cancel return address arrived"
)
ENGLISH_WORDS = frozenset(_ENGLISH_WORDS_TEXT.split())


def detect_language(text: str) -> Language | None:
    """The language ``text`` is written in, or None when it has no words to tell by."""
    if _CJK.search(text):
        return "zh"
    words = [word.lower() for word in _WORD.findall(text)]
    if not words:
        return None
    german = sum(word in GERMAN_WORDS for word in words) + 2 * len(_GERMAN_LETTERS.findall(text))
    english = sum(word in ENGLISH_WORDS for word in words)
    if german > english:
        return "de"
    if english or german:
        return "en"
    return None
