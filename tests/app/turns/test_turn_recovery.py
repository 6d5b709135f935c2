"""Turn recovery: a customer message left without a reply (by a crash, or by a turn cancelled at shutdown) is
answered exactly once after the restart, and recovery never answers a conversation twice, even while it races
normal turns.

Every scripted reply quotes the customer message it answers (the last one in the context the LLM received), so a
duplicate reply shows as the same quote twice. Whether a message is answered is computed here from the transcript,
independently of the rule in ``app.turns.recovery``.
"""

from __future__ import annotations

import asyncio
import functools
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import Engine
from sqlmodel import Session, col, select

from app.db import create_db_engine, upgrade
from app.models import Conversation, ConversationStatus, Customer, Message, MessageAuthor, MessageRole
from app.settings import Settings
from app.turns.context import start_first_segment
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import RecordedRequest, ScriptedLLMServer, ScriptedReply
from tests.support.serve_process import ServeProcess, start_serve
from tests.support.settings import CHAT_MODEL, TEST_API_KEY, app_settings

ANSWER_PREFIX = "Answer to: "
LLM_DELAY_S = 0.3
SHUTDOWN_LIMIT_S = 5.0
CONVERSATIONS = 10
MESSAGES_PER_CONVERSATION = 6
MESSAGE_GAP_S = 0.1


def quoting_reply(request: RecordedRequest, *, delay_s: float = 0.0) -> ScriptedReply:
    return ScriptedReply(text=ANSWER_PREFIX + request.last_user_text, delay_s=delay_s)


def is_reply(message: Message) -> bool:
    return (
        message.role == MessageRole.ASSISTANT
        and not message.private
        and not message.tool_calls
        and bool(message.content)
    )


def unanswered(transcript: list[Message]) -> list[str]:
    """Texts of the customer messages with no reply anywhere after them."""
    last_reply = max((index for index, message in enumerate(transcript) if is_reply(message)), default=-1)
    return [
        message.content or ""
        for index, message in enumerate(transcript)
        if message.author == MessageAuthor.CUSTOMER and index > last_reply
    ]


def transcripts(db: Engine) -> dict[int, list[Message]]:
    with Session(db, expire_on_commit=False) as session:
        rows = session.exec(select(Message).order_by(col(Message.id))).all()
        session.commit()
    found: dict[int, list[Message]] = {}
    for message in rows:
        found.setdefault(message.conversation_id, []).append(message)
    return found


def answered_quotes(transcript: list[Message]) -> list[str]:
    return [
        (message.content or "").removeprefix(ANSWER_PREFIX)
        for message in transcript
        if is_reply(message) and (message.content or "").startswith(ANSWER_PREFIX)
    ]


def wait_until(probe: Callable[[], bool], *, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if probe():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")


# --- which conversations recovery answers ------------------------------------------------------------------------


def _seed(db: Engine, case: str, status: ConversationStatus, messages: list[dict[str, Any]]) -> int:
    with Session(db, expire_on_commit=False) as session:
        customer = Customer(name=f"Customer {case}")
        session.add(customer)
        session.flush()
        assert customer.id is not None
        conversation = Conversation(customer_id=customer.id, title=case, status=status)
        session.add(conversation)
        session.flush()
        assert conversation.id is not None
        start_first_segment(session, conversation)
        for fields in messages:
            session.add(Message(conversation_id=conversation.id, **fields))
        session.commit()
        return conversation.id


def _customer(text: str) -> dict[str, Any]:
    return {"role": MessageRole.USER, "author": MessageAuthor.CUSTOMER, "content": text}


def _bot(text: str) -> dict[str, Any]:
    return {"role": MessageRole.ASSISTANT, "author": MessageAuthor.BOT, "content": text}


TOOL_CALL = {"id": "call_1", "type": "function", "function": {"name": "list_orders", "arguments": "{}"}}
RECOVERY_CASES: dict[str, tuple[ConversationStatus, list[dict[str, Any]], bool]] = {
    # case: (status, transcript before the restart, whether recovery must answer it)
    "waiting": (ConversationStatus.BOT, [_customer("waiting: where is my parcel?")], True),
    "needs-human": (ConversationStatus.NEEDS_HUMAN, [_customer("needs-human: hello?")], True),
    "human": (ConversationStatus.HUMAN, [_customer("human: a person has me")], False),
    "closed": (ConversationStatus.CLOSED, [_customer("closed: too late")], False),
    "answered": (ConversationStatus.BOT, [_customer("answered: hi"), _bot("Hello!")], False),
    "later-message": (
        ConversationStatus.BOT,
        [_customer("later-message: hi"), _bot("Hello!"), _customer("later-message: and my refund?")],
        True,
    ),
    "tool-calls-only": (
        ConversationStatus.BOT,
        [
            _customer("tool-calls-only: my orders?"),
            {"role": MessageRole.ASSISTANT, "author": MessageAuthor.BOT, "content": None, "tool_calls": [TOOL_CALL]},
            {"role": MessageRole.TOOL, "author": MessageAuthor.SYSTEM, "content": "[]", "tool_call_id": "call_1"},
        ],
        True,
    ),
    "private-note-only": (
        ConversationStatus.BOT,
        [
            _customer("private-note-only: anyone?"),
            {"role": MessageRole.ASSISTANT, "author": MessageAuthor.STAFF, "content": "Note", "private": True},
        ],
        True,
    ),
    "agent-replied": (
        ConversationStatus.BOT,
        [
            _customer("agent-replied: anyone?"),
            {"role": MessageRole.ASSISTANT, "author": MessageAuthor.STAFF, "content": "Sam here, I'm on it."},
        ],
        False,
    ),
    "no-messages": (ConversationStatus.BOT, [], False),
}


def test_at_start_every_conversation_waiting_for_the_bot_is_answered_once_and_no_other(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    settings = app_settings(tmp_path, scripted_server, turn_recovery_interval_s=3600)
    db = create_db_engine(settings.resolved_database_url)
    upgrade(db)
    ids = {case: _seed(db, case, status, messages) for case, (status, messages, _) in RECOVERY_CASES.items()}
    before = transcripts(db)
    scripted_server.set_rule(quoting_reply)

    expected = {case for case, (_, _, answered) in RECOVERY_CASES.items() if answered}
    for live in run_live_app(settings):
        wait_until(
            lambda: all(not unanswered(transcripts(db)[ids[case]]) for case in expected),
            timeout_s=20,
            what="the waiting conversations to be answered",
        )
        live.wait_for(lambda live=live: live.services.turns.idle, what="no turn running")

    after = transcripts(db)
    for case, conversation_id in ids.items():
        new_messages = after.get(conversation_id, [])[len(before.get(conversation_id, [])) :]
        if case in expected:
            latest_customer_text = [m["content"] for m in RECOVERY_CASES[case][1] if m["role"] == MessageRole.USER][-1]
            assert [m.content for m in new_messages] == [ANSWER_PREFIX + latest_customer_text], case
        else:
            assert new_messages == [], case
    asked = Counter(request.last_user_text.split(":")[0] for request in scripted_server.chat_requests)
    assert asked == Counter(expected)
    db.dispose()


# --- recovery never answers twice ----------------------------------------------------------------------------------


def _capture_loop(live: LiveApp) -> asyncio.AbstractEventLoop:
    async def capture() -> None:
        live.app.state.test_loop = asyncio.get_running_loop()

    live.app.add_api_route("/__test__/loop", capture, methods=["POST"], include_in_schema=False)
    assert live.client().post("/__test__/loop").status_code == 200
    loop: asyncio.AbstractEventLoop = live.app.state.test_loop
    return loop


def test_a_recovered_turn_for_a_conversation_answered_in_the_meantime_does_nothing(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(quoting_reply)
    for live in run_live_app(app_settings(tmp_path, scripted_server, turn_recovery_interval_s=3600)):
        _schedule_a_recovered_turn_for_an_answered_conversation(live, scripted_server)


def _schedule_a_recovered_turn_for_an_answered_conversation(live: LiveApp, scripted_server: ScriptedLLMServer) -> None:
    answered = _seed(live.services.db, "answered", ConversationStatus.BOT, [_customer("answered: hi"), _bot("Hi!")])
    turns = live.services.turns

    # What a recovery pass does when its snapshot was taken before a normal turn answered.
    async def schedule_recovered_turn() -> bool:
        turns.schedule_turn(answered, recovering=True)
        return turns.is_handling(answered)

    loop = _capture_loop(live)
    assert asyncio.run_coroutine_threadsafe(schedule_recovered_turn(), loop).result(timeout=5)
    live.wait_for(lambda: not turns.is_handling(answered), what="the recovered turn to end")

    assert scripted_server.chat_requests == []
    assert [m.content for m in live.transcript(answered)] == ["answered: hi", "Hi!"]


def test_periodic_recovery_racing_normal_turns_never_answers_a_message_twice(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(functools.partial(quoting_reply, delay_s=0.05))
    settings = app_settings(tmp_path, scripted_server, turn_recovery_interval_s=0.01)
    for live in run_live_app(settings):
        visitors = [live.visitor()[0] for _ in range(4)]
        conversations = [(client, live.conversation(client)) for client in visitors]

        def chat(client: httpx.Client, conversation_id: int, live: LiveApp = live) -> None:
            for turn in range(5):
                url = f"/api/widget/conversations/{conversation_id}/messages"
                assert client.post(url, json={"content": f"c{conversation_id} t{turn}"}).status_code == 202
                live.wait_for_reply(conversation_id, count=turn + 1, timeout=20)

        threads = [threading.Thread(target=chat, args=pair) for pair in conversations]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        time.sleep(0.3)  # dozens more recovery passes over answered conversations
        live.wait_for(lambda live=live: live.services.turns.idle, what="no turn running")

        for _, conversation_id in conversations:
            transcript = live.transcript(conversation_id)
            quotes = answered_quotes(transcript)
            assert sorted(quotes) == sorted(f"c{conversation_id} t{turn}" for turn in range(5)), quotes
            assert unanswered(transcript) == []
        assert len(scripted_server.chat_requests) == 4 * 5


# --- shutdown ------------------------------------------------------------------------------------------------------


def test_shutdown_does_not_wait_for_a_hung_turn_and_the_next_start_answers_it(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    release = threading.Event()

    def hang_then_answer(request: RecordedRequest) -> ScriptedReply:
        release.wait(30)  # the LLM hangs until the test lets it go
        return quoting_reply(request)

    scripted_server.set_rule(hang_then_answer)
    settings = app_settings(tmp_path, scripted_server, llm_timeout_s=60, turn_recovery_interval_s=3600)
    running = run_live_app(settings)
    live = next(running)
    client, _ = live.visitor()
    conversation_id = live.conversation(client)
    url = f"/api/widget/conversations/{conversation_id}/messages"
    assert client.post(url, json={"content": "are you there?"}).status_code == 202
    live.wait_for(lambda: scripted_server.chat_requests, what="the turn to reach the LLM")

    started = time.monotonic()
    running.close()  # uvicorn's shutdown, then the lifespan's
    stop_s = time.monotonic() - started
    assert stop_s < SHUTDOWN_LIMIT_S, stop_s
    release.set()

    scripted_server.set_rule(quoting_reply)
    for restarted in run_live_app(settings):
        replies = restarted.wait_for_reply(conversation_id)
        assert [m.content for m in replies] == [ANSWER_PREFIX + "are you there?"]


# --- kill -9 during a burst ----------------------------------------------------------------------------------------


def _serve_settings(server: ScriptedLLMServer, **extra: str) -> dict[str, str]:
    return {
        "MEMDESK_LLM_BASE_URL": server.base_url,
        "MEMDESK_LLM_API_KEY": TEST_API_KEY,
        "MEMDESK_CHAT_MODEL": CHAT_MODEL,
        "MEMDESK_LLM_MAX_RETRIES": "0",
        "MEMDESK_MEMORY_ENABLED": "false",
        "MEMDESK_REPLY_DEBOUNCE_S": "0",
        **extra,
    }


def _burst(served: ServeProcess, accepted: list[str], stop: threading.Event) -> list[threading.Thread]:
    """One thread per conversation, each sending a message every ``MESSAGE_GAP_S`` until the server is gone."""

    def converse(number: int) -> None:
        with httpx.Client(base_url=served.url, timeout=5.0) as client:
            token = client.post("/api/widget/sessions", json={}).json()["token"]
            headers = {"Authorization": f"Bearer {token}"}
            conversation = client.post("/api/widget/conversations", json={}, headers=headers).json()["id"]
            for turn in range(MESSAGES_PER_CONVERSATION):
                text = f"conversation {number} message {turn}"
                try:
                    response = client.post(
                        f"/api/widget/conversations/{conversation}/messages",
                        json={"content": text},
                        headers=headers,
                    )
                except httpx.HTTPError:
                    return  # the server was killed
                if response.status_code == 202:
                    accepted.append(text)
                if stop.wait(MESSAGE_GAP_S):
                    return

    threads = [threading.Thread(target=converse, args=(number,)) for number in range(CONVERSATIONS)]
    for thread in threads:
        thread.start()
    return threads


def test_after_kill_9_during_a_burst_every_accepted_message_is_answered_exactly_once(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    scripted_server.set_rule(functools.partial(quoting_reply, delay_s=LLM_DELAY_S))
    settings = _serve_settings(scripted_server, MEMDESK_TURN_RECOVERY_INTERVAL_S="0.2")
    served = start_serve(tmp_path, settings)
    accepted: list[str] = []
    stop = threading.Event()
    try:
        threads = _burst(served, accepted, stop)
        wait_until(lambda: len(accepted) >= CONVERSATIONS * 2, timeout_s=30, what="the burst to get going")
        served.kill_hard()
    finally:
        stop.set()
        served.ensure_stopped()
    for thread in threads:
        thread.join(timeout=10)

    db = create_db_engine(Settings(data_dir=tmp_path / "data").resolved_database_url)
    before = transcripts(db)
    stored = {m.content for messages in before.values() for m in messages if m.author == MessageAuthor.CUSTOMER}
    assert set(accepted) <= stored  # nothing accepted was lost
    waiting = {cid: unanswered(messages) for cid, messages in before.items() if unanswered(messages)}
    assert len(waiting) >= CONVERSATIONS // 2, f"the kill left too few turns to recover: {waiting}"
    requests_before = len(scripted_server.chat_requests)
    print(f"kill -9 after {len(accepted)} accepted messages left {len(waiting)} conversations waiting for a reply")

    restarted = start_serve(tmp_path, settings)
    try:
        wait_until(
            lambda: not any(unanswered(messages) for messages in transcripts(db).values()),
            timeout_s=30,
            what="every customer message to be answered",
        )
        time.sleep(1.0)  # several more recovery passes: none may add a reply
        assert restarted.stop(timeout_s=SHUTDOWN_LIMIT_S) < SHUTDOWN_LIMIT_S
    finally:
        restarted.ensure_stopped()

    after = transcripts(db)
    quote_counts = {cid: Counter(answered_quotes(messages)) for cid, messages in after.items()}
    duplicates = {cid: [q for q, n in counts.items() if n > 1] for cid, counts in quote_counts.items()}
    duplicates = {cid: quotes for cid, quotes in duplicates.items() if quotes}
    assert duplicates == {}, json.dumps(duplicates)
    new_replies = sum(len(answered_quotes(m)) for m in after.values()) - sum(
        len(answered_quotes(m)) for m in before.values()
    )
    assert new_replies == len(waiting)  # one reply per waiting conversation, answering its latest message
    assert len(scripted_server.chat_requests) - requests_before == len(waiting)
    for conversation_id, texts in waiting.items():
        assert answered_quotes(after[conversation_id])[-1] == texts[-1]
    db.dispose()
