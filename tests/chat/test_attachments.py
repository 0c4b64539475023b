"""Files attached to chat messages, over real HTTP against the fake model: only the sender's own ready
files, kept on the message, sent again on regenerate and edit, and a deleted one named as gone."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentloft.chat.attachments import MAX_ATTACHMENTS
from tests.chat.helpers import chat, post_stream
from tests.fakes.openai_server import FakeModel
from tests.files import samples
from tests.files.samples import PNG
from tests.files.test_documents import settled
from tests.support import ApiClient, LiveApp


def upload(client: ApiClient, name: str, data: bytes) -> dict[str, Any]:
    return client.ok("POST", "/api/files", files={"file": (name, data, "application/octet-stream")})


def send(client: ApiClient, message: str, files: list[str], session_id: str | None = None, slug: str = "helper") -> Any:
    body: dict[str, Any] = {"message": message, "attachments": files}
    if session_id:
        body["sessionId"] = session_id
    return post_stream(client, f"/api/agents/{slug}/chat", body)


def user_content(fake_model: FakeModel, index: int = -1) -> Any:
    """What the model was sent as the last user message of request ``index``."""
    return [m for m in fake_model.requests[index]["messages"] if m["role"] == "user"][-1]["content"]


def texts_of(content: Any) -> list[str]:
    return [p["text"] for p in content if p["type"] == "text"]


def images_of(content: Any) -> list[str]:
    return [p["image_url"]["url"] for p in content if p["type"] == "image_url"]


def test_a_text_file_reaches_the_model_named_and_stays_on_the_message(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    notes = upload(user, "notes.md", "# Plan\n\nShip on Friday. 周五发布。\n".encode())
    res = send(user, "What is the plan?", [notes["id"]])
    assert res.status == 200 and not res.of("error"), res.body
    content = user_content(fake_model)
    assert texts_of(content)[0] == "What is the plan?"
    assert texts_of(content)[1] == ('<attachment name="notes.md" type="text/markdown">\n'
                                    "# Plan\n\nShip on Friday. 周五发布。\n\n</attachment>")
    detail = user.ok("GET", f"/api/agent-sessions/{res.session_id}")
    first, reply = detail["messages"]
    assert first["content"] == "What is the plan?" and first["attachments"] == [
        {"id": notes["id"], "name": "notes.md", "mediaType": "text/markdown", "size": notes["size"],
         "deleted": False}]
    assert reply["attachments"] == []


def test_no_attachments_sends_the_text_alone(user: ApiClient, agent: dict[str, Any], fake_model: FakeModel) -> None:
    assert chat(user, "helper", "plain").status == 200
    assert user_content(fake_model) == "plain"


def test_another_users_file_is_not_found_and_nothing_is_written(
    app: LiveApp, user: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel,
) -> None:
    bob = make_user("bob")
    theirs = upload(bob, "secret.txt", b"bob's secret")
    res = send(user, "read this", [theirs["id"]])
    assert res.status == 404 and res.json()["error"]["code"] == "file_not_found"
    assert send(user, "read this", ["fl_missing"]).status == 404
    assert app.sql("SELECT count(*) FROM agent_sessions")[0][0] == 0
    assert fake_model.requests == []


@pytest.mark.parametrize(("status", "error", "code", "http"), [
    ("processing", None, "file_processing", 409),
    ("failed", "the PDF is encrypted", "file_unreadable", 422),
])
def test_a_file_not_ready_is_refused_with_its_state(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    status: str, error: str | None, code: str, http: int,
) -> None:
    row = upload(user, "report.txt", b"words")
    app.sql("UPDATE files SET status = ?, error = ? WHERE id = ?", (status, error, row["id"]))
    res = send(user, "summarise", [row["id"]])
    assert res.status == http and res.json()["error"]["code"] == code
    if error:
        assert error in res.json()["error"]["message"]
    assert fake_model.requests == []


def test_too_many_attachments_are_refused(user: ApiClient, agent: dict[str, Any]) -> None:
    res = send(user, "many", [f"fl_{n}" for n in range(MAX_ATTACHMENTS + 1)])
    assert res.status == 422 and "attachments" in res.json()["error"]["fields"]


def vision(admin: ApiClient, model_id: int, on: bool) -> None:
    assert admin.ok("PUT", f"/api/admin/models/{model_id}", json={"vision": on})["vision"] is on


def test_an_image_for_a_model_without_vision_is_refused_but_text_goes(
    app: LiveApp, admin: ApiClient, user: ApiClient, agent: dict[str, Any], model_id: int, fake_model: FakeModel
) -> None:
    picture, notes = upload(user, "photo.png", PNG), upload(user, "n.txt", b"text is fine")
    res = send(user, "What is this?", [notes["id"], picture["id"]])
    assert res.status == 422 and res.json()["error"]["code"] == "model_without_vision"
    assert app.sql("SELECT count(*) FROM agent_messages")[0][0] == 0 and fake_model.requests == []
    assert send(user, "Read this", [notes["id"]]).status == 200
    vision(admin, model_id, True)
    assert send(user, "What is this?", [picture["id"]]).status == 200
    assert len(images_of(user_content(fake_model))) == 1


def test_regenerate_and_edit_send_the_files_again(
    admin: ApiClient, user: ApiClient, agent: dict[str, Any], model_id: int, fake_model: FakeModel
) -> None:
    vision(admin, model_id, True)
    notes = upload(user, "notes.txt", b"The code word is heron.")
    picture = upload(user, "photo.png", PNG)
    res = send(user, "What is the code word?", [notes["id"], picture["id"]])
    sent = user_content(fake_model)
    assert any("heron" in t for t in texts_of(sent)) and len(images_of(sent)) == 1

    assert post_stream(user, f"/api/agent-sessions/{res.session_id}/regenerate", {}).status == 200
    assert user_content(fake_model) == sent

    message_id = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][0]["id"]
    edited = post_stream(user, f"/api/agent-sessions/{res.session_id}/messages/{message_id}/resend",
                         {"message": "Spell the code word."})
    assert edited.status == 200
    again = user_content(fake_model)
    assert texts_of(again)[0] == "Spell the code word." and again[1:] == sent[1:]
    first = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][0]
    assert [a["id"] for a in first["attachments"]] == [notes["id"], picture["id"]]

    vision(admin, model_id, False)  # the model that would answer now reads no images
    refused = post_stream(user, f"/api/agent-sessions/{res.session_id}/regenerate", {})
    assert refused.status == 422 and refused.json()["error"]["code"] == "model_without_vision"
    assert user.ok("GET", f"/api/agent-sessions/{res.session_id}")["status"] == "idle"


def test_a_deleted_file_keeps_its_chip_and_the_model_is_told_it_is_gone(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    notes = upload(user, "R&D draft.txt", b"draft text")
    res = send(user, "Look at this", [notes["id"]])
    user.ok("DELETE", f"/api/files/{notes['id']}")
    (chip,) = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][0]["attachments"]
    assert chip["name"] == "R&D draft.txt" and chip["deleted"] is True
    assert post_stream(user, f"/api/agent-sessions/{res.session_id}/regenerate", {}).status == 200
    assert texts_of(user_content(fake_model)) == [
        "Look at this",
        '<attachment name="R&amp;D draft.txt" note="deleted by the user; its content is no longer available"/>']


def test_earlier_files_stay_in_the_history_of_later_turns(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    notes = upload(user, "facts.txt", b"The sky is green here.")
    res = send(user, "Remember this", [notes["id"]])
    assert chat(user, "helper", "What colour is the sky?", session_id=res.session_id).status == 200
    users = [m["content"] for m in fake_model.requests[-1]["messages"] if m["role"] == "user"]
    assert any("The sky is green here." in t for t in texts_of(users[0]))
    assert users[1] == "What colour is the sky?"


def test_the_plain_model_chat_takes_attachments(user: ApiClient, model_id: int, fake_model: FakeModel) -> None:
    notes = upload(user, "n.txt", b"plain chat file")
    res = post_stream(user, "/api/llm/chat", {"message": "read", "attachments": [notes["id"]]})
    assert res.status == 200
    assert any("plain chat file" in t for t in texts_of(user_content(fake_model)))


def test_a_file_over_the_budget_sends_only_the_chunks_relevant_to_the_message(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    sections = [f"## Shelf {n}\n\n" + " ".join(f"crate{n}item{k}" for k in range(300)) for n in range(200)]
    sections[123] = "## Keys\n\nThe spare key to the boathouse hangs behind the blue door."
    big = upload(user, "inventory.md", "\n\n".join(sections).encode())
    assert big["chars"] > 8 * 8000  # well over the default budget
    assert send(user, "Where is the spare boathouse key?", [big["id"]]).status == 200
    (_, sent) = texts_of(user_content(fake_model))
    assert sent == ('<attachment name="inventory.md" type="text/markdown" note="too long to include whole; '
                    'the parts most relevant to the message follow">\n'
                    "Keys\n\nThe spare key to the boathouse hangs behind the blue door.\n</attachment>")


def test_a_pdf_is_refused_while_being_read_then_reaches_the_model_by_page(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    report = upload(user, "report.pdf", samples.pdf("alpha beta", "gamma"))
    assert report["status"] == "processing"
    early = send(user, "Summarise the report", [report["id"]])
    assert early.status == 409 and early.json()["error"]["code"] == "file_processing"
    assert settled(user, report["id"])["status"] == "ready"
    assert send(user, "Summarise the report", [report["id"]]).status == 200
    (_, sent) = texts_of(user_content(fake_model))
    assert sent.startswith('<attachment name="report.pdf" type="application/pdf">\n[page 1]\nalpha beta')
    assert "\n\n[page 2]\ngamma" in sent
