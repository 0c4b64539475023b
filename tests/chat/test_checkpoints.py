"""A reply is checkpointed while it streams, so a worker that dies loses only its last second."""

from __future__ import annotations

from typing import Any

from tests.chat.helpers import checkpoint_mid_stream, reply_row
from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp


def test_the_text_so_far_is_saved_while_the_reply_streams(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    words = [f"w{i}" for i in range(40)]
    fake_model.push(Step(text=" ".join(words), delay=0.1))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "tell me"}) as resp:
        session_id = resp.headers["x-session-id"]
        (status, content), lines = checkpoint_mid_stream(app, resp)
        assert status == "streaming"
        assert content.startswith("w0 w1 "), content
        assert len(content.split()) < len(words)  # a checkpoint, not the finished reply
        for _ in lines:
            pass
    assert reply_row(app, session_id) == ("complete", " ".join(words))
