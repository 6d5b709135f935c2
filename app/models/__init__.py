"""memdesk's relational model: every SQLModel table, grouped by concern, re-exported here.

Importing this package registers every table on ``SQLModel.metadata`` (what alembic's ``env.py`` compares against).
``base`` comes first: it installs the constraint naming convention before any table is declared.

- ``support``: customers, conversations, messages
- ``context``: context segments and compactions (the compression lineage)
- ``conclusions``: the conclusion outbox towards long-term memory
- ``console``: console staff, their sessions, sign-in throttles, read marks, handoff summaries, audit events
- ``sync``: the conclusion sync's runs (each conversation's watermark is on the conversation)
- ``events``: live events and rate windows that several server processes share on PostgreSQL
- ``shop``: the demo shop
- ``outcomes``: how each conversation turned out (resolution, handoff reason, first replies, reopens, rating)
- ``knowledge``: imported knowledge sources, documents, chunks, the chunks a reply cited, content gaps
- ``evaluations``: the saved runs of ``memdesk eval run``
- ``playbooks``: the runs of playbooks in conversations (what each waits for, how it ended), saved versions
"""

from app.models.base import DEFAULT_CURRENCY, NAMING_CONVENTION, utc_now
from app.models.conclusions import Conclusion, ConclusionKind, ConclusionSource, OutboxStatus
from app.models.console import (
    AuditEvent,
    Availability,
    CannedReply,
    ConversationLabel,
    ConversationRead,
    DeskSetting,
    HandoffSummary,
    LoginThrottle,
    StaffMember,
    StaffRole,
    StaffSession,
)
from app.models.context import Compaction, ContextSegment, SegmentReason, segment_title
from app.models.evaluations import EvalRun
from app.models.events import ConversationEvent, ConversationEventSequence, RateLimitWindow
from app.models.knowledge import (
    GapReason,
    GapStatus,
    KnowledgeChunk,
    KnowledgeDocument,
    KnowledgeGap,
    KnowledgeSource,
    MessageSource,
)
from app.models.outcomes import ConversationOutcome, HandoffReason, Resolution
from app.models.playbooks import PlaybookRun, PlaybookVersion, RunStatus
from app.models.promises import PromiseRecord, PromiseStatus
from app.models.shop import (
    Order,
    OrderItem,
    OrderStatus,
    Product,
    Refund,
    RefundStatus,
    Shipment,
    ShipmentStatus,
    ShippingAddress,
)
from app.models.support import (
    Conversation,
    ConversationPublic,
    ConversationStatus,
    Customer,
    Message,
    MessageAuthor,
    MessagePublic,
    MessageRole,
    SourcePublic,
)
from app.models.sync import SyncRun, SyncRunStatus

__all__ = [
    "DEFAULT_CURRENCY",
    "NAMING_CONVENTION",
    "AuditEvent",
    "Availability",
    "CannedReply",
    "Compaction",
    "Conclusion",
    "ConclusionKind",
    "ConclusionSource",
    "ContextSegment",
    "Conversation",
    "ConversationEvent",
    "ConversationEventSequence",
    "ConversationLabel",
    "ConversationOutcome",
    "ConversationPublic",
    "ConversationRead",
    "ConversationStatus",
    "Customer",
    "DeskSetting",
    "EvalRun",
    "GapReason",
    "GapStatus",
    "HandoffReason",
    "HandoffSummary",
    "KnowledgeChunk",
    "KnowledgeDocument",
    "KnowledgeGap",
    "KnowledgeSource",
    "LoginThrottle",
    "Message",
    "MessageAuthor",
    "MessagePublic",
    "MessageRole",
    "MessageSource",
    "Order",
    "OrderItem",
    "OrderStatus",
    "OutboxStatus",
    "PlaybookRun",
    "PlaybookVersion",
    "Product",
    "PromiseRecord",
    "PromiseStatus",
    "RateLimitWindow",
    "Refund",
    "RefundStatus",
    "Resolution",
    "RunStatus",
    "SegmentReason",
    "Shipment",
    "ShipmentStatus",
    "ShippingAddress",
    "SourcePublic",
    "StaffMember",
    "StaffRole",
    "StaffSession",
    "SyncRun",
    "SyncRunStatus",
    "segment_title",
    "utc_now",
]
