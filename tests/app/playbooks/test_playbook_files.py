"""Playbook files: the demo shop's are valid, a broken one is refused with its line and reason, and a refused edit
leaves the running playbooks as they were."""

from __future__ import annotations

import pytest
from jinja2.exceptions import SecurityError

from app.playbooks.library import PlaybookLibrary, demo_playbooks
from app.playbooks.schema import PlaybookError, parse_playbook
from app.playbooks.templates import render
from memory.embedders import HashingEmbedder

VALID = """\
name = "greeting"
title = "Greeting"

[examples]
en = ["hello there"]

[[steps]]
reply = "hello"

[replies.hello]
en = "Hello {{ customer.name }}!"
de = "Hallo {{ customer.name }}!"
"""


def test_the_demo_shop_ships_a_playbook_for_each_top_intent() -> None:
    names = {playbook.name for playbook in demo_playbooks()}
    assert names == {
        "order_status", "list_orders", "track_shipment", "cancel_order", "return_item", "refund",
        "change_address", "contact_preference", "talk_to_person",
    }  # fmt: skip
    for playbook in demo_playbooks():
        assert {"en", "de", "zh"} <= set(playbook.examples), playbook.name


@pytest.mark.parametrize(
    ("source", "line", "reason"),
    [
        (VALID.replace('title = "Greeting"', 'title = "Greeting'), 2, "Illegal character"),
        (VALID.replace('reply = "hello"', 'reply = "goodbye"'), 8, "the reply 'goodbye' is not defined"),
        (VALID.replace('reply = "hello"', 'shout = "hello"'), 7, "steps/0"),
        (
            VALID.replace('[[steps]]\nreply = "hello"', '[[steps]]\nwhen = "slots.order ==="\nreply = "hello"'),
            8,
            "steps/0/when",
        ),
        (VALID.replace("Hello {{ customer.name }}!", "Hello {{ customer.name !"), 11, "template"),
        (VALID.replace('name = "greeting"', 'name = "Greeting Card"'), 1, "name"),
    ],
)
def test_a_broken_playbook_is_refused_with_the_line_and_the_reason(source: str, line: int, reason: str) -> None:
    with pytest.raises(PlaybookError) as refused:
        parse_playbook(source, source_name="greeting.toml")
    assert refused.value.line == line, str(refused.value)
    assert reason in str(refused.value) and str(refused.value).startswith(f"greeting.toml, line {line}: ")


def test_a_refused_edit_leaves_the_running_playbooks_as_they_were() -> None:
    library = PlaybookLibrary([parse_playbook(VALID)], HashingEmbedder(384))
    before = library.get("greeting")
    with pytest.raises(PlaybookError):
        library.replace(VALID.replace('reply = "hello"', 'reply = "missing"'))
    assert library.get("greeting") is before
    edited = library.replace(VALID.replace("Hello", "Hi"))
    assert library.get("greeting") is edited and "Hi" in edited.replies["hello"]["en"]


def test_templates_run_sandboxed() -> None:
    source = VALID.replace("Hello {{ customer.name }}!", "{{ customer.__class__.__mro__ }}")
    playbook = parse_playbook(source)
    with pytest.raises(SecurityError):
        render(playbook.replies["hello"]["en"], {"customer": {"name": "x"}})
