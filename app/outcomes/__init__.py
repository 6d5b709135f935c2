"""Conversation outcomes: how each conversation turned out, recorded where it happens.

- ``recording``: the writes, each one upsert of the conversation's ``ConversationOutcome`` row
  (``app.models.outcomes``): a handoff and its reason category, the first bot and the first human reply, a close
  (which decides the resolution), a reopen, the customer's rating. Nothing here reads the transcript.
"""
