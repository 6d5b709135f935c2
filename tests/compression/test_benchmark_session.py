"""The benchmark's session generator produces what the benchmark claims to measure."""

from __future__ import annotations

import json

from benchmarks.compression import replay
from benchmarks.support_sessions import generate_session, turn_messages


def test_generated_session_is_long_deterministic_and_has_planted_identifiers() -> None:
    session = generate_session()
    assert len(session.turns) >= 200 and session.tool_call_count >= 60
    assert generate_session().turns[37].user == session.turns[37].user
    tool_names = {name for turn in session.turns for name, _, _ in turn.tool_calls}
    assert {"get_order", "track_shipment", "list_orders"} <= tool_names
    for index, identifier in session.planted:
        turn = session.turns[index]
        assert identifier in turn.user or identifier in json.dumps([c[1] for c in turn.tool_calls]) + turn.reply


def test_turn_messages_pair_every_tool_call_with_its_result() -> None:
    turn = next(t for t in generate_session().turns if len(t.tool_calls) >= 2)
    user, rounds, reply = turn_messages(turn, 100)
    assert user[0]["role"] == "user" and reply["role"] == "assistant"
    calls = [c["id"] for c in rounds[0][0]["tool_calls"]]
    assert calls == [m["tool_call_id"] for m in rounds[0][1:]]


def test_replay_with_the_compressor_keeps_every_planted_identifier() -> None:
    result = replay(generate_session(turns=120), "compressor")
    assert result["compactions"] >= 1
    assert result["pinned_retention"] == 1.0
    assert result["max_context_tokens"] < 32_000
    assert result["ratio"] < 1.0
