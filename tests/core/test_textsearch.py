"""The shared text-search rules: folding, grams, query parsing and snippets; and that the database-side
functions the indexes are built with (SQLite: the Python functions themselves; PostgreSQL: the SQL
functions of migration 0007) give the same grams as Python for every kind of text."""

from __future__ import annotations

import re

from agentloft.core import textsearch
from agentloft.core.textsearch import fold, gram_set, parse_query, snippet
from tests.support import LiveApp

SEPARATORS = {chr(c) for c in range(0x110000) if chr(c).isspace() or c <= 0x20}

# Text of every kind the gram functions must agree on (PostgreSQL's lower() differs from Python's
# casefold for a few letters, such as "ß" and final sigma; each database compares its own folding with
# itself, so those only need to agree within one database).
CORPUS = [
    "数据库迁移方案，先备份。再执行！",
    "研究生命起源 「引号」、顿号…省略",
    "カタカナとひらがな ｶﾀｶﾅ ﾊﾝｶｸ",
    "한국어 문서 한글",
    "ＧＰＴ４ ＡＩ ２０２４年 ＡＢＣ－ｘｙｚ",
    "Mixed AI咖啡机 and data-base_v2 (test) 50% \"quoted\" it's",
    "tabs\tnew\nlines\r\x0bvt\x0cff\x1cfs\x85nel\u2028ls\u2029ps",
    "spaces\u00a0nb\u2003em\u3000ideo\u1680ogham\u202fnn\u205fmm",
    "control\x01chars\x07here\x1b!",
    "emoji 😀👍🏽 astral 𠀀𠀁 combining e\u0301 ﬁ ligature ①②",
    "CJK compatibility 兀 豈 and radicals ⼈⼊",
    "a",
    "",
]


def test_separators_are_python_whitespace_and_ascii_controls() -> None:
    mine = {chr(c) for c in range(0x110000) if re.fullmatch(textsearch._WS_SPLIT, chr(c))}
    assert mine == SEPARATORS


def test_fold() -> None:
    assert fold("ＡＢＣ１２３") == "abc123"
    assert fold("ｶﾀｶﾅ") == "カタカナ"
    assert fold("數據") == "數據" and fold("数据") == "数据"  # traditional and simplified stay apart
    assert fold("Straße ΣΊΣΥΦΟΣ") == "strasse σίσυφοσ"  # case folding, no final-sigma context
    assert fold("，。、") == ",。、"


def test_grams_are_characters_and_pairs_without_separators() -> None:
    assert gram_set("咖啡，茶") == {"咖", "啡", ",", "茶", "咖啡", "啡,", ",茶"}
    assert gram_set("ab cd") == {"a", "b", "c", "d", "ab", "cd"}
    assert gram_set("ab\u3000cd") == gram_set("ab\x01cd") == gram_set("ab cd")
    assert gram_set("ab", "cd") == gram_set("ab cd")  # no pair spans two texts
    assert gram_set("ＡＢ") == {"a", "b", "ab"}
    assert gram_set(None, "") == set()
    assert textsearch.grams("b a ab") == "a ab b"  # sorted: the same text always gives the same string


def test_parse_query() -> None:
    q = parse_query('  ＡＩ\u3000"咖啡"  ai 咖啡 x\x01y ')
    assert [(t.typed, t.text, t.key) for t in q.terms] == [
        ("ＡＩ", "AI", "ai"), ("咖啡", "咖啡", "咖啡"), ("x", "x", "x"), ("y", "y", "y")]
    assert [t.short for t in parse_query("咖 咖啡 数据库 AI api").terms] == [True, True, False, True, False]
    assert parse_query('" "  ""').empty and parse_query(None).empty
    assert len(parse_query(" ".join(f"w{i}" for i in range(20))).terms) == textsearch.MAX_TERMS


def test_snippet_marks_every_hit_and_cuts_around_the_first() -> None:
    text = "开头。" * 20 + "我们喝ＣＯＦＦＥＥ和咖啡，\n\n也喝茶。" + "结尾。" * 40
    cut = snippet(text, parse_query("coffee 咖啡").terms, width=40, before=5)
    assert cut.text.startswith("…") and cut.text.endswith("…") and "\n" not in cut.text
    assert [p for p, hit in cut.pieces() if hit] == ["ＣＯＦＦＥＥ", "咖啡"]
    assert "".join(p for p, _ in cut.pieces()) == cut.text
    whole = snippet("短文", parse_query("短").terms)
    assert whole.text == "短文" and whole.pieces() == [("短", True), ("文", False)]
    assert snippet("nothing", parse_query("x").terms).pieces() == [("nothing", False)]


def test_database_functions_agree_with_python(app: LiveApp) -> None:
    """On PostgreSQL this compares migration 0007's SQL functions with Python's; on SQLite the index
    triggers call the Python functions themselves, so this checks they are installed as such."""
    postgres = bool(app.database_url)
    for text in CORPUS:
        (db_grams, db_fold), = app.sql("SELECT agentloft_grams(?), agentloft_fold(?)", (text, text))
        grams = set(db_grams) if postgres else set(db_grams.split(" ")) - {""}
        assert grams == gram_set(text), text
        assert db_fold == fold(text), text
