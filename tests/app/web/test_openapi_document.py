"""The OpenAPI document says what the server does: its error codes, its event stream and its two kinds of token."""

from __future__ import annotations

from tests.support.live_app import LiveApp


def test_the_document_declares_errors_the_event_stream_and_both_bearer_tokens(live_app: LiveApp) -> None:
    document = live_app.client().get("/openapi.json").json()
    schemes = document["components"]["securitySchemes"]
    assert schemes["VisitorToken"] == {**schemes["VisitorToken"], "type": "http", "scheme": "bearer"}
    assert schemes["AdminToken"] == {**schemes["AdminToken"], "type": "http", "scheme": "bearer"}
    post = document["paths"]["/api/widget/conversations/{conversation_id}/messages"]["post"]
    assert {"202", "401", "404", "409", "413", "422", "429"} <= set(post["responses"])
    assert post["security"] == [{"VisitorToken": []}]
    events = document["paths"]["/api/widget/conversations/{conversation_id}/events"]["get"]
    assert list(events["responses"]["200"]["content"]) == ["text/event-stream"]
    event = events["responses"]["200"]["content"]["text/event-stream"]["itemSchema"]
    assert {"message.created", "message.delta", "resync"} <= set(event["properties"]["event"]["enum"])
    assert all(list(events["responses"][code]["content"]) == ["application/json"] for code in ("401", "404"))
    assert {"token", "since", "last-event-id"} <= {parameter["name"] for parameter in events["parameters"]}
    erase = document["paths"]["/api/admin/customers/{customer_id}"]["delete"]
    assert erase["security"] == [{"AdminToken": []}] and {"200", "401", "403", "404"} <= set(erase["responses"])
    assert document["paths"]["/api/widget/sessions"]["post"].get("security") in (None, [])


def test_a_validation_error_has_one_format_whatever_raised_it(live_app: LiveApp) -> None:
    client, _ = live_app.visitor()
    conversation = live_app.conversation(client)
    url = f"/api/widget/conversations/{conversation}/messages"
    shapes = [
        client.post(url, json={"content": " "}),  # our rule
        client.post(url, json={"content": 5}),  # a wrong type
        client.post(url, content=b"{", headers={"Content-Type": "application/json"}),  # not JSON
        client.get(f"{url}?after=" + "x" * 100),  # a query parameter too long
    ]
    for response in shapes:
        assert response.status_code == 422
        assert all({"loc", "msg", "type"} <= set(problem) for problem in response.json()["detail"])


def test_a_staff_members_message_is_documented_with_their_name(live_app: LiveApp) -> None:
    schemas = live_app.client().get("/openapi.json").json()["components"]["schemas"]
    assert "staff_name" in schemas["MessagePublic"]["properties"]
    assert "agent_name" not in schemas["MessagePublic"]["properties"]
    assert schemas["MessageAuthor"]["enum"] == ["customer", "bot", "staff", "system"]
