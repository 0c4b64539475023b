"""Searching one's own chats: titles and message text, Chinese one- and two-character words included,
ranked, paged with exact totals, isolated by user, deleted sessions left out, and the index kept in step
with renames, new messages and deletes."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from agentloft.chat import search
from agentloft.core import textsearch
from agentloft.core.textsearch import parse_query, register_sqlite_functions
from tests.chat.helpers import chat, make_agent
from tests.fakes.openai_server import FakeModel, text
from tests.support import ApiClient, LiveApp, executed_statements, folded_characters

SEARCH = "/api/agent-sessions/search"


def found(client: ApiClient, q: str, **params: Any) -> list[str]:
    page = client.ok("GET", SEARCH, params={"q": q, **params})
    assert page["total"] == len(page["items"]) or page["hasMore"]
    return [s["title"] for s in page["items"]]


def start(client: ApiClient, message: str, reply: str, fake_model: FakeModel, title: str | None = None) -> str:
    fake_model.push(text(reply))
    sid = chat(client, "helper", message).session_id
    assert sid
    if title:
        client.ok("PATCH", f"/api/agent-sessions/{sid}", json={"title": title})
    return sid


def test_finds_titles_and_messages_in_chinese_and_english(
    user: ApiClient, make_user: Any, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    start(user, "怎么做手冲？", "先把豆子磨细，水温九十度。", fake_model, title="咖啡的做法")
    start(user, "去日本旅行要准备什么", "带上护照，记得去京都喝抹茶。", fake_model, title="旅行")
    start(user, "Plan the database migration", "Use AI to check the ＳＱＬ scripts.", fake_model,
          title="Migration")
    bob = make_user("bob")
    start(bob, "咖啡和茶", "都好。", fake_model, title="bob 咖啡")

    assert found(user, "咖啡") == ["咖啡的做法"]  # a two-character word, only in the title; not bob's
    assert found(user, "茶") == ["旅行"]  # one character, in a reply
    assert found(user, "京都 护照") == ["旅行"]
    assert found(user, "抹茶 咖啡") == []  # every term must match
    assert found(user, "ai") == ["Migration"]  # two Latin letters, any case
    assert found(user, "ＡＩ") == ["Migration"]  # full-width query, ASCII text
    assert found(user, "sql") == ["Migration"]  # ASCII query, full-width text
    assert found(user, "migrat") == ["Migration"]  # inside a word
    assert found(user, "磨細") == []  # traditional 細 is not simplified 细
    assert found(bob, "咖啡") == ["bob 咖啡"]


def test_match_says_where_with_a_snippet(user: ApiClient, agent: dict[str, Any], fake_model: FakeModel) -> None:
    long_reply = "前言。" * 30 + "这里讲咖啡的烘焙，也讲咖啡豆的保存。" + "后记。" * 30
    sid = start(user, "讲讲烘焙", long_reply, fake_model, title="烘焙笔记")
    page = user.ok("GET", SEARCH, params={"q": "咖啡 烘焙"})
    assert page["total"] == 1
    hit = page["items"][0]
    assert hit["id"] == sid and hit["agentSlug"] == "helper"
    match = hit["match"]
    assert match["field"] == "message" and match["role"] == "assistant"
    messages = user.ok("GET", f"/api/agent-sessions/{sid}")["messages"]
    assert match["messageId"] == next(m["id"] for m in messages if m["role"] == "assistant")
    assert match["snippet"].startswith("…") and match["snippet"].endswith("…")
    assert len(match["snippet"]) <= 122
    assert "".join(p["text"] for p in match["parts"]) == match["snippet"]
    assert [p["text"] for p in match["parts"] if p["hit"]] == ["咖啡", "烘焙", "咖啡"]

    only_title = user.ok("GET", SEARCH, params={"q": "笔记"})["items"][0]["match"]
    assert only_title == {"field": "title", "messageId": None, "role": None, "snippet": "烘焙笔记",
                          "parts": [{"text": "烘焙", "hit": False}, {"text": "笔记", "hit": True}]}


def test_terms_may_be_in_different_messages_and_the_title(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    sid = start(user, "first about apples", "noted", fake_model, title="Fruit")
    fake_model.push(text("and now pears"))
    chat(user, "helper", "second about 香蕉", session_id=sid)
    assert found(user, "apples pears 香蕉") == ["Fruit"]
    assert found(user, "fruit 蕉") == ["Fruit"]
    assert found(user, "apples plums") == []


def test_ranking_title_terms_then_hits_then_recent(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    start(user, "kiwi and plum", "ok", fake_model, title="Old notes")
    start(user, "plum only here", "ok", fake_model, title="Kiwi jam")
    start(user, "nothing", "kiwi plum", fake_model, title="Kiwi plum tart")
    start(user, "kiwi plum again", "ok", fake_model, title="Newest notes")
    assert found(user, "kiwi plum") == ["Kiwi plum tart", "Kiwi jam", "Newest notes", "Old notes"]


@pytest.mark.parametrize("fold_whole", ["default", 0])
def test_the_match_is_the_message_with_most_terms_then_the_newest(
    monkeypatch: pytest.MonkeyPatch, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel,
    fold_whole: str | int,
) -> None:
    if fold_whole != "default":  # on SQLite every message is then looked up in the index, not folded here
        monkeypatch.setattr(search, "FOLD_WHOLE", fold_whole)
    sid = start(user, "茶 and 咖啡 together", "only 茶 here", fake_model, title="饮料")
    fake_model.push(text("茶 again, newest"))
    chat(user, "helper", "咖啡 alone", session_id=sid)
    messages = {m["content"]: m["id"] for m in user.ok("GET", f"/api/agent-sessions/{sid}")["messages"]}

    def match(q: str) -> dict[str, Any]:
        page = user.ok("GET", SEARCH, params={"q": q})
        assert [h["id"] for h in page["items"]] == [sid] and page["total"] == 1
        return page["items"][0]["match"]

    assert match("茶 咖啡")["messageId"] == messages["茶 and 咖啡 together"]  # both terms, though oldest
    assert match("茶")["messageId"] == messages["茶 again, newest"]  # one term each: the newest
    assert match("咖啡")["messageId"] == messages["咖啡 alone"]
    assert match("饮料") == {"field": "title", "messageId": None, "role": None, "snippet": "饮料",
                             "parts": [{"text": "饮料", "hit": True}]}
    assert match("饮料 咖啡")["messageId"] == messages["咖啡 alone"]  # title and messages together
    fake_model.push(text("ＣＯＦＦＥＥ notes"))
    chat(user, "helper", "coffee, typed plainly", session_id=sid)
    messages = {m["content"]: m["id"] for m in user.ok("GET", f"/api/agent-sessions/{sid}")["messages"]}
    assert match("ｃｏｆｆｅｅ")["messageId"] == messages["ＣＯＦＦＥＥ notes"]  # folded, and the newer of two
    assert match("coffee 茶")["messageId"] == messages["ＣＯＦＦＥＥ notes"]  # none holds both: the newest
    assert match("plainly 茶 咖啡")["messageId"] == messages["茶 and 咖啡 together"]  # two of three terms


def test_a_message_from_a2a_is_never_the_match(
    app: LiveApp, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    sid = start(user, "咖啡 asked", "ok", fake_model, title="饮料")
    fake_model.push(text("咖啡 answered"))
    chat(user, "helper", "again", session_id=sid)
    messages = {m["content"]: m["id"] for m in user.ok("GET", f"/api/agent-sessions/{sid}")["messages"]}
    assert hit_of(user, "咖啡")["messageId"] == messages["咖啡 answered"]
    app.sql("UPDATE agent_messages SET source = 'a2a' WHERE id = ?", (messages["咖啡 answered"],))
    assert hit_of(user, "咖啡")["messageId"] == messages["咖啡 asked"]


def test_paging_filters_and_bad_queries(
    user: ApiClient, admin: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    for i in range(5):
        start(user, f"数据 report {i}", "ok", fake_model, title=f"数据 {i}")
    other = make_agent(admin, "other", modelId=agent["modelId"])
    fake_model.push(text("ok"))
    chat(user, "other", "数据 elsewhere")
    first = user.ok("GET", SEARCH, params={"q": "数据", "pageSize": 4})
    assert first["total"] == 6 and len(first["items"]) == 4 and first["hasMore"] is True
    second = user.ok("GET", SEARCH, params={"q": "数据", "pageSize": 4, "page": 2})
    assert len(second["items"]) == 2 and second["hasMore"] is False
    assert {s["id"] for s in first["items"]}.isdisjoint(s["id"] for s in second["items"])
    assert user.ok("GET", SEARCH, params={"q": "数据", "page": 9})["total"] == 6
    only_other = user.ok("GET", SEARCH, params={"q": "数据", "agentId": other["id"]})
    assert [s["agentSlug"] for s in only_other["items"]] == ["other"]
    assert user.ok("GET", SEARCH, params={"q": "数据", "kind": "llm"})["total"] == 0

    blank = user.get(SEARCH, params={"q": "  \u3000 "})
    assert blank.status_code == 422 and blank.json()["error"]["fields"] == {"q": "enter something to search for"}
    assert user.get(SEARCH).status_code == 422
    for q in ['"', "%", "_", "5%", "(a", "NEAR*", "a\"b"]:
        assert user.get(SEARCH, params={"q": q}).status_code in (200, 422), q


def test_a_search_that_finds_nothing_runs_one_statement(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    # An empty first page means no match: the total is 0 without counting the matches again.
    start(user, "数据 report", "ok", fake_model, title="数据")
    with executed_statements() as executed:
        page = user.ok("GET", SEARCH, params={"q": "数据 咖啡"})
    assert page["total"] == 0 and page["items"] == []
    assert len([s for s, _ in executed if "hits" in s]) == 1


def test_index_follows_renames_messages_and_deletes(
    app: LiveApp, user: ApiClient, make_user: Any, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    a = start(user, "hello", "ok", fake_model, title="会议记录")
    assert found(user, "会议") == ["会议记录"]
    user.ok("PATCH", f"/api/agent-sessions/{a}", json={"title": "周报"})
    assert found(user, "会议") == [] and found(user, "周") == ["周报"]
    fake_model.push(text("明天开会"))
    chat(user, "helper", "提醒我", session_id=a)
    assert found(user, "开会") == ["周报"]
    user.ok("DELETE", f"/api/agent-sessions/{a}", status=204)
    assert found(user, "开会") == [] and found(user, "周") == []

    carol = make_user("carol")
    start(carol, "卡罗尔的秘密", "好的", fake_model)
    if not app.database_url:  # the SQLite index tables; PostgreSQL indexes the tables themselves
        def entries() -> int:
            return sum(app.sql(f"SELECT count(*) FROM {t} WHERE {t} MATCH ?", ('"秘密"',))[0][0]
                       for t in ("agent_messages_grams", "agent_sessions_grams"))
        assert entries() == 2  # carol's message and her session's title
        con = sqlite3.connect(app.db_path)
        try:
            register_sqlite_functions(con)
            con.execute("PRAGMA foreign_keys = ON")
            con.execute("DELETE FROM users WHERE username = 'carol'")  # cascades to sessions, messages
            con.commit()
        finally:
            con.close()
        assert app.sql("SELECT count(*) FROM agent_messages") == [(4,)]  # alice's are left
        assert entries() == 0


# --- long messages: a snippet costs its window, not the message ------------------------------------------

LONG = 99_000
FILLER = "前言写了很多别的事情……ＡＢＣ１２３，"  # full-width letters and "…", which NFKC makes longer


def long_text(at: int, hit: str, length: int = LONG) -> str:
    """``length`` characters of filler with ``hit`` starting at index ``at``."""
    filler = FILLER * (length // len(FILLER) + 1)
    return (filler[:at] + hit + filler[at + len(hit):])[:length]


def hit_of(client: ApiClient, q: str) -> dict[str, Any]:
    page = client.ok("GET", SEARCH, params={"q": q})
    assert page["total"] == 1, page
    return page["items"][0]["match"]


def test_a_long_message_is_folded_only_around_its_hit(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    early, late = 1_500, 60_000
    replies = {
        "咖啡": long_text(early, "咖啡"),  # in the head: scanned up to the hit
        "ﬁle": long_text(late, "ßﬁ㍿ＦＩＬＥ and ﬁle"),  # far in; what precedes it folds longer
        "edge": long_text(textsearch.SNIPPET_HEAD - 2, "edge"),  # across the end of the head
    }
    sids = {q: start(user, "讲讲", reply, fake_model, title="长文") for q, reply in replies.items()}
    for q, reply in replies.items():
        with folded_characters() as folded:
            match = hit_of(user, q)
        work = folded[0]
        assert match["field"] == "message" and match["role"] == "assistant", q
        # The snippet a short message would get, cut from the whole text.
        whole = textsearch.snippet(reply, parse_query(q).terms)
        assert match["snippet"] == whole.text, q
        assert [(p["text"], p["hit"]) for p in match["parts"]] == whole.pieces(), q
        assert work <= textsearch.SNIPPET_HEAD + textsearch.SNIPPET_PIECE + 2_000, (q, work)
    assert [p["text"] for p in hit_of(user, "ﬁle")["parts"] if p["hit"]] == ["ＦＩＬＥ", "ﬁle"]
    assert sids.keys() == replies.keys()


def test_a_search_over_many_long_messages_folds_a_bounded_amount(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    for i in range(12):
        start(user, f"第{i}次", long_text(40_000 + i, "烘焙"), fake_model, title=f"长文 {i}")
    with folded_characters() as folded:
        page = user.ok("GET", SEARCH, params={"q": "烘焙", "pageSize": 10})
    assert page["total"] == 12 and len(page["items"]) == 10
    for item in page["items"]:
        assert [p["text"] for p in item["match"]["parts"] if p["hit"]] == ["烘焙"]
        assert item["match"]["snippet"].startswith("…") and item["match"]["snippet"].endswith("…")
    # Each hit: its head scanned, a piece around the hit; the messages themselves are 99,000 characters.
    assert folded[0] <= 10 * (textsearch.SNIPPET_HEAD + textsearch.SNIPPET_PIECE + 1_000), folded[0]


def test_a_term_past_the_head_only_in_another_form_keeps_the_head(
    user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    # The database finds terms past the head as typed (any ASCII case), not full-width: the snippet is
    # then the message's start, unmarked, and the match is still the message.
    start(user, "讲讲", long_text(50_000, "ＣＯＦＦＥＥ"), fake_model, title="长文")
    match = hit_of(user, "coffee")
    assert match["field"] == "message" and match["snippet"].endswith("…")
    assert match["snippet"] == long_text(50_000, "ＣＯＦＦＥＥ")[:120] + "…"
    assert not any(p["hit"] for p in match["parts"])


@pytest.mark.sqlite_only(reason="the limits of SQLite's best-message pick; PostgreSQL picks it in SQL")
def test_the_best_message_looks_at_the_newest_messages_within_a_budget(
    monkeypatch: pytest.MonkeyPatch, user: ApiClient, agent: dict[str, Any], fake_model: FakeModel
) -> None:
    sid = start(user, "茶 and 咖啡 at first", "ok", fake_model, title="饮料")
    for i in range(3):
        fake_model.push(text(f"茶 reply {i}"))
        chat(user, "helper", f"question {i} " + "x" * 500, session_id=sid)
    messages = {m["content"]: m["id"] for m in user.ok("GET", f"/api/agent-sessions/{sid}")["messages"]}
    monkeypatch.setattr(search, "SESSION_FOLD_CHARS", 600)  # the newest reply and question, then the index
    with folded_characters() as folded:
        assert hit_of(user, "茶 咖啡")["messageId"] == messages["茶 and 咖啡 at first"]  # through the index
    assert folded[0] < 1_000
    monkeypatch.setattr(search, "BEST_OF", 4)  # the first exchange is no longer looked at
    assert hit_of(user, "茶 咖啡")["messageId"] == messages["茶 reply 2"]
    monkeypatch.setattr(search, "FOLD_WHOLE", 0)  # every message through the index: the same pick
    assert hit_of(user, "茶 咖啡")["messageId"] == messages["茶 reply 2"]
    monkeypatch.setattr(search, "BEST_OF", 200)
    assert hit_of(user, "茶 咖啡")["messageId"] == messages["茶 and 咖啡 at first"]
    assert hit_of(user, "茶")["messageId"] == messages["茶 reply 2"]
