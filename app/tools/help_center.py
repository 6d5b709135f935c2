"""Help-center search: a small ranked keyword search over ``help_articles``, and the tool that exposes it.

Ranking is BM25 over the article body plus fixed boosts for query terms found in the title and tags, after light
normalisation (lower case, stop words removed, a few suffixes stripped, a handful of synonyms). It scores every
article on each search, which is right for a help center of dozens or a few hundred articles; a larger one should
move to the database's full-text index (SQLite FTS5, PostgreSQL ``tsvector``).

The articles are read from the database at most every ``ARTICLES_FRESH_S`` per engine (``load_articles``): they
change only when a shop is seeded or edited, while every turn that looks for help would otherwise query them all.
A write through this process's ORM drops the copy at once; one made by another process shows within that time.
"""

from __future__ import annotations

import math
import re
import threading
import time
import weakref
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field
from sqlalchemy import Connection, Engine, event
from sqlalchemy.orm import Mapper
from sqlmodel import Session, col, select

from app.models import HelpArticle
from app.tools.registry import ToolContext
from app.tools.typed import ToolArguments, TypedTool

TITLE_WEIGHT = 3.0
TAG_WEIGHT = 2.0
# Added once when a multi-word tag (like "where is my order") or the whole title appears in the query as a phrase.
PHRASE_BONUS = 8.0
BM25_K1 = 1.2
BM25_B = 0.75
ARTICLES_FRESH_S = 60.0
MIN_STEM_LENGTH = 3
DEFAULT_RESULTS = 3
MAX_RESULTS = 5

_STOP_WORDS_TEXT = """
    a about after all also am an and any are as at be been before but by can could did do does for from get got
    had has have how i if in into is it its just me my no not of on or our please so than that the their them
    then there these they this to too up us was we were what when where which who why will with would you your
    something anything thing things want need know like tell hi hello thanks thank
    s t d ll ve re m
"""
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
# Different words customers use for the same thing, mapped onto the word the articles use.
SYNONYMS = {
    "parcel": "package",
    "money": "refund",
    "reimburs": "refund",
    "cancellation": "cancel",
    "cancell": "cancel",
    "shipping": "ship",
    "deliv": "deliver",
    "delivery": "deliver",
    "signin": "login",
    "coupon": "promo",
    "voucher": "promo",
    "broke": "damag",
    "broken": "damag",
}
_WORD = re.compile(r"[a-z0-9]+")
_DOUBLE_CONSONANT = re.compile(r"([b-df-hj-np-tv-z])\1$")


def _stem(word: str) -> str:
    stem = word
    if stem.endswith("ies") and len(stem) > 4:
        stem = stem[:-3] + "y"
    elif re.search(r"(?:ss|x|ch|sh|z)es$", stem):
        stem = stem[:-2]
    elif stem.endswith("s") and not re.search(r"[siu]s$", stem) and len(stem) > MIN_STEM_LENGTH:
        stem = stem[:-1]
    for suffix in ("ing", "ed"):
        if stem.endswith(suffix) and len(stem) - len(suffix) >= MIN_STEM_LENGTH:
            stem = stem[: -len(suffix)]
            if _DOUBLE_CONSONANT.search(stem) and not stem.endswith(("ss", "ll")):
                stem = stem[:-1]
            break
    if stem.endswith("e") and len(stem) > MIN_STEM_LENGTH + 1:
        stem = stem[:-1]
    return SYNONYMS.get(stem, stem)


def _phrase(text: str) -> str:
    return " ".join(_WORD.findall(text.lower()))


def _phrase_bonus(article: HelpArticle, query_phrase: str) -> float:
    padded = f" {query_phrase} "
    phrases = [_phrase(tag) for tag in article.tags if " " in tag.strip()] + [_phrase(article.title)]
    return PHRASE_BONUS if any(f" {phrase} " in padded for phrase in phrases if phrase) else 0.0


def terms(text: str) -> list[str]:
    """The normalised search terms of ``text``, in order, repeats kept."""
    return [_stem(word) for word in _WORD.findall(text.lower()) if word not in STOP_WORDS]


@dataclass(frozen=True)
class SearchHit:
    article: HelpArticle
    score: float


def search_articles(articles: Sequence[HelpArticle], query: str, *, limit: int = DEFAULT_RESULTS) -> list[SearchHit]:
    """The best ``limit`` articles for ``query``, best first (ties by slug); articles with no match are left out."""
    query_terms = list(dict.fromkeys(terms(query)))
    if not query_terms or not articles:
        return []
    bodies = [Counter(terms(article.body)) for article in articles]
    titles = [set(terms(article.title)) for article in articles]
    tags = [set(terms(" ".join(article.tags))) for article in articles]
    average_length = sum(sum(body.values()) for body in bodies) / len(articles) or 1.0
    idf: dict[str, float] = {}
    for term in query_terms:
        fields = zip(bodies, titles, tags, strict=True)
        containing = sum(1 for body, title, tag in fields if term in body or term in title or term in tag)
        if containing:
            idf[term] = math.log(1 + (len(articles) - containing + 0.5) / (containing + 0.5))
    query_phrase = _phrase(query)
    hits = []
    for index, article in enumerate(articles):
        body_length = sum(bodies[index].values())
        score = _phrase_bonus(article, query_phrase) if idf else 0.0
        for term, weight in idf.items():
            frequency = bodies[index][term]
            body_score = (
                frequency * (BM25_K1 + 1) / (frequency + BM25_K1 * (1 - BM25_B + BM25_B * body_length / average_length))
            )
            boost = TITLE_WEIGHT * (term in titles[index]) + TAG_WEIGHT * (term in tags[index])
            score += weight * (body_score + boost)
        if score > 0:
            hits.append(SearchHit(article, score))
    hits.sort(key=lambda hit: (-hit.score, hit.article.slug))
    return hits[:limit]


# Per engine (a test's or a server's database), detached copies, so no session's expiry or closing reaches them.
_loaded: weakref.WeakKeyDictionary[Engine, tuple[float, tuple[HelpArticle, ...]]] = weakref.WeakKeyDictionary()
_loaded_lock = threading.Lock()


def load_articles(session: Session) -> Sequence[HelpArticle]:
    """Every article, in id order: this process's copy when it is recent (see the module docstring)."""
    bind = session.get_bind()
    engine = bind.engine if isinstance(bind, Connection) else bind
    with _loaded_lock:
        loaded = _loaded.get(engine)
    if loaded is not None and time.monotonic() - loaded[0] < ARTICLES_FRESH_S:
        return loaded[1]
    read_at = time.monotonic()
    rows = session.exec(select(HelpArticle).order_by(col(HelpArticle.id))).all()
    articles = tuple(HelpArticle(**row.model_dump()) for row in rows)
    with _loaded_lock:
        _loaded[engine] = (read_at, articles)
    return articles


@event.listens_for(HelpArticle, "after_insert")
@event.listens_for(HelpArticle, "after_update")
@event.listens_for(HelpArticle, "after_delete")
def _forget_loaded(mapper: Mapper[HelpArticle], connection: Connection, target: HelpArticle) -> None:
    with _loaded_lock:
        _loaded.pop(connection.engine, None)


class SearchHelpArguments(ToolArguments):
    query: str = Field(min_length=2, max_length=300, description="What the customer wants to know, in a few words.")
    limit: int = Field(default=DEFAULT_RESULTS, ge=1, le=MAX_RESULTS, description="How many articles to return.")


class SearchHelpArticlesTool(TypedTool[SearchHelpArguments]):
    name = "search_help_articles"
    description = (
        "Search the shop's help center (returns, refunds, shipping times, address changes, cancellations, "
        "warranty, payment, account, privacy…) and return the best matching articles. Base policy answers on "
        "these articles rather than on general knowledge."
    )
    arguments_model = SearchHelpArguments

    def run(self, arguments: SearchHelpArguments, context: ToolContext) -> dict[str, Any]:
        hits = search_articles(load_articles(context.session), arguments.query, limit=arguments.limit)
        payload: dict[str, Any] = {
            "query": arguments.query,
            "results": [
                {
                    "slug": hit.article.slug,
                    "title": hit.article.title,
                    "body": hit.article.body,
                    "score": round(hit.score, 2),
                }
                for hit in hits
            ],
        }
        if not hits:
            payload["note"] = (
                "No help article matches. Don't guess the shop's policy: ask the customer to rephrase, or offer to "
                "transfer them to a human."
            )
        return payload
