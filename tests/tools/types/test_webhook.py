from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from agentloft.tools.types.webhook import TOOL_TYPE as HOOK
from tests.tools.types.conftest import LOCAL, Run
from tests.tools.types.local_server import LocalWeb


async def test_posts_the_default_payload(run: Run, web: LocalWeb) -> None:
    message = 'Deploy "v2" done\nall green'
    result = await run(HOOK, {"message": message}, {"url": f"{web.url}/echo"}, allow=LOCAL)
    assert result.success, result.error
    assert result.data["delivered"] is True and result.data["status"] == 200
    sent = web.requests[-1]
    assert sent["method"] == "POST" and sent["headers"]["content-type"] == "application/json"
    assert json.loads(sent["body"]) == {"text": message}


async def test_template_headers_and_title(run: Run, web: LocalWeb) -> None:
    template = '{"content": "**{{title}}**: {{message}}", "embeds": [{"description": "{{message}}"}], "n": 1}'
    cfg = {"url": f"{web.url}/echo", "payloadTemplate": template, "headers": {"X-Room": "ops"},
           "secretHeaders": "X-Token: t0k"}
    result = await run(HOOK, {"message": 'say "hi"', "title": "Note"}, cfg, allow=LOCAL)
    assert result.success, result.error
    sent = web.requests[-1]
    assert json.loads(sent["body"]) == {"content": '**Note**: say "hi"', "embeds": [{"description": 'say "hi"'}],
                                        "n": 1}
    assert sent["headers"]["x-room"] == "ops" and sent["headers"]["x-token"] == "t0k"


async def test_failures(run: Run, web: LocalWeb) -> None:
    assert (await run(HOOK, {"message": "x"})).error == "this webhook has no URL configured"
    refused = await run(HOOK, {"message": "x"}, {"url": f"{web.url}/echo?status=500"}, allow=LOCAL)
    assert not refused.success and refused.error == "the webhook answered HTTP 500"
    blocked = await run(HOOK, {"message": "x"}, {"url": f"{web.url}/echo?token=abc"})
    assert blocked.error.startswith("blocked: 127.0.0.1 is a loopback address")
    assert "token=abc" not in blocked.error
    too_long = await run(HOOK, {"message": "x" * 20}, {"url": f"{web.url}/echo", "maxMessageChars": 10}, allow=LOCAL)
    assert not too_long.success and too_long.error == "message too long (20 > 10 characters)"
    # a webhook never follows a redirect (it would re-post the message elsewhere)
    moved = await run(HOOK, {"message": "x"}, {"url": f"{web.url}/redirect?to=/echo&code=307"}, allow=LOCAL)
    assert not moved.success and moved.error == "too many redirects (more than 0)"
    assert [r["path"] for r in web.requests] == ["/echo", "/redirect"]


def test_url_is_secret_and_template_must_be_json() -> None:
    assert set(HOOK.secret_fields) == {"url", "secret_headers"}
    with pytest.raises(ValidationError, match="payload template is not valid JSON"):
        HOOK.Config.model_validate({"payloadTemplate": "{text: {{message}}}"})


async def test_bad_inputs(run: Run) -> None:
    empty = await run(HOOK, {"message": ""})
    assert not empty.success and "message: String should have at least 1 character" in empty.error
