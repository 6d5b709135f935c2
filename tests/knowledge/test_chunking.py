"""Chunking: chunks follow the headings, carry their heading path, stay within the budget and do not come in crumbs."""

from __future__ import annotations

from app.knowledge.chunking import chunk_document
from compression.tokens import estimate_text_tokens

REFUND = "Refunds reach the original payment method within five business days of the parcel's arrival."


def test_each_section_is_a_chunk_under_its_heading_path() -> None:
    markdown = (
        f"# Returns\n\n## Refund timing\n\n{REFUND * 3}\n\n## Exchanges\n\n{'Exchanges are free for thirty days. ' * 8}"
    )
    chunked = chunk_document("Returns", markdown, budget_tokens=80)

    assert [chunk.heading_path for chunk in chunked.chunks] == ["Returns › Refund timing", "Returns › Exchanges"]
    assert chunked.chunks[0].text.startswith("Refunds reach")
    assert chunked.headings == ["Returns", "Refund timing", "Exchanges"]
    assert [chunk.position for chunk in chunked.chunks] == [0, 1]


def test_a_document_without_a_title_heading_has_its_title_at_the_root_of_every_path() -> None:
    markdown = f"## Delivery times\n\n{'Standard parcels arrive in three days. ' * 10}\n\n### Express\n\n{REFUND * 4}"
    chunked = chunk_document("Shipping", markdown, budget_tokens=100)

    assert [chunk.heading_path for chunk in chunked.chunks] == [
        "Shipping › Delivery times",
        "Shipping › Delivery times › Express",
    ]


def test_a_long_section_is_split_at_paragraphs_then_sentences_within_the_budget() -> None:
    paragraphs = [" ".join(f"Sentence {p}.{s} says something about refunds." for s in range(12)) for p in range(5)]
    markdown = "# Policy\n\n" + "\n\n".join(paragraphs)
    chunked = chunk_document("Policy", markdown, budget_tokens=64)

    assert len(chunked.chunks) > 5
    assert all(chunk.token_count <= 64 for chunk in chunked.chunks)
    assert all(chunk.text.rstrip().endswith(".") for chunk in chunked.chunks)  # cut after a sentence, never inside
    assert " ".join(" ".join(chunk.text.split()) for chunk in chunked.chunks) == " ".join(" ".join(paragraphs).split())


def test_text_without_any_boundary_is_cut_within_the_budget_and_nothing_is_lost() -> None:
    wall = "退款将在五个工作日内退回原支付方式" * 40  # Chinese without punctuation: one token a character
    chunked = chunk_document("退款", wall, budget_tokens=100)

    assert len(chunked.chunks) >= 7
    assert all(chunk.token_count == estimate_text_tokens(chunk.text) <= 100 for chunk in chunked.chunks)
    assert "".join(chunk.text for chunk in chunked.chunks) == wall


def test_short_sections_merge_and_keep_their_headings_in_the_text() -> None:
    markdown = (
        "# FAQ\n\n## Do you ship abroad?\n\nYes, to the EU.\n\n## Can I pay by invoice?\n\nYes, for businesses.\n"
    )
    chunked = chunk_document("FAQ", markdown, budget_tokens=200)

    assert len(chunked.chunks) == 1
    only = chunked.chunks[0]
    assert only.heading_path == "FAQ"
    assert "## Do you ship abroad?" in only.text and "Yes, for businesses." in only.text


def test_a_hash_sign_inside_a_code_block_is_not_a_heading() -> None:
    markdown = "# Setup\n\n```sh\n# install the app\npip install memdesk\n```\n"
    chunked = chunk_document("Setup", markdown)

    assert chunked.headings == ["Setup"]
    assert "# install the app" in chunked.chunks[0].text


def test_setext_headings_count_as_headings() -> None:
    markdown = f"Warranty\n========\n\nCoverage\n--------\n\n{REFUND * 6}\n"
    chunked = chunk_document("Warranty", markdown, budget_tokens=300)

    assert chunked.chunks[-1].heading_path == "Warranty › Coverage"


def test_an_empty_document_has_no_chunks() -> None:
    assert chunk_document("Empty", "# Empty\n\n   \n").chunks == []


def test_the_same_markdown_gives_the_same_chunks() -> None:
    markdown = f"# A\n\n{REFUND * 20}\n\n## B\n\n{REFUND * 5}"
    assert chunk_document("A", markdown, budget_tokens=50) == chunk_document("A", markdown, budget_tokens=50)
