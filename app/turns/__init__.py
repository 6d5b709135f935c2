"""The agent's turn: from a stored customer message to the reply, once per burst, whatever fails.

Lifecycle: ``scheduler.TurnScheduler`` accepts a customer message (stored first), waits for the burst to settle,
claims the conversation (``ownership``) and runs ``turn.AgentTurn`` while a turn is needed (``awaiting``);
``recovery`` schedules turns for conversations a crash or a shutdown left waiting.

- ``scheduler``: per-conversation state, debounce, claims, pending bursts, shutdown.
- ``turn``: one turn: recall, preparation, the LLM calls with tools, compaction, the fallback on failure.
- ``awaiting``: the one "does this conversation await a reply" query.
- ``ownership``: which server process runs a conversation's turns (in-process, or PostgreSQL advisory locks).
- ``recovery``: the periodic pass that answers conversations left waiting.
- ``context``: the LLM context rebuilt from the transcript and the latest compaction; compactions and cut replies
  recorded.
- ``context_engines``: each conversation's context engine, the default compressor, and fallbacks when compaction fails.
- ``recall``: the turn's recall from long-term memory, started while the context loads.
- ``preparation``: what a turn does before the model: a handoff on request, playbooks, prefetched lookups.
- ``playbook_turn``, ``playbook_actions``: playbooks in a turn (a waiting run resumed, or a matched one started), and
  what their steps do to the conversation.
- ``turn_steps``: what a playbook uses of the turn it runs in.
- ``prompt_echo``: a reply that repeats the prompt's own text is replaced.
- ``handoff_request``: recognising a request for a person, in several languages.
- ``fact_replies``: replies written from lookups for a model that cannot be trusted with facts.
"""
