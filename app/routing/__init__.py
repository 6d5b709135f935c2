"""Routing: handoffs given to online staff in turn, each up to their capacity; the rest wait, oldest first.

- ``settings``: whether routing is on (off by default; supervisors turn it on in the console).
- ``assign``: choosing the member for a handoff, filling a freed slot from the queue, and taking back the
  conversations of a member who goes offline.
"""
