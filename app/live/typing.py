"""Typing indicators both ways: a staff member writing in the console ("Sam is typing…" in the widget), a customer
writing in the widget ("The customer is typing…" in the console).

The pages send a signal at most every few seconds while someone types; the server passes on at most one "typing"
event per person and conversation every ``MIN_INTERVAL_S`` (a page that sends more, or a hostile client, costs no
more events), and every "stopped". A page that sees no new signal for ``SHOWN_FOR_S`` hides the indicator: a
closed tab never leaves one on.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict

from app.live.broker import EventBroker

MIN_INTERVAL_S = 2.0
SHOWN_FOR_S = 6.0  # what the pages wait after the last signal before hiding the indicator
MAX_TRACKED = 10_000
STAFF_TYPING = "typing"  # the bot's own typing events share the type: the widget shows one indicator
CUSTOMER_TYPING = "customer.typing"


class TypingSignals:
    def __init__(self, broker: EventBroker) -> None:
        self.broker = broker
        self._last: OrderedDict[tuple[int, str], float] = OrderedDict()
        self._lock = threading.Lock()

    def staff(self, conversation_id: int, staff_id: int, name: str, *, on: bool) -> bool:
        return self._signal(conversation_id, f"staff:{staff_id}", STAFF_TYPING, {"on": on, "who": name}, on=on)

    def customer(self, conversation_id: int, *, on: bool) -> bool:
        return self._signal(conversation_id, "customer", CUSTOMER_TYPING, {"on": on}, on=on)

    def _signal(self, conversation_id: int, who: str, type: str, data: dict[str, object], *, on: bool) -> bool:
        """Publish unless ``who`` said "typing" in this conversation less than ``MIN_INTERVAL_S`` ago."""
        key, now = (conversation_id, who), time.monotonic()
        with self._lock:
            last = self._last.get(key)
            if on and last is not None and now - last < MIN_INTERVAL_S:
                return False
            if on:
                self._last[key] = now
                self._last.move_to_end(key)
                while len(self._last) > MAX_TRACKED:
                    self._last.popitem(last=False)
            else:
                self._last.pop(key, None)
        self.broker.publish(conversation_id, type, data)
        return True
