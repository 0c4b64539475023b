"""HTTP API: one admin-configured REST endpoint the model may call, filling only the parameters the admin
declared (path, query or JSON body), with headers (API keys) the model never sees.

The admin describes the endpoint once — base URL, method, path template like ``/repos/{owner}/issues``,
fixed headers, secret headers, and the parameters with their types — and the model gets a description
that lists those parameters. Anything else the model sends is refused before a request is made.

A path parameter stays in its own path segment: its value is percent-encoded whole (``/``, backslash, ``?``,
``#`` and ``%`` included), and a value that is or contains a ``.`` or ``..`` segment is refused, in any
spelling a server might turn back into one (percent-encoded, several times over, or as Unicode dots that
NFKC folds to ``.``): HTTP clients and servers remove dot segments, so ``{"a": ".."}`` under base
``/api/public`` would otherwise reach ``/api``.
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any, Literal
from urllib.parse import quote, unquote

from pydantic import Field, field_validator

from agentloft.core import netguard
from agentloft.core.errors import pydantic_problem
from agentloft.core.schemas import ApiModel
from agentloft.tools import net
from agentloft.tools.base import ToolContext, ToolResult, ToolType

ParamType = Literal["string", "integer", "number", "boolean"]
PYTHON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,)
}


class Parameter(ApiModel):
    name: str = Field(min_length=1, max_length=100, description="Parameter name.")
    location: Literal["path", "query", "body"] = Field(
        default="query", description="Where it goes: a {name} placeholder in the path, the query string, or "
        "a key of the JSON body."
    )
    type: ParamType = Field(default="string", description="JSON type of the value.")
    required: bool = Field(default=False, description="Whether the model must provide it.")
    description: str = Field(default="", max_length=500, description="What the value means (shown to the model).")


class Config(ApiModel):
    base_url: str = Field(default="", description="Base URL of the API, e.g. https://api.example.com/v1.")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = Field(default="GET", description="HTTP method.")
    path: str = Field(
        default="", description="Path appended to the base URL; {name} placeholders are path parameters."
    )
    parameters: list[Parameter] = Field(
        default_factory=list, description="The parameters the model may fill in."
    )
    headers: dict[str, str] = Field(default_factory=dict, description="Fixed headers sent with every request.")
    secret_headers: str = Field(
        default="",
        description="Headers with credentials, one 'Name: value' per line (stored encrypted, never shown again).",
        json_schema_extra={"format": "password", "writeOnly": True},
    )
    fixed_query: dict[str, str] = Field(default_factory=dict, description="Query parameters always sent.")
    timeout_seconds: float = Field(default=20, gt=0, le=300, description="Time limit for a call.")
    max_bytes: int = Field(default=1_000_000, ge=1_000, le=50_000_000, description="Largest response read.")
    max_chars: int = Field(default=20_000, ge=500, le=1_000_000, description="Longest text given to the model.")

    @field_validator("parameters")
    @classmethod
    def _unique(cls, params: list[Parameter]) -> list[Parameter]:
        names = [p.name for p in params]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise pydantic_problem("duplicate_names", "duplicate parameter names: {names}", names=", ".join(dupes))
        return params


class Input(ApiModel):
    params: dict[str, Any] = Field(
        default_factory=dict,
        description="Values for the parameters listed in the tool description, by name. Only those names.",
    )


def _check_value(spec: Parameter, value: Any) -> str | None:
    if value is None:
        return None if not spec.required else f"{spec.name}: required"
    types = PYTHON_TYPES[spec.type]
    if isinstance(value, bool) and spec.type != "boolean":
        return f"{spec.name}: expected {spec.type}, got boolean"
    if not isinstance(value, types):
        return f"{spec.name}: expected {spec.type}, got {type(value).__name__}"
    return None


def bind(config: Config, params: dict[str, Any]) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Check the model's values against the declared parameters; return ``(path, query, body)``."""
    specs = {p.name: p for p in config.parameters}
    problems = [f"{name}: not a parameter of this tool" for name in params if name not in specs]
    problems += [f"{name}: required" for name, s in specs.items() if s.required and params.get(name) is None]
    problems += [err for name, v in params.items() if name in specs and (err := _check_value(specs[name], v))]
    if problems:
        raise ValueError("invalid parameters: " + "; ".join(dict.fromkeys(problems)))
    path, query, body = config.path, dict(config.fixed_query), {}
    for name, value in params.items():
        spec = specs[name]
        if value is None:
            continue
        if spec.location == "path":
            path = path.replace("{" + name + "}", path_segment(name, value))
        elif spec.location == "query":
            query[name] = str(value).lower() if isinstance(value, bool) else value
        else:
            body[name] = value
    if "{" in path and "}" in path:
        raise ValueError(f"missing path parameters in {path}")
    if _has_dot_segment(path):
        raise ValueError(f"the path {path} has a '.' or '..' segment")
    return path, query, body


def _has_dot_segment(text: str) -> bool:
    return any(part in (".", "..") for part in re.split(r"[/\\]", text))


def path_segment(name: str, value: Any) -> str:
    """``value`` percent-encoded as one path segment, or ValueError when it could climb out of it."""
    text = str(value)
    if not text:
        raise ValueError(f"{name}: a path parameter cannot be empty")
    decoded = text
    for _ in range(10):  # %252e%252e → %2e%2e → ..
        decoded, before = unquote(decoded), decoded
        if decoded == before:
            break
    if any(_has_dot_segment(form) for form in (text, decoded, unicodedata.normalize("NFKC", decoded))):
        raise ValueError(f"{name}: {text!r} would leave its place in the path ('.' and '..' are not allowed as "
                         "path segments)")
    return quote(text, safe="")


def decode_body(resp: netguard.GuardedResponse, max_chars: int) -> Any:
    if "json" in resp.content_type:
        try:
            return json.loads(resp.content)
        except ValueError:
            pass
    return resp.text[:max_chars]


def all_headers(fixed: dict[str, str], secret_lines: str) -> dict[str, str]:
    return {**fixed, **netguard.parse_header_lines(secret_lines)}


class HttpApiTool(ToolType[Config, Input]):
    slug = "http-api"
    name = "HTTP API"
    description = "Calls one REST endpoint configured by an admin; the model fills only declared parameters."
    Config = Config
    needed_to_enable = ("base_url",)
    Input = Input
    secret_fields = ("secret_headers",)

    def describe(self, config: Config) -> str:
        lines = [f"Call the HTTP API endpoint {config.method} {config.path or '/'}."]
        if config.parameters:
            lines.append("Parameters (pass them in `params`):")
            for p in config.parameters:
                need = "required" if p.required else "optional"
                lines.append(f"- {p.name} ({p.type}, {need}){': ' + p.description if p.description else ''}")
        else:
            lines.append("It takes no parameters; call it with empty `params`.")
        return "\n".join(lines)

    async def execute(self, input: Input, config: Config, ctx: ToolContext) -> ToolResult:
        if not config.base_url:
            return ToolResult.fail("this API tool has no base URL configured")
        try:
            path, query, body = bind(config, input.params)
        except ValueError as exc:
            return ToolResult.fail(str(exc))
        url = config.base_url.rstrip("/") + ("/" + path.lstrip("/") if path else "")
        headers = {"Accept": "application/json, text/plain;q=0.9, */*;q=0.5"}
        headers.update(all_headers(config.headers, config.secret_headers))
        send_body = config.method in ("POST", "PUT", "PATCH") or bool(body)
        try:
            resp = await net.guarded_request(
                ctx, config.method, url, params=query or None, headers=headers,
                json=body if send_body else None, timeout_s=config.timeout_seconds,
                max_bytes=config.max_bytes, truncate=True,
            )
        except netguard.NetError as exc:
            return net.failure(exc)
        data = {"status": resp.status_code, "contentType": resp.content_type,
                "body": decode_body(resp, config.max_chars), "truncated": resp.truncated}
        if not resp.ok:
            return ToolResult(success=False, data=data, error=f"the API answered HTTP {resp.status_code}")
        return ToolResult.ok(data)


TOOL_TYPE = HttpApiTool()
