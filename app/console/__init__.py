"""The staff console: what staff see and do at ``/console``, as services that tests call without HTTP.

- ``staff``: staff accounts (argon2 passwords through pwdlib); the functions behind ``memdesk staff …``.
- ``auth``: signed session cookies backed by ``staff_sessions`` rows, idle timeout, sign-in throttling, CSRF tokens.
- ``permissions``: what each role (agent, supervisor, admin) may do; refusals are audited.
- ``inbox``: the conversation list with previews, waiting times and unread counts, in a fixed number of queries.
- ``transcript``: the full transcript with tool calls folded to one line and compactions as inline cards.
- ``handoff``: the short summary a person reads before answering a conversation that needs them.
- ``actions``: take over, reply, private note, hand back, close, reopen, assign; each audited and published live.
- ``customer``: the customer panel (profile, orders through the tool layer, memories through ``CustomerMemory``).
- ``memories``: supervisors' memory edits, with due dates and expiry derived from the text or given in the form.
- ``overview``: the dashboard figures, from persisted data so they survive restarts.
- ``knowledge``: the Knowledge page's sources, documents and chunks with their counts; deleting them, audited.
- ``knowledge_gaps``: open content gaps grouped by similar questions; dismissing them or marking them covered.
- ``playbooks``: supervisors' playbook list with run counts, new versions of a playbook's text, its mode.
- ``rendering``: the HTML template environment and sanitised Markdown.
"""
