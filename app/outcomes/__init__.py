"""Conversation outcomes: how each conversation turned out, recorded where it happens.

- ``recording``: the writes, each one upsert of the conversation's ``ConversationOutcome`` row
  (``app.models.outcomes``): a handoff and its reason category, the first bot and the first human reply, a close
  (which decides the resolution), a reopen, the customer's rating. Nothing here reads the transcript.
- ``idle``: closing the conversations the bot answered whose customer went quiet (``MEMDESK_IDLE_CLOSE_AFTER_S``),
  on every process, each close once.
- ``customer_close``: the customer's own close from the widget ("That's all, thanks"), recorded as any close.
- ``promises``: the promises board's mirror of promise memories (``PromiseRecord``), its open list, staff's kept
  or broken marks and the share of promises kept on time.
"""
