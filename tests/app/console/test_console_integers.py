"""The console's integers (an assignee, a page, a message cursor, the sign-in page's flag) go through the bounded
parser: anything else is a 400 page saying what to send, never a 500 and never a change."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.customer_memory.ids import memory_customer_id
from app.models import Conversation, StaffRole
from app.web.input import MAX_DATABASE_INT
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from tests.support.console_support import StaffClient, console_app, signed_in
from tests.support.live_app import LiveApp
from tests.support.scripted_llm import ScriptedLLMServer

REFUSED = [str(MAX_DATABASE_INT + 1), str(2**64), "-1", "１２", "²", "1.0", " 2", "9" * 5_000]


@pytest.fixture(scope="module")
def console(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveApp]:
    with ScriptedLLMServer() as llm:
        yield from console_app(tmp_path_factory.mktemp("console-integers"), llm)


@pytest.fixture(scope="module")
def agent(console: LiveApp) -> StaffClient:
    return signed_in(console, StaffRole.AGENT)


def _assignee(live: LiveApp, conversation: str) -> int | None:
    with live.db() as session:
        found = session.get(Conversation, live.conversation_key(conversation))
        assert found is not None
        return found.assigned_staff_id


@pytest.mark.parametrize("value", REFUSED)
def test_an_assignee_id_that_is_not_a_storable_number_is_refused_with_400(
    console: LiveApp, agent: StaffClient, value: str
) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    response = agent.post(f"/console/conversations/{conversation}/assign", {"assigned_staff_id": value})
    assert response.status_code == 400, response.text
    assert "Assigned staff id:" in response.text
    assert "Give a whole number" in response.text or "The number is too large" in response.text
    assert _assignee(console, conversation) is None


def test_the_largest_storable_assignee_id_is_an_unknown_staff_member_and_empty_is_nobody(
    console: LiveApp, agent: StaffClient
) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    base = f"/console/conversations/{conversation}/assign"
    unknown = agent.post(base, {"assigned_staff_id": str(MAX_DATABASE_INT)})
    assert unknown.status_code == 400 and "Choose an active staff member." in unknown.text
    assert agent.post(base, {"assigned_staff_id": "1"}).status_code == 303
    assert _assignee(console, conversation) == 1
    assert agent.post(base, {"assigned_staff_id": ""}).status_code == 303
    assert _assignee(console, conversation) is None


@pytest.mark.parametrize("value", REFUSED)
def test_page_cursor_and_flag_queries_that_are_not_storable_numbers_are_400_pages(
    console: LiveApp, agent: StaffClient, value: str
) -> None:
    widget, _ = console.visitor()
    conversation = console.conversation(widget)
    for path, name in [
        ("/console", "page"),
        ("/console/inbox", "page"),
        (f"/console/conversations/{conversation}", "before"),
        (f"/console/conversations/{conversation}/transcript", "before"),
        ("/console/login", "expired"),
    ]:
        response = agent.get(path, params={name: value})
        assert response.status_code == 400, (path, response.text)
        assert response.headers["content-type"].startswith("text/html")
        assert f"{name.capitalize()}:" in response.text


def test_an_htmx_request_with_a_bad_number_gets_the_sentence_as_a_flash(console: LiveApp, agent: StaffClient) -> None:
    response = agent.get("/console/inbox", params={"page": "１"}, headers={"HX-Request": "true"})
    assert response.status_code == 400
    assert "Page: Give a whole number written with the digits 0-9 only" in response.text
    assert "<html" not in response.text.lower()


def _promise(customer: str, number: int, said_by: str) -> Conclusion:
    text = f"Refund of ${number}.50 for #W12345{number}."
    return Conclusion(customer, ConclusionKind.PROMISE, text, ConclusionSource.COMPACTION, said_by=said_by)


def test_the_customer_panel_names_a_promise_by_an_actor_whose_number_is_not_a_staff_id_as_it_is(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A summary model's notes say who made a promise (``by: staff:…``); a number there that is not a storable id
    names nobody, instead of failing the panel (``int("²")`` and a 2^64 id in the staff query both answered 500)."""
    odd_actors = ("staff:²", f"staff:{2**64}", "agent:１２")
    with ScriptedLLMServer() as llm:
        options = {"memory_enabled": True, "memory_embedder": "hashing"}
        for live in console_app(tmp_path_factory.mktemp("odd-actors"), llm, **options):
            supervisor = signed_in(live, StaffRole.SUPERVISOR, name="Kim Lee")
            _, customer = live.visitor()
            key = live.customer(customer).id
            assert key is not None and live.services.memory is not None
            customer_key = memory_customer_id(key)
            promises = [_promise(customer_key, number, actor) for number, actor in enumerate((*odd_actors, "staff:1"))]
            live.services.memory.store.remember(promises)
            panel = supervisor.get(f"/console/customers/{customer}/panel")
            assert panel.status_code == 200, panel.text
            for actor in odd_actors:
                assert f"promised by {actor}" in panel.text
            assert "promised by Kim Lee" in panel.text
