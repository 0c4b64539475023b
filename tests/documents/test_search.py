"""Full-text search through the API: ranked, Chinese and English, short terms, odd characters, kept in
step with updates and deletes, scoped to the user."""

from __future__ import annotations

import pytest

from agentloft.documents import search
from tests.documents.conftest import create_doc
from tests.support import ApiClient, LiveApp

BASE = "/api/agent-documents"


def _titles(client: ApiClient, q: str, **params) -> list[str]:
    page = client.ok("GET", BASE, params={"q": q, **params})
    assert page["total"] == len(page["items"]) or page["hasMore"]
    return [d["title"] for d in page["items"]]


def test_english_ranking_puts_title_hits_first(user: ApiClient) -> None:
    create_doc(user, title="Groceries", content="Buy milk. Also read about the migration later.")
    create_doc(user, title="Database migration plan", content="Steps for moving to PostgreSQL.")
    create_doc(user, title="Unrelated", content="Nothing to see.")
    create_doc(user, title="Tagged", content="something", tags="migration")
    assert _titles(user, "migration") == ["Database migration plan", "Tagged", "Groceries"]
    assert _titles(user, "migrat")[0] == "Database migration plan"  # inside a word
    assert _titles(user, "POSTGRESQL") == ["Database migration plan"]  # any case
    assert _titles(user, "migration milk") == ["Groceries"]  # every term must match


def test_ranking_title_terms_then_column_hits_then_newest(user: ApiClient) -> None:
    create_doc(user, title="Diary", content="a kiwi and a plum", summary="nothing to see")
    create_doc(user, title="Older list", content="kiwi, plum")  # the summary defaults to the content
    create_doc(user, title="Kiwi plum tart", content="baking")
    create_doc(user, title="Kiwi jam", content="with plum")
    create_doc(user, title="Pantry", content="plum only", tags="kiwi")
    create_doc(user, title="Shopping", content="kiwi, plum")
    assert _titles(user, "kiwi plum") == [
        "Kiwi plum tart", "Kiwi jam",  # both terms in the title, then one
        "Pantry",  # one term in the tags, one in the summary
        "Shopping", "Older list",  # both in the summary: newest first
        "Diary",  # in the content only
    ]


def test_chinese_search_and_ranking(user: ApiClient) -> None:
    create_doc(user, title="周报", content="本周完成了数据库迁移，下周继续优化搜索。")
    create_doc(user, title="数据库迁移方案", content="先备份，再执行迁移脚本。")
    create_doc(user, title="English note", content="database migration in English only")
    assert _titles(user, "数据库迁移") == ["数据库迁移方案", "周报"]
    assert _titles(user, "优化搜索") == ["周报"]
    assert _titles(user, "迁移")[:2] == ["数据库迁移方案", "周报"]  # two characters: below a trigram
    assert _titles(user, "周") == ["周报"]  # a single character
    assert _titles(user, "数据库 备份") == ["数据库迁移方案"]
    assert _titles(user, "迁移 English") == []
    assert _titles(user, "database 迁移") == []
    assert _titles(user, "database migration") == ["English note"]


def test_short_terms_combine_with_long_ones(user: ApiClient) -> None:
    create_doc(user, title="AI roadmap", content="Models and evaluation for the API.")
    create_doc(user, title="Go services", content="We write the API in Go.")
    create_doc(user, title="Chat bots", content="Bots that use ai models.")
    assert _titles(user, "AI") == ["AI roadmap", "Chat bots"]  # title hits first, then newest
    assert _titles(user, "API Go") == ["Go services"]
    assert _titles(user, "roadmap AI") == ["AI roadmap"]
    assert sorted(_titles(user, "models ai")) == ["AI roadmap", "Chat bots"]
    assert _titles(user, "bots ai") == ["Chat bots"]


def test_odd_characters_are_literal(user: ApiClient) -> None:
    create_doc(user, title="Discount", content="Save 50% today with code \"NEAR\" AND more_stuff")
    create_doc(user, title="Other", content="Save 50 dollars")
    for q in ['"NEAR"', "50%", "AND more_stuff", "NEAR*", "(code)", "-save", "col:umn"]:
        r = user.get(BASE, params={"q": q})
        assert r.status_code == 200, (q, r.text)
    assert _titles(user, "50%") == ["Discount"]
    assert _titles(user, '"NEAR"') == ["Discount"]
    assert _titles(user, "more_stuff") == ["Discount"]
    assert _titles(user, "_s") == ["Discount"]  # underscore is not a wildcard
    assert user.ok("GET", BASE, params={"q": "   "})["total"] == 2  # no terms: plain listing


def test_index_follows_updates_and_deletes(app: LiveApp, user: ApiClient) -> None:
    doc = create_doc(user, title="Kiwi", content="apples and pears")
    assert _titles(user, "pears") == ["Kiwi"]
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "bananas only"})
    assert _titles(user, "pears") == [] and _titles(user, "bananas") == ["Kiwi"]
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"title": "Mango"})
    assert _titles(user, "Kiwi") == [] and _titles(user, "mango") == ["Mango"]
    user.ok("DELETE", f"{BASE}/{doc['id']}", status=204)
    assert _titles(user, "bananas") == []
    if not app.database_url:  # the SQLite full-text index (PostgreSQL indexes the table itself)
        assert app.sql("SELECT count(*) FROM agent_documents_fts WHERE agent_documents_fts MATCH 'bananas'") == [(0,)]


def test_search_is_scoped_to_the_user_with_type_and_paging(user: ApiClient, bob: ApiClient) -> None:
    for i in range(3):
        create_doc(user, title=f"launch {i}", content="rocket launch", type="memory" if i else "document")
    create_doc(bob, title="bob launch", content="rocket launch")
    page = user.ok("GET", BASE, params={"q": "launch", "pageSize": 2})
    assert page["total"] == 3 and len(page["items"]) == 2 and page["hasMore"] is True
    assert all(t.startswith("launch") for t in _titles(user, "rocket"))
    assert _titles(user, "launch", type="document") == ["launch 0"]
    assert _titles(bob, "rocket") == ["bob launch"]


@pytest.mark.sqlite_only(reason="SQLite ranks only the newest RANK_WINDOW matches; PostgreSQL ranks every match")
def test_paging_through_many_matches_ranks_the_newest_window(
    user: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A small window makes the boundary visible: the newest 3 matches are ranked, older ones follow.
    monkeypatch.setattr(search, "RANK_WINDOW", 3)
    titles = ["plain 0", "kiwi in title 1", "plain 2", "plain 3", "kiwi in title 4", "plain 5", "plain 6"]
    for i, title in enumerate(titles):
        create_doc(user, title=title, content=f"kiwi fruit number {i}", type="memory" if i % 2 else "document")
    seen: list[str] = []
    for page in (1, 2, 3):
        got = user.ok("GET", BASE, params={"q": "kiwi", "pageSize": 3, "page": page})
        assert got["total"] == 7
        seen += [d["title"] for d in got["items"]]
    assert seen == ["kiwi in title 4", "plain 6", "plain 5", "plain 3", "plain 2", "kiwi in title 1", "plain 0"]
    memory = user.ok("GET", BASE, params={"q": "kiwi", "type": "memory", "pageSize": 2})
    assert memory["total"] == 3 and [d["title"] for d in memory["items"]] == ["kiwi in title 1", "plain 5"]
    rest = user.ok("GET", BASE, params={"q": "kiwi", "type": "memory", "pageSize": 2, "page": 2})
    assert [d["title"] for d in rest["items"]] == ["plain 3"]
    assert user.ok("GET", BASE, params={"q": "kiwi", "page": 9})["items"] == []
