"""The console's shortcut for messages without Markdown gives exactly the HTML of the full renderer."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.console.rendering import markdown_to_safe_html, plain_paragraphs, render_markdown

# Pieces of chat text: words, numbers, order numbers and every character Markdown gives a meaning to somewhere.
PIECES = st.sampled_from(
    [
        "Your", "order", "has", "shipped", "café", "订单", "#W2378156", "42", "1", "2024", " ", " ", " ", "  ",
        "\n", "\n", "\n\n", ".", ",", "!", "?", ":", ";", "'", '"', "’", "(", ")", "/", "%", "$", "@", "#", "+",
        "=", "-", "*", "_", "`", "[", "]", "<", ">", "&", "&amp;", "\\", "~", "|", "    ", "\t", "\r", "\u00a0",
        "1.", "1)", "- ", "* ", "> ", "# ", "===", "---", "**", "http://example.com", "<b>", "١.",
    ]
)  # fmt: skip

TYPICAL_REPLIES = [
    "Your order #W2378156 has shipped with UPS.",
    "Thanks! I've passed this to our team: a person will reply here (Monday-Friday 8 am-8 pm).",
    "The refund of $42.10 is on its way; you'll see it in 3-5 business days.\n\nAnything else I can do?",
    "2024 was a busy year for us.\nLine two of the same paragraph.",
    "Ünïcode, 订单 and “quotes” stay as they are.",
]
MARKDOWN_REPLIES = [
    "Your order **#W2378156** has shipped.",
    "1. Open the box\n2. Plug it in",
    "- first\n- second",
    "Line with a hard break  \nnext",
    "Call <b>now</b> & save",
    "Title\n===",
    "    indented code",
    "a [link](https://example.com)",
]


@pytest.mark.parametrize("text", TYPICAL_REPLIES)
def test_replies_without_markdown_take_the_shortcut_with_the_full_renderers_html(text: str) -> None:
    shortcut = plain_paragraphs(text)
    assert shortcut is not None
    assert shortcut == markdown_to_safe_html(text) == str(render_markdown(text))


@pytest.mark.parametrize("text", MARKDOWN_REPLIES)
def test_replies_with_markdown_syntax_go_through_the_full_renderer(text: str) -> None:
    assert plain_paragraphs(text) is None
    assert str(render_markdown(text)) == markdown_to_safe_html(text)


@settings(max_examples=3_000, deadline=None)
@given(st.lists(PIECES, max_size=30).map("".join))
def test_the_shortcut_never_differs_from_the_full_renderer(text: str) -> None:
    shortcut = plain_paragraphs(text)
    if shortcut is not None:
        assert shortcut == markdown_to_safe_html(text)


@settings(max_examples=1_000, deadline=None)
@given(st.text(max_size=40))
def test_the_shortcut_never_differs_from_the_full_renderer_on_any_text(text: str) -> None:
    shortcut = plain_paragraphs(text)
    if shortcut is not None:
        assert shortcut == markdown_to_safe_html(text)
