"""Playbooks: declarative procedures for the intents that make up most of a shop's support traffic.

A playbook is a TOML file: example utterances in several languages, explicit patterns, the slots it needs (an order,
an address, the customer's words), its steps (tool calls, conditions on their results, a confirmation before a
write, a handoff at the policy's limits, a conclusion for long-term memory) and its replies in each language. The
turn runs it (``app.turns.playbook_turn``) for the intents it matches, whatever the chat model.

- ``schema``: the file's JSON schema and its reading into a ``Playbook``; errors name the line and the reason.
- ``model``: ``Playbook``, ``Slot``, ``Step`` and the modes (``always``, ``guide``, ``off``).
- ``library``: the demo shop's playbooks and a team's folder, by name; a valid edit replaces one, a refused one
  changes nothing.
- ``matching``, ``classifier``, ``char_grams``: which playbook a message asks for, by a classifier trained on the
  examples over embeddings, character n-grams and the patterns.
- ``runner``: a run, step by step, across the turns it waits for the customer (a slot, a yes).
- ``guide``: a playbook in ``guide`` mode for a capable model: its steps as instructions, its tools the only ones.
- ``slots``: order numbers, tracking numbers and addresses read from a message.
- ``templates``: the sandboxed Jinja environment replies and conditions are rendered in.
- ``language``: which of English, German and Chinese a customer writes in.
- ``guidelines``: the response guidelines (tone, sign-off, topics to decline, the amount a person decides above).
- ``saved``: the versions saved in the console, applied in every server process.
"""
