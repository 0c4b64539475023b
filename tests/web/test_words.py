"""Clear words in both languages (issue 14 point 8): unknown addresses, error pages, tool failures and
built-in texts as pages show them."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

import agentloft
from agentloft.a2a.tool import TOOL_TYPE as AGENT_INVOKE
from agentloft.core.errors import AppError, ProblemCode
from agentloft.defaults import TOOL_TEXTS
from agentloft.tools.types import builtin_types
from agentloft.web import i18n
from tests.chat.helpers import attach, chat, make_agent, make_tool
from tests.fakes.openai_server import FakeModel, call, text
from tests.support import ApiClient, LiveApp

SRC = Path(agentloft.__file__).resolve().parent


BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_unknown_pages_get_the_html_404_and_machine_addresses_keep_json(
    app: LiveApp, anon: ApiClient, user: ApiClient
) -> None:
    for path in ("/no/such/page", "/nope", "/admin/nope"):
        page = user.get(path, headers=BROWSER)
        assert page.status_code == 404 and page.headers["content-type"].startswith("text/html"), path
        assert "There is no page at this address." in page.text and "page_not_found" in page.text
        assert 'id="sign-out"' in page.text  # the top bar knows who is signed in
    with app.client(headers={"Accept-Language": "zh-CN", **BROWSER}) as zh:
        page = zh.get("/chatz")
        assert page.status_code == 404 and "这个地址没有页面。" in page.text and '<html lang="zh-CN"' in page.text
    for path in ("/api/nope", "/api", "/a2a/nope/x", "/docs/nope", "/openapi.json/x", "/static/nope.js"):
        r = anon.get(path, headers=BROWSER)
        assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", path
    for accept in ("application/json", "*/*"):  # a program that mistypes an address reads the JSON error
        for path in ("/nope", "/admin/nope"):
            r = user.get(path, headers={"Accept": accept})
            assert r.status_code == 404 and r.json()["error"]["code"] == "not_found", (path, accept)
    r = anon.post("/nope", json={})
    assert r.status_code in (403, 404, 405) and r.headers["content-type"].startswith("application/json")
    assert anon.get("/docs").status_code == 200 and anon.get("/openapi.json").status_code == 200


def test_error_pages_use_the_readers_words(app: LiveApp, user: ApiClient) -> None:
    user.cookies.set("agentloft_lang", "zh-CN")
    page = user.get("/admin/models")
    assert page.status_code == 403 and "只有管理员可以这样做。" in page.text


def test_tool_failures_carry_a_code_for_the_page(
    user: ApiClient, admin: ApiClient, model_id: int, fake_model: FakeModel
) -> None:
    agent = make_agent(admin, "helper", modelId=model_id)
    tool = make_tool(admin, "notes", "document")
    attach(admin, agent["id"], {"toolId": tool["id"]})
    fake_model.push(call("notes", {"action": "read", "id": "ad_nope"}, id="c1"),
                    call("notes", {"action": "nonsense"}, id="c2"), text("Sorry."))
    res = chat(user, "helper", "read my note")
    codes = {c["data"]["toolCallId"]: c["data"]["code"] for c in res.of("data-tool-error")}
    assert codes == {"c1": "document_not_found", "c2": "invalid_input"}
    errors = {c["toolCallId"]: c["errorText"] for c in res.of("tool-output-error")}
    assert errors["c1"] == "document not found or no access"  # what the model reads stays as it was
    parts = user.ok("GET", f"/api/agent-sessions/{res.session_id}")["messages"][1]["parts"]
    assert {"type": "data-tool-error", "data": {"toolCallId": "c1", "code": "document_not_found"}} in parts


def test_built_in_texts_have_words_in_both_languages() -> None:
    en, zh = i18n.catalog("en"), i18n.catalog("zh-CN")
    for slug, (name, description) in TOOL_TEXTS.items():
        assert en[f"toolDefault.{slug}.name"] == name and en[f"toolDefault.{slug}.description"] == description
        assert zh[f"toolDefault.{slug}.name"] != name or name in ("Python", "HTTP API", "Webhook")
    for tool_type in [*builtin_types(), AGENT_INVOKE]:
        assert en[f"toolType.{tool_type.slug}"] == tool_type.name
        assert f"toolType.{tool_type.slug}" in zh


# Codes only machines or the model see: the A2A protocol's own request error, and an MCP server's failure,
# whose message is the server's own reason (pages show it as it is).
# The OpenAI-compatible API's codes go to OpenAI clients alone (``openai_api``), never to a page.
MACHINE_CODES = {"task_id_required", "mcp_server_failed",
                 "invalid_api_key", "missing_api_key", "turn_failed", "unsupported_message", "unsupported_content",
                 "no_user_message", "model_not_found"}


def _error_codes() -> set[str]:
    """Every code the API can answer with: the error classes' own and those given where they are raised."""
    import agentloft.app  # noqa: F401  (imports every domain, so every error class is defined)

    def subclasses(cls: type[AppError]) -> list[type[AppError]]:
        return [cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))]

    classes = subclasses(AppError)
    codes = {cls.code for cls in classes}
    names = "|".join(cls.__name__ for cls in classes)  # every class, so a new one cannot be missed
    raised = rf"\b(?:{names})\([^()]*?code=\"([a-z_]+)\""
    for path in SRC.rglob("*.py"):
        codes |= set(re.findall(raised, path.read_text(), flags=re.S))
    return codes - {"bad_request", "conflict"}  # generic: the message says what is wrong, shown as it is


def test_every_error_code_the_api_sends_has_words_in_both_languages() -> None:
    codes = _error_codes()
    assert {"agent_slug_taken", "document_not_found", "no_model", "turn_not_started"} <= codes  # the scan works
    for lang in ("en", "zh-CN"):
        strings = i18n.catalog(lang)
        missing = {c for c in codes - MACHINE_CODES if f"apiError.{c}" not in strings}
        assert not missing, (lang, missing)


# How a field's problem gets its code in the source: ``problem("code", ...)``, ``pydantic_problem("code", ...)``
# and ``invalid_field(path, "code", ...)``.
_NAMED_CODE = re.compile(r'\b(?:pydantic_problem|problem)\(\s*"([a-z_]+)"'
                         r'|\binvalid_field\(\s*[^,]+,\s*"([a-z_]+)"')
# Codes a validator names for a tool's input: only the model reads those (as a failed tool result).
MODEL_ONLY_FIELD_CODES = {"action_rule"}


def _named_field_codes() -> set[str]:
    """Every field code the source names where it makes a field's problem."""
    found: set[str] = set()
    for path in SRC.rglob("*.py"):
        found |= {a or b for a, b in _NAMED_CODE.findall(path.read_text())}
    return found


def test_every_field_code_the_api_sends_has_words_in_both_languages() -> None:
    """A hand-written field problem names one of ``ProblemCode`` (the type checker holds each call to it) and
    pages word every one of them; the source scan shows each one named is listed, and the scan works."""
    listed = set(get_args(ProblemCode))
    named = _named_field_codes()
    assert {"wrong_password", "not_http_url", "string_too_long", "unstorable_text", "not_editable"} <= named
    assert named <= listed, named - listed
    for lang in ("en", "zh-CN"):
        strings = i18n.catalog(lang)
        missing = {c for c in listed if f"fieldError.{c}" not in strings}
        assert not missing, (lang, missing)


def test_no_field_problem_is_made_without_the_helpers() -> None:
    """Pydantic's own error made by hand would name a code no list holds; ``pydantic_problem`` is the way."""
    made_by_hand = {path.relative_to(SRC).as_posix() for path in SRC.rglob("*.py")
                    if "PydanticCustomError(" in path.read_text()}
    assert made_by_hand <= {"core/errors.py", "tools/types/document/config.py"}, made_by_hand
    config = (SRC / "tools/types/document/config.py").read_text()
    assert set(re.findall(r'PydanticCustomError\(\s*"([a-z_]+)"', config)) <= MODEL_ONLY_FIELD_CODES
