"""The console's Playbooks page: supervisors see each playbook with its mode and how often it matched and
completed, switch its mode, and edit its text; a text with an error is refused with the line and the reason while
the running playbook stays as it was; a saved one runs at once, is versioned and audited, and survives a restart.
Agents cannot reach it, and a form without its CSRF token is refused."""

from __future__ import annotations

import html
from pathlib import Path

from sqlmodel import select

from app.models import OrderStatus, PlaybookVersion, StaffRole
from tests.support.console_support import audit_actions, console_app, signed_in
from tests.support.live_app import add_customer_with_order
from tests.support.scripted_llm import ScriptedLLMServer


def test_supervisors_list_switch_and_edit_playbooks(tmp_path: Path, scripted_server: ScriptedLLMServer) -> None:
    for live in console_app(tmp_path, scripted_server, playbooks="on"):
        add_customer_with_order(live, external_id="pp-1", number="#W3000001", status=OrderStatus.PENDING)
        client, _ = live.visitor("pp-1")
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Where is #W3000001?"})
        live.wait_for_reply(conversation_id)

        agent = signed_in(live, StaffRole.AGENT)
        assert agent.get("/console/playbooks").status_code == 403
        supervisor = signed_in(live, StaffRole.SUPERVISOR)
        listing = supervisor.get("/console/playbooks")
        assert listing.status_code == 200
        row = listing.text.split('data-playbook="order_status"')[1].split("</tr>")[0]
        assert '<td data-figure="matched">1</td>' in row and '<td data-figure="completed">1</td>' in row

        assert supervisor.post("/console/playbooks/order_status/mode", {"mode": "off"}, csrf=False).status_code == 403
        assert supervisor.post("/console/playbooks/order_status/mode", {"mode": "sometimes"}).status_code == 422
        assert supervisor.post("/console/playbooks/order_status/mode", {"mode": "off"}).status_code == 303
        assert live.services.playbooks is not None
        assert live.services.playbooks.get("order_status").mode == "off"  # type: ignore[union-attr]

        source = html.unescape(supervisor.get("/console/playbooks/order_status").text.split('name="source"')[1]
                               .split(">", 1)[1].split("</textarea>")[0])  # fmt: skip
        broken = source.replace('reply = "status"', 'reply = "no_such_reply"')
        refused = supervisor.post("/console/playbooks/order_status", {"source": broken})
        assert refused.status_code == 422
        line = broken.splitlines().index('reply = "no_such_reply"') + 1
        assert f"line {line}: steps/1: the reply &#39;no_such_reply&#39; is not defined" in refused.text
        running = live.services.playbooks.get("order_status")
        assert running is not None and 'reply = "status"' in running.source

        edited = source.replace("Which order do you mean?", "Which of your orders do you mean?")
        assert supervisor.post("/console/playbooks/order_status", {"source": edited}).status_code == 200
        assert "Which of your orders" in live.services.playbooks.get("order_status").replies["ask_order"]["en"]  # type: ignore[union-attr]
        with live.db() as session:
            versions = session.exec(select(PlaybookVersion).order_by(PlaybookVersion.version)).all()
        assert [(v.name, v.version) for v in versions] == [("order_status", 1), ("order_status", 2)]
        assert [e.action for e in audit_actions(live) if e.action.startswith("playbook.")] == ["playbook.edit"] * 2

    for restarted in console_app(tmp_path, scripted_server, playbooks="on"):
        assert restarted.services.playbooks is not None
        kept = restarted.services.playbooks.get("order_status")
        assert kept is not None and kept.mode == "off" and "Which of your orders" in kept.source


def test_response_guidelines_reach_the_prompt_and_the_playbooks_limit(
    tmp_path: Path, scripted_server: ScriptedLLMServer
) -> None:
    for live in console_app(tmp_path, scripted_server):
        supervisor = signed_in(live, StaffRole.SUPERVISOR)
        page = supervisor.get("/console/playbooks/guidelines")
        assert page.status_code == 200 and "person_above_amount" in page.text
        refused = supervisor.post(
            "/console/playbooks/guidelines", {"source": 'tone = "Calm."\nperson_above_amount = -5\n'}
        )
        assert refused.status_code == 422 and "line 2: person_above_amount" in refused.text
        sign_off = "Kind regards from the whole Acme Kitchen support team"
        source = f'tone = "Calm and formal."\nsign_off = "{sign_off}"\nperson_above_amount = 50\n'
        assert supervisor.post("/console/playbooks/guidelines", {"source": source}).status_code == 200
        assert live.services.playbooks is not None and live.services.playbooks.guidelines.person_above_amount == 50

        scripted_server.enqueue(f"Hello! {sign_off}")
        client, _ = live.visitor()
        conversation_id = live.conversation(client)
        client.post(f"/api/widget/conversations/{conversation_id}/messages", json={"content": "Hi there"})
        reply = live.wait_for_reply(conversation_id)[-1].content
        instructions = scripted_server.chat_requests[0].messages[0]["content"]
        assert "- Tone: Calm and formal." in instructions and sign_off in instructions
        assert "above 50 in the order's currency is decided by a person" in instructions
        assert reply == f"Hello! {sign_off}", "the sign-off the guidelines ask for is no prompt echo"
        assert [e.action for e in audit_actions(live) if e.action == "guidelines.edit"] == ["guidelines.edit"]
