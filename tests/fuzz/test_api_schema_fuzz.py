"""Property-based fuzzing of the HTTP API against its own OpenAPI document (schemathesis), on a live server.

Every operation is called with inputs generated from the document (and with inputs that violate it), carrying a valid
visitor token or the admin token. The build fails on any 5xx, any status code or header the document does not
declare, and any response body that does not match its declared schema. The seed is fixed, so a failure reproduces;
``FUZZ_EXAMPLES`` bounds the run to well under a few minutes on a 2-core machine.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, seed, settings
from schemathesis.generation import GenerationMode

from app.main import create_app
from app.settings import Settings
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

FUZZ_SEED = 20261130
FUZZ_EXAMPLES = 60
STREAM_READ_S = 1.0
ADMIN_TOKEN = "admin-token-for-the-fuzz-suite-0123456789"
METRICS_TOKEN = "metrics-token-for-the-fuzz-suite-0123456789"
FUZZ_SECRET_KEY = "fuzz-secret-key-0123456789-abcdefghijklmnop"


@pytest.fixture(scope="module")
def fuzz_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as llm:
        settings = app_settings(
            tmp_path_factory.mktemp("fuzz"),
            llm,
            admin_token=ADMIN_TOKEN,
            metrics_token=METRICS_TOKEN,
            visitor_messages_per_minute=100_000,
        )
        yield from run_live_app(settings)


@pytest.fixture(scope="module")
def visitor(fuzz_server: LiveApp) -> tuple[str, str]:
    """A visitor's token and one of their conversations, which half of the generated calls address."""
    client, _ = fuzz_server.visitor()
    conversation = fuzz_server.conversation(client)
    return client.headers["Authorization"].removeprefix("Bearer "), conversation


def _documented_api() -> dict[str, Any]:
    # create_app builds nothing until its lifespan runs, so the document is known before any server starts.
    document: dict[str, Any] = create_app(Settings(environment="test", secret_key=FUZZ_SECRET_KEY)).openapi()
    return document


schema = schemathesis.openapi.from_dict(_documented_api())
# Unknown query parameters are ignored, as web APIs do (cache busters, tracking); everything else that violates the
# document must be refused.
# Tokens are the test's own (a valid visitor or admin token on every call); requests without one are covered by
# schemathesis' authentication checks.
schema.config.generation.update(allow_extra_parameters=False, with_security_parameters=False)
_choice = random.Random(FUZZ_SEED)


def test_the_server_publishes_the_document_that_is_fuzzed(fuzz_server: LiveApp) -> None:
    assert fuzz_server.client().get("/openapi.json").json() == _documented_api()


@schema.parametrize()
@seed(FUZZ_SEED)
@settings(
    max_examples=FUZZ_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.function_scoped_fixture],
)
def test_every_operation_answers_as_documented_and_never_with_a_server_error(
    case: Any, fuzz_server: LiveApp, visitor: tuple[str, str]
) -> None:
    token, conversation = visitor
    if case.path.startswith("/api/admin"):
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    elif case.path == "/metrics":
        headers = {"Authorization": f"Bearer {METRICS_TOKEN}"}
    else:
        headers = {"Authorization": f"Bearer {token}"}
        positive = case.meta is None or case.meta.generation.mode is GenerationMode.POSITIVE
        if positive and "conversation_id" in (case.path_parameters or {}) and _choice.random() < 0.5:
            case.path_parameters["conversation_id"] = conversation
    # An event stream never ends by itself: read what it sends within a second.
    timeout = STREAM_READ_S if case.path.endswith("/events") else 10
    case.call_and_validate(base_url=fuzz_server.url, headers=headers, timeout=timeout)
