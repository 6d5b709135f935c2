"""The long-lived objects of one running app, built in the lifespan and reached through ``app.deps``."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import Engine

from app.agent import AgentService
from app.events import EventBroker
from app.identity import VisitorTokens
from app.llm import LLMGateway
from app.memory_service import MemoryService
from app.ratelimit import RateLimiter
from app.settings import Settings
from app.tools import ToolRegistry


@dataclass
class Services:
    settings: Settings
    db: Engine
    gateway: LLMGateway
    tools: ToolRegistry
    broker: EventBroker
    agent: AgentService
    visitor_tokens: VisitorTokens
    message_limiter: RateLimiter
    memory: MemoryService | None = None
