"""Full-text search through the API: ranked, Chinese and English, short terms, odd characters, kept in
step with updates and deletes, scoped to the user."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from agentloft.core import textsearch
from agentloft.documents import search
from tests.documents.conftest import create_doc, user_id
from tests.pg import database as pg
from tests.support import ApiClient, LiveApp, executed_statements, folded_characters

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


# --- one and two characters, scripts without spaces, folding ----------------------------------------


def test_two_characters_find_every_document_holding_the_pair(app: LiveApp, user: ApiClient) -> None:
    create_doc(user, title="研究生命起源", content="x")  # a segmenter splits 研究 / 生命 / 起源
    create_doc(user, title="Notes", content="今天喝了咖啡。")
    create_doc(user, title="Tagged", content="x", tags="咖啡,茶")
    create_doc(user, title="Summary", content="x", summary="一杯咖啡")
    create_doc(user, title="咖 啡", content="咖，啡")  # the two characters, never side by side
    create_doc(user, title="數據", content="繁體")  # traditional characters
    create_doc(user, title="数据", content="简体")
    assert sorted(_titles(user, "咖啡")) == ["Notes", "Summary", "Tagged"]
    assert _titles(user, "究生") == ["研究生命起源"]  # across what a word segmenter would split
    assert _titles(user, "生命") == ["研究生命起源"]
    assert _titles(user, "数据") == ["数据"] and _titles(user, "數據") == ["數據"]
    assert _titles(user, "据") == ["数据"] and _titles(user, "據") == ["數據"]
    assert sorted(_titles(user, "啡")) == ["Notes", "Summary", "Tagged", "咖 啡"]
    assert _titles(user, "啡咖") == []
    if not app.database_url:  # served by the gram index, not a scan
        assert app.sql("SELECT count(*) FROM agent_documents_grams WHERE agent_documents_grams MATCH ?",
                       ('"咖啡"',)) == [(3,)]


def test_kana_hangul_and_half_width_katakana(user: ApiClient) -> None:
    create_doc(user, title="カタカナ", content="ひらがなとカタカナ")
    create_doc(user, title="ｶﾀｶﾅ", content="半角")  # half-width katakana: NFKC makes them full-width
    create_doc(user, title="한국어", content="한글 문서")
    assert sorted(_titles(user, "カナ")) == ["カタカナ", "ｶﾀｶﾅ"]
    assert sorted(_titles(user, "ｶﾅ")) == ["カタカナ", "ｶﾀｶﾅ"]
    assert _titles(user, "ひ") == ["カタカナ"]
    assert _titles(user, "국어") == ["한국어"]
    assert _titles(user, "글") == ["한국어"]
    assert _titles(user, "문서 한") == ["한국어"]


def test_full_width_letters_and_digits_match_ascii(user: ApiClient) -> None:
    create_doc(user, title="模型", content="ＧＰＴ４ 和 ＡＩ，２０２４年")
    create_doc(user, title="Plain", content="GPT4 and AI in 2024")
    create_doc(user, title="Other", content="nothing here")
    for q in ("gpt4", "ＧＰＴ４", "ai", "ＡＩ", "Ai", "2024", "２０２４", "24", "４"):
        assert sorted(_titles(user, q)) == ["Plain", "模型"], q
    assert _titles(user, "２０２４年") == ["模型"]


def test_full_width_punctuation_and_spaces(user: ApiClient) -> None:
    create_doc(user, title="Menu", content="咖啡，茶。「抹茶」、豆浆")
    create_doc(user, title="Prices", content="coffee,tea")
    assert _titles(user, "啡，") == ["Menu"]  # full-width comma: NFKC makes it ","
    assert sorted(_titles(user, "，")) == ["Menu", "Prices"]
    assert _titles(user, "」、") == ["Menu"]  # CJK punctuation other than commas stays as it is
    assert _titles(user, "「抹") == ["Menu"]
    assert _titles(user, "茶。") == ["Menu"]
    assert _titles(user, "啡茶") == []  # the comma is between them
    assert _titles(user, "咖啡\u3000豆浆") == ["Menu"]  # an ideographic space separates terms
    assert _titles(user, "e,t") == ["Prices"]


def test_mixed_scripts_and_lengths(user: ApiClient) -> None:
    create_doc(user, title="咖啡 recipe", content="Brew with AI help, 数据库 notes")
    create_doc(user, title="Tea recipe", content="No coffee here, 数据 only")
    create_doc(user, title="AI咖啡机", content="smart")
    assert _titles(user, "咖啡 recipe") == ["咖啡 recipe"]  # two characters + a Latin word
    assert sorted(_titles(user, "数据 recipe")) == ["Tea recipe", "咖啡 recipe"]
    assert _titles(user, "数据库 AI") == ["咖啡 recipe"]  # three characters + two letters
    assert _titles(user, "i咖") == ["AI咖啡机"]  # a pair across scripts
    assert _titles(user, "AI咖啡") == ["AI咖啡机"]
    assert _titles(user, "啡 据") == ["咖啡 recipe"]
    assert _titles(user, "咖啡 tea") == []


def test_short_terms_rank_like_long_ones(user: ApiClient) -> None:
    create_doc(user, title="日记", content="今天的会议很长", summary="无关")
    create_doc(user, title="旧清单", content="会议，报告")  # the summary defaults to the content
    create_doc(user, title="会议报告", content="正文")
    create_doc(user, title="会议纪要", content="附报告")
    create_doc(user, title="杂项", content="报告而已", tags="会议")
    create_doc(user, title="新清单", content="会议，报告")
    assert _titles(user, "会议 报告") == [
        "会议报告", "会议纪要",  # both terms in the title, then one
        "杂项",  # one term in the tags, one in the summary
        "新清单", "旧清单",  # both in the summary: newest first
    ]
    assert _titles(user, "会议")[:2] == ["会议纪要", "会议报告"]  # title hits first, newest first


def test_short_terms_follow_updates_deletes_and_users(app: LiveApp, user: ApiClient, bob: ApiClient) -> None:
    doc = create_doc(user, title="Kiwi", content="绿茶和红茶")
    create_doc(bob, title="Bob", content="绿茶")
    assert _titles(user, "绿茶") == ["Kiwi"] and _titles(bob, "绿茶") == ["Bob"]
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"content": "乌龙"})
    assert _titles(user, "绿茶") == [] and _titles(user, "乌龙") == ["Kiwi"] and _titles(user, "茶") == []
    user.ok("DELETE", f"{BASE}/{doc['id']}", status=204)
    assert _titles(user, "乌") == []
    if not app.database_url:
        assert app.sql("SELECT count(*) FROM agent_documents_grams WHERE agent_documents_grams MATCH ?",
                       ('"乌龙"',)) == [(0,)]


def test_short_terms_count_exactly_past_a_page(user: ApiClient) -> None:
    for i in range(25):
        create_doc(user, title=f"笔记 {i}", content="测试" if i % 2 else "其他", type="memory" if i % 3 else "document")
    page = user.ok("GET", BASE, params={"q": "测试", "pageSize": 10})
    assert page["total"] == 12 and page["hasMore"] is True and len(page["items"]) == 10
    rest = user.ok("GET", BASE, params={"q": "测试", "pageSize": 10, "page": 2})
    assert len(rest["items"]) == 2 and rest["hasMore"] is False
    memory = user.ok("GET", BASE, params={"q": "测", "type": "memory"})
    assert memory["total"] == sum(1 for i in range(25) if i % 2 and i % 3)


def test_type_filter_with_short_terms_follows_type_changes(user: ApiClient) -> None:
    doc = create_doc(user, title="备忘", content="测试一下", type="memory")
    create_doc(user, title="报告", content="测试报告", type="document")
    assert _titles(user, "测", type="memory") == ["备忘"]
    assert _titles(user, "测试 报告", type="document") == ["报告"]  # long and short terms with a type
    user.ok("PUT", f"{BASE}/{doc['id']}", json={"type": "document"})
    assert _titles(user, "测", type="memory") == []
    assert sorted(_titles(user, "测", type="document")) == ["备忘", "报告"]


def _window_statements(client: ApiClient, q: str, **params: object) -> tuple[dict, list[str]]:
    """The search's page, and the statements it ran that select documents (PostgreSQL's window and
    count queries; SQLite's read its FTS tables and are not listed)."""
    with executed_statements() as executed:
        got = client.ok("GET", BASE, params={"q": q, **params})
    return got, [s for s, _ in executed if "FROM agent_documents" in s and "agent_documents_" not in s]


def test_a_search_without_a_kept_total_reads_the_matches_once(app: LiveApp, user: ApiClient,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    # PostgreSQL: the total and the window come from one statement (a count, then a window, read every
    # match's page twice); past the window, the total still comes with the older matches.
    monkeypatch.setattr(search, "RANK_WINDOW", 3)
    for i in range(7):
        create_doc(user, title=f"咖啡 {i}", content="热的" if i % 2 else "冷的")
    got, statements = _window_statements(user, "咖啡 的", pageSize=2)
    assert got["total"] == 7 and [d["title"] for d in got["items"]] == ["咖啡 6", "咖啡 5"]
    if app.database_url:
        assert len(statements) == 1 and "count(*) OVER ()" in statements[0]
    got = user.ok("GET", BASE, params={"q": "咖啡 的", "pageSize": 2, "page": 3})
    assert got["total"] == 7 and [d["title"] for d in got["items"]] == ["咖啡 2", "咖啡 1"]
    assert user.ok("GET", BASE, params={"q": "咖啡 热", "pageSize": 2})["total"] == 3
    got, statements = _window_statements(user, "咖啡 茶")
    assert got["total"] == 0 and got["items"] == []
    if app.database_url:  # an empty first page means no match: nothing to count again
        assert len(statements) == 1


def test_window_finds_the_newest_matches_when_they_are_old(app: LiveApp, user: ApiClient,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # PostgreSQL, a kept total: the newest matches are looked for among the newest documents first, and
    # the look widens when too few are there: here every match is older than the 40 documents after it.
    monkeypatch.setattr(search, "RANK_WINDOW", 3)
    monkeypatch.setattr(search, "PG_KEEP_COUNT_FROM", 1)
    for i in range(8):
        create_doc(user, title=f"旧 {i}" if i != 1 else "旧 标题 1", content="咖啡")
    for i in range(40):
        create_doc(user, title=f"new {i}", content="tea")
    first = user.ok("GET", BASE, params={"q": "咖啡", "pageSize": 4})  # counts, and keeps the count
    got, statements = _window_statements(user, "咖啡", pageSize=4)
    assert got == first and got["total"] == 8
    assert [d["title"] for d in got["items"]] == ["旧 7", "旧 6", "旧 5", "旧 4"]  # newest 3 ranked, then older
    if app.database_url:  # every look was among the newest documents (a date cut-off), none at all matches
        windows = [s.split("SELECT agent_documents.id,")[0] for s in statements if "WITH w AS" in s]
        assert len(windows) >= 2 and all("OFFSET" in w and "OVER ()" not in w for w in windows)
    got = user.ok("GET", BASE, params={"q": "咖啡 标题"})
    assert [d["title"] for d in got["items"]] == ["旧 标题 1"]


def test_window_reads_every_match_rather_than_a_wide_date_range(
    app: LiveApp, user: ApiClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # PostgreSQL, a kept total: when the next look would cover more dates per match than reading every
    # match costs, it reads every match at once (the gram index scans each date key of a range). Here 8
    # old matches sit behind 40 newer documents; at one date per match the first look (12 newest) is
    # already too wide.
    monkeypatch.setattr(search, "RANK_WINDOW", 3)
    monkeypatch.setattr(search, "PG_KEEP_COUNT_FROM", 1)
    monkeypatch.setattr(search, "PG_DATES_PER_MATCH", 1)
    for i in range(8):
        create_doc(user, title=f"旧 {i}", content="咖啡")
    for i in range(40):
        create_doc(user, title=f"new {i}", content="tea")
    user.ok("GET", BASE, params={"q": "咖啡"})  # counts, and keeps the count
    got, statements = _window_statements(user, "咖啡", pageSize=4)
    assert got["total"] == 8 and [d["title"] for d in got["items"]] == ["旧 7", "旧 6", "旧 5", "旧 4"]
    if app.database_url:  # the window query is PostgreSQL's
        windows = [s for s in statements if "WITH w AS" in s]
        assert len(windows) == 1 and "OFFSET" not in windows[0].split("SELECT agent_documents.id,")[0]


def test_a_search_folds_no_document_text_in_python(user: ApiClient) -> None:
    # Documents hold up to 200,000 characters; a search lists them with their summaries, no snippet, and
    # ranks them in SQL: nothing of a document is folded per result (only the query is).
    for i in range(3):
        create_doc(user, title=f"Long {i}", content="前言ＡＢＣ……" * 20_000 + f" 咖啡 {i}", summary="long")
    with folded_characters() as folded:
        assert _titles(user, "咖啡") == ["Long 2", "Long 1", "Long 0"]
    assert folded[0] < 100


def _fill(app: LiveApp, owner: int, n: int) -> None:
    """``n`` documents of ``owner`` written straight into the table (their index triggers fire), as an
    import leaves them: no ANALYZE after. Every third holds 咖啡, every 500th 茶叶 too."""
    now = app.stamp(datetime.now(UTC))
    app.sql(
        "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?) "
        "INSERT INTO agent_documents (id, user_id, type, title, content, summary, created_at, updated_at) "
        "SELECT 'ad_fill_' || n, ?, 'memory', 'note ' || n, "
        "CASE WHEN n % 500 = 0 THEN '咖啡 茶叶 tea' WHEN n % 3 = 0 THEN '咖啡 latte' ELSE 'plain words here' END "
        "|| ' and some more text to make the row longer than a word or two', 'summary', ?, ? FROM g",
        (n, owner, now, now))


def test_a_search_analyses_a_table_filled_since_its_last_analyze(app: LiveApp, user: ApiClient,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # PostgreSQL, a table never analysed: it assumes a user holds 0.5 % of the rows, read all of the
    # user's documents through the (user, date) index and filtered each through the gram function or
    # the LIKE (seconds for 20,000 documents). The first search analyses the plain columns; its plans
    # then use the text indexes. Autovacuum is kept off, as before its naptime. The first search of each
    # term keeps its total, the second looks for the window among the newest documents.
    monkeypatch.setattr(search, "PG_KEEP_COUNT_FROM", 5)
    monkeypatch.setattr(textsearch, "_statistics_checked", {})
    if app.database_url:
        app.sql("ALTER TABLE agent_documents SET (autovacuum_enabled = false)")
    _fill(app, user_id(user), 3_000)
    for q, total in (("茶叶", 6), ("咖", 1_004), ("茶叶 tea", 6)):
        assert user.ok("GET", BASE, params={"q": q})["total"] == total  # keeps the total
        if app.database_url:
            _assert_text_index_plans(app, user, q)
    if app.database_url:
        assert app.sql("SELECT last_analyze IS NOT NULL, last_autoanalyze FROM pg_stat_user_tables "
                       "WHERE relname = 'agent_documents'") == [(True, None)]


TEXT_INDEXES = {"idx_agent_doc_search_user_grams", "idx_agent_doc_search_trgm"}


def _filters_rows_unindexed(node: dict[str, Any]) -> bool:
    """The node filters rows through the gram function or a LIKE, and read them through no text index
    (a scan, or a bitmap of the user's or date's b-tree)."""
    text_filter = any(op in node.get("Filter", "") for op in ("agentloft_grams", "~~"))
    read = {n.get("Index Name") for n in pg.plan_nodes(node)}
    return text_filter and not read & TEXT_INDEXES


def _assert_text_index_plans(app: LiveApp, user: ApiClient, q: str) -> None:
    """Every window statement a search of ``q`` runs finds its rows through a text index: none filters
    rows it read without one through the gram function or a LIKE."""
    with executed_statements() as executed:
        user.ok("GET", BASE, params={"q": q})
    windows = [(s, p) for s, p in executed if "WITH w AS" in s]
    assert windows
    for sql, params in windows:
        plan = pg.explain(app.database_url or "", sql, params, textsearch.PG_PLAN_SETTINGS)
        assert not [n["Node Type"] for n in pg.plan_nodes(plan) if _filters_rows_unindexed(n)], q
