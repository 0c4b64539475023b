"""A reply is checkpointed while it streams, so a worker that dies loses only its last second."""

from __future__ import annotations

import time
from typing import Any

from tests.fakes.openai_server import FakeModel, Step
from tests.support import ApiClient, LiveApp


def _reply(app: LiveApp, session_id: str) -> tuple[str, str]:
    return app.sql("SELECT status, content FROM agent_messages WHERE session_id = ? AND role = 'assistant'",
                   (session_id,))[0]


def test_the_text_so_far_is_saved_while_the_reply_streams(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    words = [f"w{i}" for i in range(40)]
    fake_model.push(Step(text=" ".join(words), delay=0.1))
    with user.stream("POST", "/api/agents/helper/chat", json={"message": "tell me"}) as resp:
        session_id = resp.headers["x-session-id"]
        lines = resp.iter_lines()
        seen = 0
        for line in lines:
            seen += '"text-delta"' in line
            if seen >= 15:
                break
        deadline = time.monotonic() + 5
        status, content = _reply(app, session_id)
        while not content and time.monotonic() < deadline:
            time.sleep(0.05)
            status, content = _reply(app, session_id)
        assert status == "streaming"
        assert content.startswith("w0 w1 "), content
        assert len(content.split()) < len(words)  # a checkpoint, not the finished reply
        for _ in lines:
            pass
    status, content = _reply(app, session_id)
    assert (status, content) == ("complete", " ".join(words))
