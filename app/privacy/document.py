"""The customer's export as a document a person can read: the shape of ``GET /api/admin/customers/{id}/export``.

Every name is one a customer understands; nothing here is a database column or an internal integer id (a
conversation is named by its public reference, an order by its number). Sections: the customer's details, each
conversation with its messages, summaries and outcome, what long-term memory holds with its history, conclusions not
yet in memory, orders with their items, shipments and refunds, actions taken on the account, and, in a section of
its own, what staff wrote for each other and the customer never saw in the chat.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

from pydantic import BaseModel, Field

EXPORT_TITLE = "Your data at our customer support desk"
ABOUT_THE_EXPORT = (
    "Everything our support desk holds about you: your details, every conversation with its messages, what the "
    "desk remembers about you and how that changed, your orders, and actions taken on your account. Notes our "
    "support staff wrote for each other, which were never shown in the chat, are listed separately in a section of "
    "their own at the end. Times are in UTC."
)
ABOUT_STAFF_NOTES = (
    "Private notes our support staff wrote for each other about your conversations, and summaries written for the "
    "person who took a conversation over. They were never shown to you in the chat."
)


class YourDetails(BaseModel):
    reference: str = Field(description="The reference our desk knows you by")
    shop_customer_id: str | None = Field(description="Your customer number at the shop, when you signed in there")
    name: str | None
    email: str | None
    phone: str | None
    first_contact_at: datetime


class ChatMessage(BaseModel):
    sent_at: datetime
    sender: str = Field(description="Who wrote it: you, the assistant, a named member of staff, or the shop's system")
    text: str


class ConversationSummary(BaseModel):
    written_at: datetime
    covers_from: datetime | None = Field(description="When the first message this summary stands in for was sent")
    covers_until: datetime | None = Field(description="When the last message this summary stands in for was sent")
    text: str


class YourRating(BaseModel):
    score: int = Field(description="How you rated the conversation, from 1 to 5")
    comment: str | None
    rated_at: datetime | None


class Conversation(BaseModel):
    reference: str
    title: str
    started_at: datetime
    last_activity_at: datetime
    outcome: str = Field(description="Where the conversation stands")
    your_rating: YourRating | None = Field(default=None, description="Your answer to 'How did we do?', if you gave one")
    messages: list[ChatMessage]
    summaries: list[ConversationSummary] = Field(
        description="Summaries the assistant wrote of long stretches of the conversation, to keep its notes short"
    )


class MemoryChange(BaseModel):
    at: str | None
    change: str = Field(description="remembered, changed or deleted")
    before: str | None
    after: str | None


class Memory(BaseModel):
    remembered: str = Field(description="What the desk remembers")
    kind: str
    status: str = Field(description="current, replaced by a newer version, or expired")
    due_date: date | None
    made_by: str | None = Field(description="Who made the promise or decision, when known")
    from_conversation: str | None = Field(description="The reference of the conversation it comes from")
    confirmed_by_a_person: bool
    remembered_at: str | None
    last_changed_at: str | None
    replaced_by: str | None = Field(description="What replaced it, when it was replaced")
    replaced_at: str | None
    why_replaced: str | None
    why_it_changed: str | None = Field(description="Why this version changed an earlier promise or decision")
    history: list[MemoryChange]


class PendingConclusion(BaseModel):
    concluded: str
    kind: str
    concluded_at: datetime
    from_conversation: str | None
    due_date: date | None


class OrderLine(BaseModel):
    product: str
    quantity: int
    unit_price: str


class ShipmentScan(BaseModel):
    at: str | None
    status: str | None
    location: str | None
    description: str | None


class Shipment(BaseModel):
    carrier: str
    tracking_number: str
    status: str
    expected_delivery: date | None
    scans: list[ShipmentScan]


class Refund(BaseModel):
    requested_at: datetime
    amount: str
    reason: str
    status: str


class ShippingAddress(BaseModel):
    name: str
    line1: str
    line2: str | None
    city: str
    region: str | None
    postal_code: str
    country: str


class Order(BaseModel):
    order_number: str
    placed_at: datetime
    status: str
    total: str
    shipping_address: ShippingAddress
    items: list[OrderLine]
    shipments: list[Shipment]
    refunds: list[Refund]


class AccountAction(BaseModel):
    at: datetime
    action: str
    by: str
    details: dict[str, Any]


class StaffNote(BaseModel):
    conversation: str
    written_at: datetime
    written_by: str
    text: str


class StaffNotes(BaseModel):
    about: str = ABOUT_STAFF_NOTES
    notes: list[StaffNote]
    handover_summaries: list[StaffNote]


class CustomerExport(BaseModel):
    """Everything memdesk holds about one customer, in words the customer reads (``app.privacy.document``)."""

    title: str = EXPORT_TITLE
    about: str = ABOUT_THE_EXPORT
    generated_at: datetime
    your_details: YourDetails
    conversations: list[Conversation]
    memories: list[Memory]
    conclusions_not_yet_remembered: list[PendingConclusion]
    orders: list[Order]
    actions_on_your_account: list[AccountAction]
    staff_notes: StaffNotes
