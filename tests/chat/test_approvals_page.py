"""The Approvals inbox as a page (``web.pages.approvals``) and the top bar's entry with its count, over
plain HTTP: shown to approvers only, counting what they may decide; the page lists each waiting call with
what is needed to decide it, in both languages, and is empty for anyone else."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from tests.chat.test_approvers import _answer, _group, _pause, _wire
from tests.fakes.openai_server import FakeModel, text
from tests.support import ApiClient, LiveApp


def _count(client: ApiClient, path: str = "/chat") -> str | None:
    """The top bar's entry: None when absent, else the count its badge shows ("" for none)."""
    page = client.get(path).text
    if 'data-testid="nav-approvals"' not in page:
        return None
    found = re.search(r'data-testid="approvals-count"[^>]*>(\d+)<', page)
    return found.group(1) if found else ""


def test_the_entry_shows_approvers_how_many_calls_wait_for_them(
    app: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    assert (_count(admin), _count(bob)) == (None, None)  # no tool names approvers yet
    reviewers = _group(admin, "reviewers", bob)
    _wire(admin, agent, approverGroupIds=[reviewers])
    assert (_count(admin), _count(bob), _count(alice), _count(carol)) == ("", "", None, None)

    sid = _pause(alice, fake_model)
    assert (_count(admin), _count(bob), _count(alice)) == ("1", "1", None)
    assert _count(bob, "/agent-documents") == "1"  # every page's top bar, not the chat's alone
    assert "(1 waiting)" in bob.get("/chat").text  # read out, not just a number

    fake_model.push(text("Dropped it."))
    assert _answer(bob, sid).status_code == 200
    assert (_count(admin), _count(bob)) == ("", "")


def test_the_page_lists_each_call_with_its_context_in_either_language(
    app: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    alice, bob, carol = make_user("alice"), make_user("bob"), make_user("carol")
    _wire(admin, agent, approverGroupIds=[_group(admin, "reviewers", bob)])
    for who in (bob, carol, alice):
        empty = who.get("/approvals")
        assert empty.status_code == 200 and 'data-testid="approvals-empty"' in empty.text
        assert "Nothing waits for your approval." in empty.text

    sid = _pause(alice, fake_model)
    page = bob.get("/approvals").text
    assert page.count('data-testid="approval-item"') == 1
    assert f'data-session-id="{sid}"' in page and 'data-tool-call-id="ap1"' in page
    assert "asked by alice" in page and f'data-testid="approval-agent">{agent["name"]}<' in page
    assert 'data-testid="approval-question">please drop the table<' in page
    assert 'data-testid="approval-reply">Let me delete it.<' in page
    assert "&#34;action&#34;: &#34;drop&#34;" in page  # the arguments, as JSON, escaped
    assert "Approve alice&#39;s “" in page and "reviewers" in page
    assert 'src="/static/' in page and "js/pages/approvals.js" in page
    for who in (carol, alice):  # not theirs to decide: the page is the empty one
        assert 'data-testid="approval-item"' not in who.get("/approvals").text

    bob.cookies.set("agentloft_lang", "zh-CN")
    chinese = bob.get("/approvals").text
    assert "由 alice 发起" in chinese and ">批准<" in chinese and ">审批" in chinese


def test_a_long_question_is_cut_with_the_whole_behind_show_all(
    app: LiveApp, admin: ApiClient, make_user: Callable[..., ApiClient], agent: dict[str, Any],
    fake_model: FakeModel, test_tools: None,
) -> None:
    from tests.chat.helpers import chat
    from tests.fakes.openai_server import Step, ToolCall

    alice, bob = make_user("alice"), make_user("bob")
    _wire(admin, agent, approverGroupIds=[_group(admin, "reviewers", bob)])
    fake_model.push(Step(text="ok", tool_calls=[ToolCall("guard", {"action": "drop"}, id="ap1")]))
    chat(alice, "helper", "word " * 200)
    page = bob.get("/approvals").text
    shown = re.search(r'data-testid="approval-question">([^<]*)<', page)
    assert shown and len(shown.group(1)) <= 300 and shown.group(1).endswith("…")
    assert "Show all" in page and ("word " * 199).strip() in page
