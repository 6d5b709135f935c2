"""The gateway inside a ``Deadline``, over real HTTP: each attempt ends by it, and no retry starts after it."""

from __future__ import annotations

import functools

import anyio
import pytest

from app.llm import Deadline, LLMDeadlineError, LLMGateway, LLMStatusError, within
from tests.support.scripted_llm import ScriptedLLMServer, ScriptedReply
from tests.support.settings import SUMMARY_MODEL, GatewayFactory

pytestmark = pytest.mark.anyio

MESSAGES = [{"role": "user", "content": "Where is my order #W2378156?"}]
SETTING = "MEMDESK_TEST_DEADLINE_S"
# Far longer than any deadline below: a call that waited for it would hang the test past its own timeouts.
SLOW_MODEL_S = 60.0


async def test_a_slow_model_is_cut_off_at_the_deadline_not_at_the_gateway_timeout(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    gateway = make_gateway(timeout_s=SLOW_MODEL_S, max_retries=2)
    scripted_server.set_rule(lambda request: ScriptedReply(text="late", delay_s=SLOW_MODEL_S))
    deadline = Deadline.after(0.5, setting=SETTING)
    with anyio.fail_after(SLOW_MODEL_S / 2), within(deadline), pytest.raises(LLMDeadlineError) as raised:
        await gateway.chat(MESSAGES, stream=True)
    assert SETTING in str(raised.value) and not raised.value.retryable
    assert len(scripted_server.chat_requests) == 1, "no retry starts after the deadline"
    await gateway.aclose()


async def test_a_busy_model_is_retried_after_its_retry_after_within_the_deadline(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    gateway = make_gateway(max_retries=2)
    scripted_server.enqueue(ScriptedReply.http_error(503, retry_after_s=0.2), "Here it is.")
    with within(Deadline.after(10, setting=SETTING)):
        response = await gateway.chat(MESSAGES, stream=True)
    assert response.content == "Here it is." and len(scripted_server.chat_requests) == 2
    await gateway.aclose()


async def test_a_retry_whose_wait_would_pass_the_deadline_is_not_made(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    gateway = make_gateway(max_retries=2)
    scripted_server.enqueue(ScriptedReply.http_error(429, retry_after_s=20), "too late")
    with within(Deadline.after(1, setting=SETTING)), pytest.raises(LLMStatusError) as raised:
        await gateway.chat(MESSAGES)
    assert raised.value.status_code == 429 and raised.value.retry_after_s == 20
    assert len(scripted_server.chat_requests) == 1
    await gateway.aclose()


async def test_no_call_starts_once_the_deadline_has_passed(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    gateway = make_gateway()
    deadline = Deadline.after(0.01, setting=SETTING)
    await anyio.sleep(0.05)
    with within(deadline), pytest.raises(LLMDeadlineError):
        await gateway.chat(MESSAGES)
    assert scripted_server.chat_requests == []
    await gateway.aclose()


def _complete(gateway: LLMGateway) -> str:
    return gateway.complete(list(MESSAGES), model=SUMMARY_MODEL, max_tokens=50).text


async def test_a_summary_call_on_a_worker_thread_keeps_the_callers_deadline(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    gateway = make_gateway(timeout_s=SLOW_MODEL_S, max_retries=2)
    scripted_server.set_rule(lambda request: ScriptedReply(text="late", delay_s=SLOW_MODEL_S))
    deadline = Deadline.after(0.5, setting=SETTING)
    with anyio.fail_after(SLOW_MODEL_S / 2), within(deadline), pytest.raises(LLMDeadlineError):
        await anyio.to_thread.run_sync(functools.partial(_complete, gateway))
    assert len(scripted_server.chat_requests) == 1


def test_a_summary_call_retries_a_busy_model_within_the_deadline(
    make_gateway: GatewayFactory, scripted_server: ScriptedLLMServer
) -> None:
    gateway = make_gateway(max_retries=1)
    scripted_server.enqueue(ScriptedReply.http_error(503, retry_after_s=0.1), "## Customer Goal\n- A refund.")
    with within(Deadline.after(10, setting=SETTING)):
        assert _complete(gateway).startswith("## Customer Goal")
    assert len(scripted_server.chat_requests) == 2
