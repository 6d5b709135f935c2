"""Step 1: old tool output shrinks by type, without an LLM, and pruning twice changes nothing."""

from __future__ import annotations

import json

from compression.pruning import (
    PRUNED_MARKER,
    TOOL_ARGUMENTS_MAX_CHARS,
    prune_tool_outputs,
    shrink_tool_output,
)
from tests.compression.conftest import ConversationBuilder, order_payload


def test_json_output_keeps_ids_statuses_amounts_and_dates() -> None:
    payload = order_payload("#W2378156", total="42.10", items=10)
    reduced = shrink_tool_output(payload)
    assert reduced.startswith(f"{PRUNED_MARKER} JSON tool output, originally {len(payload):,} chars")
    body = json.loads(reduced.split("\n", 1)[1])
    order = body["order"]
    assert order["number"] == "#W2378156" and order["status"] == "delivered"
    assert order["total"] == "42.10" and order["placed_at"] == "2026-11-20" and order["currency"] == "USD"
    assert "marketing_blurb" not in order
    assert len(order["items"]) == 4 and order["items"][-1] == "<7 more items>"
    assert len(reduced) < len(payload) / 4


def test_log_output_keeps_level_counts_and_problem_lines() -> None:
    lines = [f"2026-11-20T10:{i:02d}:00Z INFO scanned at hub {i}" for i in range(50)]
    lines += ["2026-11-21T08:00:00Z WARN weather delay", "2026-11-22T09:00:00Z ERROR address not found"]
    reduced = shrink_tool_output("\n".join(lines))
    assert "levels: INFO 50, WARN 1, ERROR 1" in reduced
    assert "WARN weather delay" in reduced and "ERROR address not found" in reduced
    assert "hub 17" not in reduced


def test_table_output_keeps_header_first_and_last_rows_and_count() -> None:
    rows = ["order,status,total"] + [f"#W{1_000_000 + i},shipped,{i}.00" for i in range(80)]
    reduced = shrink_tool_output("\n".join(rows))
    assert "table of 80 rows" in reduced
    kept = reduced.splitlines()[1:]
    assert kept[0] == "order,status,total" and kept[1] == "#W1000000,shipped,0.00"
    assert kept[-1] == "#W1000079,shipped,79.00" and "75 rows omitted" in reduced


def test_other_text_keeps_head_and_tail_with_original_size() -> None:
    text = "BEGIN " + "lorem ipsum " * 400 + " END"
    reduced = shrink_tool_output(text)
    assert f"originally {len(text):,} chars / 1 lines" in reduced
    assert "BEGIN" in reduced and reduced.endswith("END")


def _session() -> list[dict[str, object]]:
    builder = ConversationBuilder().user("hi").assistant("hello")
    for index in range(6):
        builder.tools(("get_order", {"number": "#W2378156"}, order_payload("#W2378156")))
        builder.exchange(index)
    return builder.messages


def test_pruning_is_idempotent_and_leaves_the_input_untouched() -> None:
    messages = _session()
    snapshot = json.dumps(messages)
    once, affected = prune_tool_outputs(messages, range(len(messages)))
    assert affected and json.dumps(messages) == snapshot
    twice, affected_again = prune_tool_outputs(once, range(len(once)))
    assert affected_again == [] and twice == once


def test_identical_tool_outputs_keep_only_the_latest_copy() -> None:
    messages = _session()
    pruned, _ = prune_tool_outputs(messages, range(len(messages)))
    tool_contents = [m["content"] for m in pruned if m["role"] == "tool"]
    assert all("duplicate: identical to the later result of tool call call_6" in c for c in tool_contents[:-1])
    assert tool_contents[-1].startswith(f"{PRUNED_MARKER} JSON")


def test_only_the_given_range_is_pruned() -> None:
    messages = _session()
    pruned, affected = prune_tool_outputs(messages, range(0, 8))
    assert all(index < 8 for index in affected)
    assert pruned[8:] == messages[8:]


def test_oversized_tool_call_arguments_are_shortened_into_valid_json() -> None:
    arguments = json.dumps({"order": "#W2378156", "note": "n" * 5_000, "lines": list(range(100))})
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": arguments}}
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    pruned, affected = prune_tool_outputs([message], [0])
    assert affected == [0]
    shortened = pruned[0]["tool_calls"][0]["function"]["arguments"]
    parsed = json.loads(shortened)
    assert parsed["order"] == "#W2378156" and len(shortened) <= TOOL_ARGUMENTS_MAX_CHARS
    invalid = {
        **message,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{" + "x" * 2_000}}],
    }
    repaired, _ = prune_tool_outputs([invalid], [0])
    assert "_truncated_arguments" in json.loads(repaired[0]["tool_calls"][0]["function"]["arguments"])


def test_english_tool_output_stays_ascii_when_reduced() -> None:
    """What pruning writes is ASCII, so reduced English output is estimated by the ASCII fast path."""
    payload = json.dumps({"order": {"number": "#W2378156", "note": "x" * 400, "items": list(range(40))}})
    table = "\n".join(["order,status"] + [f"#W{1_000_000 + i},shipped" for i in range(80)])
    text = "BEGIN " + "lorem ipsum " * 400 + " END"
    arguments = json.dumps({"note": "y" * (TOOL_ARGUMENTS_MAX_CHARS + 100)})
    call = {"role": "assistant", "content": "", "tool_calls": [_call(arguments)]}
    (pruned_call,), _ = prune_tool_outputs([call], [0])
    reduced = [shrink_tool_output(output) for output in (payload, table, text)]
    assert all(output.isascii() for output in reduced)
    assert pruned_call["tool_calls"][0]["function"]["arguments"].isascii()


def _call(arguments: str) -> dict[str, object]:
    return {"id": "call_1", "type": "function", "function": {"name": "note", "arguments": arguments}}
