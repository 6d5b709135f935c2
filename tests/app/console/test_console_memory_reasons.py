"""The customer panel says why a memory was superseded, next to the memory that replaced it."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

from app.customer_memory.ids import memory_customer_id
from app.models import StaffRole
from memory.conclusions import Conclusion, ConclusionKind, ConclusionSource
from tests.support.console_support import console_app, signed_in
from tests.support.scripted_llm import ScriptedLLMServer

ORDER = "#W5550002"


def test_the_panel_shows_why_a_memory_was_superseded(tmp_path: Path, scripted_server: ScriptedLLMServer) -> None:
    due = date.today() + timedelta(days=3)
    for live in console_app(tmp_path, scripted_server, memory_enabled=True, memory_embedder="hashing"):
        _, customer_ref = live.visitor()
        customer_key = live.customer(customer_ref).id
        assert customer_key is not None and live.services.memory is not None
        customer = memory_customer_id(customer_key)
        older, newer = (
            Conclusion(customer, ConclusionKind.PROMISE, text, ConclusionSource.COMPACTION, due, (ORDER,))
            for text in (f"Replacement lid for {ORDER} ships by Friday", f"Replacement lid for {ORDER} ships Monday")
        )
        old_id, new_id = live.services.memory.store.remember([older, newer])
        panel = signed_in(live, StaffRole.AGENT).get(f"/console/customers/{customer_ref}/panel").text
        assert f'superseded by <a href="#memory-{new_id}">{new_id[:8]}</a>: ' in panel
        assert f'<span class="superseded-reason">same order {ORDER}, newer version</span>' in panel
        assert panel.count('class="superseded-reason"') == 1, "only the superseded memory has a reason"
        assert f'id="memory-{old_id}" class="memory memory--superseded' in panel
