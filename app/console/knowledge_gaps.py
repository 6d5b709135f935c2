"""Content gaps for supervisors: the questions the knowledge could not answer, grouped by how alike they read.

Grouping is lexical and cheap enough to run on every page load over a few thousand open gaps: each question
becomes a vector of its hashed character trigrams (casefolded, punctuation dropped), so a misspelling still
shares most of its trigrams with the right word and Chinese, which has no spaces, groups as well as English.
Groups form greedily, newest question first: a question that is not in a group yet starts one, and every other
ungrouped question whose cosine similarity to it reaches ``SIMILARITY_THRESHOLD`` joins it. Numpy does the
arithmetic; no clustering library is among our dependencies, and one sparse product per group is all this needs.
Paraphrases that share no words stay apart: those are rarer among customers' repeated questions than the same
words in a different order or spelling.

Only the newest ``MAX_GROUPED_GAPS`` open gaps are grouped; the page says how many older ones there are. A
supervisor dismisses a group or marks it covered (after an import answered it): the gaps shown in that group
change status together, recorded in the audit trail.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import func, update
from sqlalchemy import select as sa_select
from sqlmodel import Session, col

from app.console.audit import record_audit_event
from app.models import Conversation, GapReason, GapStatus, KnowledgeGap, utc_now

SIMILARITY_THRESHOLD = 0.55
MAX_GROUPED_GAPS = 5_000
# A group lists this many of its questions and conversations; its count says how many it holds.
EXAMPLES_SHOWN = 5
VECTOR_DIMS = 2048
_NOT_WORD = re.compile(r"[\W_]+")


class GapResolutionError(ValueError):
    """The gaps to resolve are not (or no longer) open."""


@dataclass(frozen=True)
class GapQuestion:
    gap_id: int
    question: str
    conversation_ref: str  # the conversation's public id, for its console link
    reason: GapReason
    created_at: datetime


@dataclass(frozen=True)
class GapGroup:
    gap_ids: list[int]
    examples: list[GapQuestion]
    reasons: dict[GapReason, int]
    latest_at: datetime

    @property
    def count(self) -> int:
        return len(self.gap_ids)


@dataclass(frozen=True)
class GapOverview:
    groups: list[GapGroup]
    open_gaps: int
    ungrouped: int  # open gaps older than the newest MAX_GROUPED_GAPS


def question_vectors(questions: list[str]) -> np.ndarray:
    """Unit vectors of the questions' hashed character trigrams (a zero row for a question without letters)."""
    vectors = np.zeros((len(questions), VECTOR_DIMS), dtype=np.float32)
    for row, question in enumerate(questions):
        text = f" {_NOT_WORD.sub(' ', question.casefold()).strip()} "
        # crc32, not hash(): grouping must not change from one server process to the next.
        for trigram, count in Counter(text[i : i + 3] for i in range(len(text) - 2)).items():
            vectors[row, zlib.crc32(trigram.encode()) % VECTOR_DIMS] += count
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    return unit


def group_similar(questions: list[str], threshold: float = SIMILARITY_THRESHOLD) -> list[list[int]]:
    """Indexes of ``questions`` in groups (see the module docstring); each group in the given order, the groups
    in the order of their first question."""
    vectors = question_vectors(questions)
    # Trigram buckets by row: a question fills a few dozen of the columns, so its similarity to every other
    # question is read from those columns alone, a small fraction of a full matrix-vector product.
    by_bucket = np.ascontiguousarray(vectors.T)
    grouped = np.zeros(len(questions), dtype=bool)
    groups = []
    for leader in range(len(questions)):
        if grouped[leader]:
            continue
        buckets = np.flatnonzero(vectors[leader])
        similar = (vectors[leader, buckets] @ by_bucket[buckets] >= threshold) & ~grouped
        similar[leader] = True  # a question without letters still forms a group of its own
        grouped |= similar
        groups.append(np.flatnonzero(similar).tolist())
    return groups


def _open_questions(session: Session) -> list[GapQuestion]:
    rows = session.execute(
        sa_select(KnowledgeGap, col(Conversation.public_id))
        .join(Conversation, col(Conversation.id) == col(KnowledgeGap.conversation_id))
        .where(col(KnowledgeGap.status) == GapStatus.OPEN)
        .order_by(col(KnowledgeGap.created_at).desc(), col(KnowledgeGap.id).desc())
        .limit(MAX_GROUPED_GAPS)
    )
    return [
        GapQuestion(gap.id, gap.question, public_id, gap.reason, gap.created_at)
        for gap, public_id in rows
        if gap.id is not None
    ]


def _group(members: list[GapQuestion]) -> GapGroup:
    return GapGroup(
        gap_ids=[member.gap_id for member in members],
        examples=members[:EXAMPLES_SHOWN],
        reasons=dict(Counter(member.reason for member in members)),
        latest_at=members[0].created_at,
    )


def gap_overview(session: Session) -> GapOverview:
    """The open gaps in groups, the largest first (the newest first among groups of one size)."""
    questions = _open_questions(session)
    groups = [_group([questions[i] for i in indexes]) for indexes in group_similar([q.question for q in questions])]
    groups.sort(key=lambda group: group.count, reverse=True)  # stable: equal counts stay newest first
    total = session.scalar(sa_select(func.count()).where(col(KnowledgeGap.status) == GapStatus.OPEN)) or 0
    return GapOverview(groups=groups, open_gaps=total, ungrouped=max(0, total - len(questions)))


def resolve_gaps(session: Session, gap_ids: list[int], status: GapStatus, *, staff_id: int, actor: str) -> int:
    """Dismiss the open gaps ``gap_ids`` or mark them covered; audited with them. Returns how many changed."""
    if status == GapStatus.OPEN:
        raise GapResolutionError("A gap can be dismissed or marked covered, not reopened.")
    wanted = sorted(set(gap_ids))
    result = session.execute(
        update(KnowledgeGap)
        .where(col(KnowledgeGap.id).in_(wanted), col(KnowledgeGap.status) == GapStatus.OPEN)
        .values(status=status, resolved_at=utc_now(), resolved_by=staff_id)
    )
    changed = int(result.rowcount)  # type: ignore[attr-defined]
    if not changed:
        session.rollback()
        raise GapResolutionError("These questions are no longer open: another supervisor may have resolved them.")
    record_audit_event(
        session,
        actor=actor,
        action=f"console.knowledge_gaps_{status.value}",
        target_type="knowledge_gap",
        target_id=wanted[0],
        detail={"gaps": changed, "gap_ids": wanted[: EXAMPLES_SHOWN * 20]},
    )
    session.commit()
    return changed
