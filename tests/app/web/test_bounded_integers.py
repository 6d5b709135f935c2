"""Every integer from a path, query or form goes through one parser: ASCII digits that the database can store.

``int()`` and pydantic's lax integers take more than a client of ours ever sends ("+5", " 7 ", "1_000", "1.0",
full-width and other non-ASCII digits), and a value past 2^63 - 1 reached SQLite as an ``OverflowError`` (500).
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.web.input import MAX_DATABASE_INT, NOT_A_WHOLE_NUMBER, TOO_LARGE, parse_database_int
from tests.support.live_app import LiveApp, run_live_app
from tests.support.scripted_llm import ScriptedLLMServer
from tests.support.settings import app_settings

NOT_NUMBERS = ["", "-1", "+5", " 7", "7 ", "1_000", "1.0", "1e3", "0x10", "NaN", "１２", "١٢", "²", "\ud800", "1\x00"]


@pytest.mark.parametrize(
    ("text", "number"), [("0", 0), ("7", 7), ("0042", 42), (str(MAX_DATABASE_INT), MAX_DATABASE_INT)]
)
def test_ascii_digits_within_the_database_range_are_parsed(text: str, number: int) -> None:
    assert parse_database_int(text) == number


@pytest.mark.parametrize("text", NOT_NUMBERS)
def test_anything_but_ascii_digits_is_refused_with_a_sentence(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_database_int(text)
    assert str(refused.value) == NOT_A_WHOLE_NUMBER


@pytest.mark.parametrize("text", [str(MAX_DATABASE_INT + 1), str(2**64), "9" * 5_000, "1" + "0" * 100_000])
def test_numbers_the_database_cannot_store_are_refused_as_too_large(text: str) -> None:
    with pytest.raises(ValueError) as refused:
        parse_database_int(text)
    assert str(refused.value) == TOO_LARGE


def test_leading_zeros_do_not_make_a_small_number_too_large() -> None:
    assert parse_database_int("0" * 1_000 + "9") == 9


@pytest.fixture(scope="module")
def visitor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveApp, httpx.Client, str]]:
    with ScriptedLLMServer() as llm:
        for live in run_live_app(app_settings(tmp_path_factory.mktemp("integers"), llm)):
            client, _ = live.visitor()
            yield live, client, live.conversation(client)


@pytest.mark.parametrize("cursor", ["+5", " 7", "1_000", "1.0", "１２", "²", str(MAX_DATABASE_INT + 1), "0"])
def test_a_widget_cursor_that_names_no_message_is_a_404_even_when_it_looks_like_a_number(
    visitor: tuple[LiveApp, httpx.Client, str], cursor: str
) -> None:
    _, client, conversation = visitor
    response = client.get(f"/api/widget/conversations/{conversation}/messages", params={"after": cursor})
    assert response.status_code == 404, response.text
