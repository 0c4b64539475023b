"""Ranking over real databases: a ranked OR, so the chunk holding the question's rarer words comes first
(English), two-character Chinese words are found without segmentation and ranked, and a search never
leaves the collections it was asked for."""

from __future__ import annotations

from typing import Any

from tests.knowledge.helpers import indexed, search
from tests.support import ApiClient, LiveApp

ENGLISH = [
    ("keys.md", "# Keys\n\nRotate the signing key every ninety days; the old key stays valid for a week."),
    ("doors.md", "# Doors\n\nThe key to the server room is at the front desk."),
    ("lunch.md", "# Lunch\n\nLunch is served at noon every day in the canteen."),
    ("deploy.md", "# Deploy\n\nDeploys happen every day after the tests pass."),
]
CHINESE = [
    ("index.md", "# 索引\n\n数据库的索引能让查询更快。建立索引之前，先看查询计划。"),
    ("backup.md", "# 备份\n\n数据库每天凌晨备份一次，备份保留三十天。"),
    ("people.md", "# 人员\n\n新同事入职第一天领取门卡和电脑。"),
    ("mixed.md", "# 指引\n\n查询表格时引用来源。"),  # holds 索 and 引 apart, never the pair 索引
]


def names(found: dict[str, Any]) -> list[str]:
    return [h["fileName"] for h in found["items"]]


def test_the_chunk_with_the_rarer_words_ranks_first(user: ApiClient) -> None:
    kb = indexed(user, *ENGLISH)
    assert names(search(user, kb, "How often do we rotate the signing key?"))[:2] == ["keys.md", "doors.md"]
    assert names(search(user, kb, "server room key"))[0] == "doors.md"
    # ranked OR: a question sharing one word with a chunk still finds it
    assert names(search(user, kb, "canteen opening hours")) == ["lunch.md"]
    scores = [h["score"] for h in search(user, kb, "every day key")["items"]]
    assert scores == sorted(scores, reverse=True) and len(scores) == 4


def test_a_two_character_chinese_word_is_found_and_ranked(user: ApiClient) -> None:
    kb = indexed(user, *CHINESE)
    assert names(search(user, kb, "索引")) == ["index.md"]  # not mixed.md, which holds 索 and 引 apart
    assert names(search(user, kb, "怎么建立数据库索引"))[0] == "index.md"
    assert names(search(user, kb, "备份保留多久"))[0] == "backup.md"
    assert names(search(user, kb, "门卡")) == ["people.md"]
    assert names(search(user, kb, "数据库"))[:2] in (["index.md", "backup.md"], ["backup.md", "index.md"])


def test_top_k_limits_the_answer(user: ApiClient) -> None:
    kb = indexed(user, *ENGLISH)
    assert len(search(user, kb, "every day key", top_k=2)["items"]) == 2


def test_a_search_stays_in_its_collection(user: ApiClient) -> None:
    first = indexed(user, *ENGLISH, name="English")
    second = indexed(user, *CHINESE, name="Chinese")
    assert search(user, second, "signing key")["items"] == []
    assert search(user, first, "索引")["items"] == []


def test_a_token_most_chunks_hold_is_left_out_unless_it_is_all_there_is(user: ApiClient, app: LiveApp) -> None:
    kb = indexed(user, *[(f"{i}.md", f"Handbook page {i}: " + ("key rotation" if i == 2 else "lunch"))
                         for i in range(4)])
    app.sql("ANALYZE knowledge_chunks")  # PostgreSQL's statistics say how common a token is
    # "handbook" is in every chunk: left out, so only the chunk with the other word is a match
    assert names(search(user, kb, "handbook rotation")) == ["2.md"]
    assert len(search(user, kb, "handbook")["items"]) == 4  # the rarest token is kept
    # what was kept is in no chunk ("migration"): the common token finds them after all
    assert len(search(user, kb, "handbook migration")["items"]) == 4
