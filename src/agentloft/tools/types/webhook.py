"""Webhook: POST a JSON message to a configured URL, e.g. a chat room's incoming webhook.

The payload comes from a JSON template the admin writes once: every string in it may contain
``{{message}}`` and ``{{title}}``, replaced by the model's values. Substituting inside parsed JSON
strings (instead of into the template's text) means a message with quotes or newlines can never break
the JSON or inject keys. The default ``{"text": "{{message}}"}`` suits Slack, Mattermost, Rocket.Chat
and Teams; Discord wants ``{"content": "{{message}}"}``. Webhook URLs usually embed a token, so the URL
is a secret field.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, field_validator

from agentloft.core import netguard
from agentloft.core.errors import pydantic_problem
from agentloft.core.schemas import ApiModel
from agentloft.tools import net
from agentloft.tools.base import ToolContext, ToolResult, ToolType
from agentloft.tools.types.http_api import all_headers

DEFAULT_TEMPLATE = '{"text": "{{message}}"}'


class Config(ApiModel):
    url: str = Field(
        default="",
        description="Webhook URL (stored encrypted: such URLs usually contain a token).",
        json_schema_extra={"format": "password", "writeOnly": True},
    )
    payload_template: str = Field(
        default=DEFAULT_TEMPLATE,
        description="JSON payload; {{message}} and {{title}} inside its strings are replaced.",
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Extra headers sent with every call.")
    secret_headers: str = Field(
        default="",
        description="Headers with credentials, one 'Name: value' per line (stored encrypted).",
        json_schema_extra={"format": "password", "writeOnly": True},
    )
    max_message_chars: int = Field(default=4_000, ge=1, le=100_000, description="Longest message accepted.")
    timeout_seconds: float = Field(default=15, gt=0, le=120, description="Time limit for a call.")
    destination: str = Field(
        default="", description="What the URL posts to, e.g. '#ops channel' (shown to the model)."
    )

    @field_validator("payload_template")
    @classmethod
    def _json(cls, value: str) -> str:
        try:
            json.loads(value)
        except ValueError as exc:
            raise pydantic_problem("not_valid_json", "payload template is not valid JSON: {error}",
                                   error=str(exc)) from exc
        return value


class Input(ApiModel):
    message: str = Field(min_length=1, description="The message text to post.")
    title: str = Field(default="", max_length=300, description="Optional title or subject.")


def render(template: Any, values: dict[str, str]) -> Any:
    """Replace ``{{name}}`` in every string of a parsed JSON template, keys included."""
    if isinstance(template, str):
        for name, value in values.items():
            template = template.replace("{{" + name + "}}", value)
        return template
    if isinstance(template, list):
        return [render(v, values) for v in template]
    if isinstance(template, dict):
        return {render(k, values): render(v, values) for k, v in template.items()}
    return template


class WebhookTool(ToolType[Config, Input]):
    slug = "webhook"
    name = "Webhook"
    description = "Posts a message as JSON to a configured webhook URL (chat rooms, automation)."
    Config = Config
    needed_to_enable = ("url",)
    Input = Input
    secret_fields = ("url", "secret_headers")

    def describe(self, config: Config) -> str:
        where = f" to {config.destination}" if config.destination else ""
        return (
            f"Post a message{where}. Use it only when the user asks to send or notify something. "
            f"Messages longer than {config.max_message_chars} characters are refused."
        )

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if not config.url:
            return ToolResult.fail("this webhook has no URL configured")
        if len(input.message) > config.max_message_chars:
            return ToolResult.fail(f"message too long ({len(input.message)} > {config.max_message_chars} characters)")
        payload = render(json.loads(config.payload_template), {"message": input.message, "title": input.title})
        headers = {"Content-Type": "application/json", **all_headers(config.headers, config.secret_headers)}
        try:
            resp = await net.guarded_request(
                ctx, "POST", config.url, json=payload, headers=headers, timeout_s=config.timeout_seconds,
                max_bytes=100_000, max_redirects=0, truncate=True,
            )
        except netguard.NetError as exc:
            return net.failure(exc)
        data = {"status": resp.status_code, "response": resp.text[:1_000]}
        if not resp.ok:
            return ToolResult(success=False, data=data, error=f"the webhook answered HTTP {resp.status_code}")
        return ToolResult.ok({"delivered": True, **data})


TOOL_TYPE = WebhookTool()
