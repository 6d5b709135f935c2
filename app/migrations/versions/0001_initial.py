"""Initial schema: support desk, context lineage, conclusion outbox, console, demo shop.

Revision ID: 0001_initial
Revises:
Create Date: 2026-11-29

Enums are VARCHAR(32) holding the enum's values (``app.models.base.enum_type``); timestamps are
``TIMESTAMP WITH TIME ZONE`` holding UTC. Constraint names follow ``app.models.base.NAMING_CONVENTION``.
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001_initial"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ENUM = sa.String(length=32)


def _timestamp(name: str, *, nullable: bool = False) -> sa.Column[object]:
    return sa.Column(name, sa.DateTime(timezone=True), nullable=nullable)


def _id() -> sa.Column[object]:
    return sa.Column("id", sa.Integer(), nullable=False)


def upgrade() -> None:
    op.create_table(
        "agents",
        _id(),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("role", ENUM, nullable=False),
        sa.Column("active", sa.Boolean(), nullable=False),
        sa.Column("password_hash", sa.String(length=255), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agents")),
        sa.UniqueConstraint("email", name=op.f("uq_agents_email")),
    )
    op.create_table(
        "audit_events",
        _id(),
        sa.Column("actor", sa.String(length=64), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=64), nullable=False),
        sa.Column("target_id", sa.String(length=64), nullable=False),
        sa.Column("detail", sa.JSON(), nullable=False),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_events")),
    )
    op.create_index(op.f("ix_audit_events_action"), "audit_events", ["action"])
    op.create_index(op.f("ix_audit_events_created_at"), "audit_events", ["created_at"])

    op.create_table(
        "customers",
        _id(),
        sa.Column("external_id", sa.String(length=128), nullable=True),
        sa.Column("name", sa.String(length=200), nullable=True),
        sa.Column("email", sa.String(length=320), nullable=True),
        sa.Column("phone", sa.String(length=40), nullable=True),
        _timestamp("created_at"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_customers")),
        sa.UniqueConstraint("external_id", name=op.f("uq_customers_external_id")),
    )
    op.create_index(op.f("ix_customers_email"), "customers", ["email"])

    op.create_table(
        "conversations",
        _id(),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("status", ENUM, nullable=False),
        sa.Column("assigned_agent_id", sa.Integer(), nullable=True),
        sa.Column("title", sa.String(length=200), nullable=False),
        _timestamp("created_at"),
        _timestamp("updated_at"),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_conversations_customer_id_customers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["assigned_agent_id"],
            ["agents.id"],
            name=op.f("fk_conversations_assigned_agent_id_agents"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conversations")),
    )
    op.create_index(op.f("ix_conversations_customer_id"), "conversations", ["customer_id"])
    op.create_index(op.f("ix_conversations_status"), "conversations", ["status"])
    op.create_index(op.f("ix_conversations_assigned_agent_id"), "conversations", ["assigned_agent_id"])

    op.create_table(
        "messages",
        _id(),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("role", ENUM, nullable=False),
        sa.Column("content", sa.Text(), nullable=True),
        sa.Column("tool_calls", sa.JSON(), nullable=True),
        sa.Column("tool_call_id", sa.String(length=128), nullable=True),
        sa.Column("author", ENUM, nullable=False),
        sa.Column("agent_id", sa.Integer(), nullable=True),
        sa.Column("private", sa.Boolean(), nullable=False),
        _timestamp("created_at"),
        sa.Column("prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("completion_tokens", sa.Integer(), nullable=True),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_messages_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["agent_id"], ["agents.id"], name=op.f("fk_messages_agent_id_agents"), ondelete="SET NULL"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_messages")),
    )
    op.create_index("ix_messages_conversation_id_id", "messages", ["conversation_id", "id"])

    op.create_table(
        "context_segments",
        _id(),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("reason", ENUM, nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("first_message_id", sa.Integer(), nullable=True),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_context_segments_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["context_segments.id"],
            name=op.f("fk_context_segments_parent_id_context_segments"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["first_message_id"],
            ["messages.id"],
            name=op.f("fk_context_segments_first_message_id_messages"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_context_segments")),
        sa.UniqueConstraint("conversation_id", "number", name=op.f("uq_context_segments_conversation_id_number")),
    )
    op.create_index(op.f("ix_context_segments_conversation_id"), "context_segments", ["conversation_id"])

    op.create_table(
        "compactions",
        _id(),
        sa.Column("conversation_id", sa.Integer(), nullable=False),
        sa.Column("segment_id", sa.Integer(), nullable=False),
        sa.Column("first_message_id", sa.Integer(), nullable=False),
        sa.Column("last_message_id", sa.Integer(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=False),
        sa.Column("summary_model", sa.String(length=200), nullable=True),
        sa.Column("main_model", sa.String(length=200), nullable=False),
        sa.Column("tokens_before", sa.Integer(), nullable=False),
        sa.Column("tokens_after", sa.Integer(), nullable=False),
        sa.Column("summary_prompt_tokens", sa.Integer(), nullable=True),
        sa.Column("summary_completion_tokens", sa.Integer(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("fallback_used", sa.Boolean(), nullable=False),
        sa.Column("trace_event", sa.JSON(), nullable=False),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_compactions_conversation_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["segment_id"],
            ["context_segments.id"],
            name=op.f("fk_compactions_segment_id_context_segments"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["first_message_id"],
            ["messages.id"],
            name=op.f("fk_compactions_first_message_id_messages"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["last_message_id"],
            ["messages.id"],
            name=op.f("fk_compactions_last_message_id_messages"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_compactions")),
    )
    op.create_index(op.f("ix_compactions_conversation_id"), "compactions", ["conversation_id"])
    op.create_index(op.f("ix_compactions_segment_id"), "compactions", ["segment_id"])

    op.create_table(
        "conclusions",
        _id(),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("conversation_id", sa.Integer(), nullable=True),
        sa.Column("kind", ENUM, nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("due_date", sa.Date(), nullable=True),
        sa.Column("identifiers", sa.JSON(), nullable=False),
        sa.Column("source", ENUM, nullable=False),
        sa.Column("source_message_first_id", sa.Integer(), nullable=True),
        sa.Column("source_message_last_id", sa.Integer(), nullable=True),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("status", ENUM, nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("memory_id", sa.String(length=128), nullable=True),
        _timestamp("created_at"),
        _timestamp("delivered_at", nullable=True),
        sa.ForeignKeyConstraint(
            ["customer_id"],
            ["customers.id"],
            name=op.f("fk_conclusions_customer_id_customers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["conversation_id"],
            ["conversations.id"],
            name=op.f("fk_conclusions_conversation_id_conversations"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["source_message_first_id"],
            ["messages.id"],
            name=op.f("fk_conclusions_source_message_first_id_messages"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["source_message_last_id"],
            ["messages.id"],
            name=op.f("fk_conclusions_source_message_last_id_messages"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_conclusions")),
        sa.UniqueConstraint("customer_id", "content_hash", name=op.f("uq_conclusions_customer_id_content_hash")),
    )
    op.create_index(op.f("ix_conclusions_customer_id"), "conclusions", ["customer_id"])
    op.create_index(op.f("ix_conclusions_conversation_id"), "conclusions", ["conversation_id"])
    op.create_index(op.f("ix_conclusions_status"), "conclusions", ["status"])

    _create_shop_tables()


def _create_shop_tables() -> None:
    op.create_table(
        "products",
        _id(),
        sa.Column("sku", sa.String(length=32), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("price_cents", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_products")),
        sa.UniqueConstraint("sku", name=op.f("uq_products_sku")),
    )
    op.create_table(
        "orders",
        _id(),
        sa.Column("number", sa.String(length=16), nullable=False),
        sa.Column("customer_id", sa.Integer(), nullable=False),
        sa.Column("status", ENUM, nullable=False),
        _timestamp("placed_at"),
        sa.Column("total_cents", sa.Integer(), nullable=False),
        sa.Column("currency", sa.String(length=3), nullable=False),
        sa.Column("shipping_name", sa.String(length=200), nullable=False),
        sa.Column("shipping_line1", sa.String(length=200), nullable=False),
        sa.Column("shipping_line2", sa.String(length=200), nullable=True),
        sa.Column("shipping_city", sa.String(length=200), nullable=False),
        sa.Column("shipping_region", sa.String(length=200), nullable=True),
        sa.Column("shipping_postal_code", sa.String(length=16), nullable=False),
        sa.Column("shipping_country", sa.String(length=2), nullable=False),
        sa.ForeignKeyConstraint(["customer_id"], ["customers.id"], name=op.f("fk_orders_customer_id_customers")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_orders")),
        sa.UniqueConstraint("number", name=op.f("uq_orders_number")),
    )
    op.create_index(op.f("ix_orders_customer_id"), "orders", ["customer_id"])

    op.create_table(
        "order_items",
        _id(),
        sa.Column("order_id", sa.Integer(), nullable=False),
        sa.Column("product_id", sa.Integer(), nullable=False),
        sa.Column("quantity", sa.Integer(), nullable=False),
        sa.Column("unit_price_cents", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"], ["orders.id"], name=op.f("fk_order_items_order_id_orders"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(["product_id"], ["products.id"], name=op.f("fk_order_items_product_id_products")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_order_items")),
    )
    op.create_index(op.f("ix_order_items_order_id"), "order_items", ["order_id"])

    op.create_table(
        "shipments",
        _id(),
        sa.Column("order_id", sa.Integer(), nullable=False),
        sa.Column("carrier", sa.String(length=32), nullable=False),
        sa.Column("tracking_number", sa.String(length=64), nullable=False),
        sa.Column("status", ENUM, nullable=False),
        sa.Column("events", sa.JSON(), nullable=False),
        sa.Column("eta", sa.Date(), nullable=True),
        sa.ForeignKeyConstraint(
            ["order_id"], ["orders.id"], name=op.f("fk_shipments_order_id_orders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_shipments")),
        sa.UniqueConstraint("tracking_number", name=op.f("uq_shipments_tracking_number")),
    )
    op.create_index(op.f("ix_shipments_order_id"), "shipments", ["order_id"])

    op.create_table(
        "refunds",
        _id(),
        sa.Column("order_id", sa.Integer(), nullable=False),
        sa.Column("amount_cents", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status", ENUM, nullable=False),
        _timestamp("created_at"),
        sa.ForeignKeyConstraint(
            ["order_id"], ["orders.id"], name=op.f("fk_refunds_order_id_orders"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refunds")),
    )
    op.create_index(op.f("ix_refunds_order_id"), "refunds", ["order_id"])

    op.create_table(
        "help_articles",
        _id(),
        sa.Column("slug", sa.String(length=120), nullable=False),
        sa.Column("title", sa.String(length=200), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("tags", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_help_articles")),
        sa.UniqueConstraint("slug", name=op.f("uq_help_articles_slug")),
    )


def downgrade() -> None:
    # Children before parents, so foreign keys never dangle mid-way.
    for table in (
        "help_articles",
        "refunds",
        "shipments",
        "order_items",
        "orders",
        "products",
        "conclusions",
        "compactions",
        "context_segments",
        "messages",
        "conversations",
        "customers",
        "audit_events",
        "agents",
    ):
        op.drop_table(table)
