"""The customer's rating of a closed conversation ("How did we do?"), stored on its outcome (``app.outcomes``), and
the customer's own close ("That's all, thanks") that leads to it.

One rating per conversation: 1 to 5 and an optional comment. It can be given once the conversation is closed, and
changed for ``RATING_CHANGE_WINDOW`` after it was first given; after that it stays as it was. With
``MEMDESK_CSAT_ENABLED=false`` nothing is asked and a rating is refused. The widget asks only while the
conversation has none, so it never asks twice.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, HTTPException, status
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from sqlmodel import Session

from app.models import Conversation, ConversationStatus, utc_now
from app.models.outcomes import CSAT_COMMENT_LENGTH, ConversationOutcome
from app.outcomes.customer_close import close_by_customer
from app.outcomes.recording import record_rating
from app.web.deps import BrokerDep, SessionDep, SettingsDep, VisitorDep
from app.web.errors import error_responses
from app.web.input import FreeText, StrictJSONRoute
from app.web.widget_api import ConversationRef, own_conversation

router = APIRouter(
    prefix="/api/widget",
    tags=["widget"],
    route_class=StrictJSONRoute,
    responses=error_responses(status.HTTP_401_UNAUTHORIZED),
)

RATING_CHANGE_WINDOW = timedelta(days=1)


def _json_number(value: object) -> object:
    if isinstance(value, bool | str):
        raise ValueError("The score must be a number from 1 to 5.")
    return value


class RatingIn(BaseModel):
    model_config = ConfigDict(extra="forbid")  # a misspelt field is an error, not a rating without its comment

    # A JSON number, whole (3 and 3.0 alike, as JSON Schema's "integer" allows); never a string or a boolean.
    score: Annotated[int, BeforeValidator(_json_number)] = Field(ge=1, le=5, description="1 (bad) to 5 (great)")
    comment: FreeText | None = Field(default=None, max_length=CSAT_COMMENT_LENGTH)


class RatingOut(BaseModel):
    asked: bool = Field(description="Whether the widget should ask for a rating now")
    score: int | None
    comment: str | None
    changeable_until: datetime | None = Field(description="Until when the rating can still be changed")


def _rating(settings_enabled: bool, conversation: Conversation, outcome: ConversationOutcome | None) -> RatingOut:
    score = outcome.csat_score if outcome else None
    rated_at = outcome.csat_at if outcome else None
    closed = conversation.status == ConversationStatus.CLOSED
    return RatingOut(
        asked=settings_enabled and closed and score is None,
        score=score,
        comment=outcome.csat_comment if outcome else None,
        changeable_until=rated_at + RATING_CHANGE_WINDOW if rated_at else None,
    )


def _outcome(session: Session, conversation: Conversation) -> ConversationOutcome | None:
    return session.get(ConversationOutcome, conversation.id)


@router.get("/conversations/{conversation_ref}/rating", response_model=RatingOut, responses=error_responses(404))
def get_rating(
    conversation_ref: ConversationRef, visitor: VisitorDep, session: SessionDep, settings: SettingsDep
) -> RatingOut:
    conversation = own_conversation(session, visitor, conversation_ref)
    rating = _rating(settings.csat_enabled, conversation, _outcome(session, conversation))
    session.rollback()  # ends the read transaction (see app.web.widget_api)
    return rating


@router.put("/conversations/{conversation_ref}/rating", response_model=RatingOut, responses=error_responses(404, 409))
def put_rating(
    conversation_ref: ConversationRef, body: RatingIn, visitor: VisitorDep, session: SessionDep, settings: SettingsDep
) -> RatingOut:
    conversation = own_conversation(session, visitor, conversation_ref)
    assert conversation.id is not None
    if not settings.csat_enabled:
        session.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, detail="This desk does not ask for ratings.")
    if conversation.status != ConversationStatus.CLOSED:
        session.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, detail="A conversation can be rated once it is closed.")
    outcome = _outcome(session, conversation)
    now = utc_now()
    if outcome and outcome.csat_at and now > outcome.csat_at + RATING_CHANGE_WINDOW:
        session.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, detail="This rating can no longer be changed.")
    comment = body.comment.strip() if body.comment else None
    record_rating(session, conversation.id, body.score, comment or None, at=now)
    session.commit()
    session.expire_all()  # the upsert went around the ORM: read the row as stored
    rating = _rating(settings.csat_enabled, conversation, _outcome(session, conversation))
    session.rollback()
    return rating


class ClosedOut(BaseModel):
    status: ConversationStatus = Field(description="Always closed")
    rating: RatingOut


@router.post("/conversations/{conversation_ref}/close", response_model=ClosedOut, responses=error_responses(404, 409))
def close_conversation(
    conversation_ref: ConversationRef,
    visitor: VisitorDep,
    session: SessionDep,
    settings: SettingsDep,
    broker: BrokerDep,
) -> ClosedOut:
    """The customer ends the chat ("That's all, thanks"); the answer says whether to ask for a rating now."""
    conversation = own_conversation(session, visitor, conversation_ref)
    assert conversation.id is not None
    if conversation.status == ConversationStatus.CLOSED:
        session.rollback()
        raise HTTPException(status.HTTP_409_CONFLICT, detail="This conversation is closed already.")
    if not close_by_customer(session, conversation, visitor.customer_public_id):
        raise HTTPException(status.HTTP_409_CONFLICT, detail="This conversation changed just now; try again.")
    broker.publish(conversation.id, "conversation.status", {"status": "closed"})
    session.expire_all()
    closed = session.get(Conversation, conversation.id)
    assert closed is not None
    rating = _rating(settings.csat_enabled, closed, _outcome(session, closed))
    session.rollback()
    return ClosedOut(status=ConversationStatus.CLOSED, rating=rating)
