"""The shared text-search rules: folding, grams, query parsing and snippets; and that the database-side
functions the indexes are built with (SQLite: the Python functions themselves; PostgreSQL: the SQL
functions of migration 0007) give the same grams as Python for every kind of text."""

from __future__ import annotations

import asyncio
import random
import re
import threading
from collections.abc import Sequence

from agentloft.core import textsearch
from agentloft.core.textsearch import Term, fold, gram_set, parse_query, snippet
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


def _reference_snippet(text: str, terms: Sequence[Term], width: int, before: int) -> tuple[str, list[tuple[int, int]]]:
    """The snippet rule spelled out plainly: fold the whole text character by character, mark every
    occurrence, cut around the first (what ``snippet`` computes over a window only)."""
    flat = " ".join(text.split())
    folded, where = "", []
    for i, ch in enumerate(flat):
        folded += fold(ch)
        where += [i] * len(fold(ch))
    spans = []
    for key in (t.key for t in terms):
        at = folded.find(key)
        while at >= 0:
            spans.append((where[at], where[at + len(key) - 1] + 1))
            at = folded.find(key, at + len(key))
    merged: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], e))
        else:
            merged.append((s, e))
    start = max(0, merged[0][0] - before) if merged else 0
    if start and merged and merged[0][1] - start > width:
        start = merged[0][0]
    end = min(len(flat), start + width)
    prefix, suffix = "…" if start else "", "…" if end < len(flat) else ""
    shift = len(prefix) - start
    return prefix + flat[start:end] + suffix, [(max(s, start) + shift, min(e, end) + shift)
                                               for s, e in merged if s < end and e > start]


# Characters whose folding grows (ß→ss, ﬁ→fi, ㍿→株式会社, …→...), full-width ones, a combining accent.
_EDGY = [*"咖啡茶ßﬁ㍿…ＡａAaSsfie\u0301 \n", "ss", "fi", "ＦＩ"]
_PLAIN = [*"的了是在我有他这中大来上国个到说们为子和你地出道也时年", " "]


def test_snippet_folds_only_up_to_the_first_hit_and_its_window() -> None:
    rng = random.Random(7)
    for n in range(1500):
        dense = n % 2 == 0  # short texts full of hits, or long ones with a few, across fold blocks
        length = rng.randint(0, 300) if dense else rng.randint(400, 3000)
        text = "".join(rng.choice(_EDGY) if dense or rng.random() < 0.004 else rng.choice(_PLAIN)
                       for _ in range(length))
        q = " ".join("".join(rng.choice(_EDGY[:-5]) for _ in range(rng.randint(1, 3))) for _ in range(2))
        terms = parse_query(q).terms
        if not terms:
            continue
        width, before = rng.choice([(120, 30), (40, 5), (7, 0)])
        cut = snippet(text, terms, width, before)
        assert (cut.text, cut.highlights) == _reference_snippet(text, terms, width, before), (text, q)


def test_first_hit_across_fold_blocks() -> None:
    block = textsearch._SCAN_BLOCK  # pyright: ignore[reportPrivateUsage]
    for lead in (block - 3, block - 2, block - 1, block, block + 1):
        for piece, q in (("ﬁle", "file"), ("straße", "strasse"), ("㍿咖啡", "会社咖啡"), ("ＦＩＬＥ", "fi")):
            text = "的" * lead + piece + "的" * 50
            assert textsearch.first_hit(text, [t.key for t in parse_query(q).terms]) == lead, (lead, piece)
            cut = snippet(text, parse_query(q).terms)
            assert cut.text[cut.highlights[0][0]] == piece[0], (lead, piece)
    assert textsearch.first_hit("ﬁ", ["i"]) == 0 and textsearch.first_hit("abc", ["x"]) is None


def test_a_piece_of_a_text_says_where_it_was_cut() -> None:
    terms = parse_query("咖啡").terms
    piece = snippet("开头咖啡结尾", terms, cut_before=True, cut_after=True)
    assert piece.text == "…开头咖啡结尾…" and piece.pieces() == [("…开头", False), ("咖啡", True), ("结尾…", False)]
    assert snippet("开头咖啡结尾", terms).text == "开头咖啡结尾"


def test_no_character_folds_to_nothing() -> None:
    # A snippet looks for a key's occurrences within its own length of text past the first hit.
    assert all(fold(chr(c)) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
    assert textsearch.fold_each("Aßﬁ咖") == "assfi咖" == "".join(fold(c) for c in "Aßﬁ咖")


def test_large_snippet_work_runs_off_the_event_loop() -> None:
    async def threads() -> tuple[int, int, int]:
        small = await textsearch.off_loop(textsearch.OFF_LOOP_CHARS, threading.get_ident)
        large = await textsearch.off_loop(textsearch.OFF_LOOP_CHARS + 1, threading.get_ident)
        return threading.get_ident(), small, large

    loop, small, large = asyncio.run(threads())
    assert small == loop and large != loop


def test_database_functions_agree_with_python(app: LiveApp) -> None:
    """On PostgreSQL this compares migration 0007's SQL functions with Python's; on SQLite the index
    triggers call the Python functions themselves, so this checks they are installed as such."""
    postgres = bool(app.database_url)
    for text in CORPUS:
        (db_grams, db_fold), = app.sql("SELECT agentloft_grams(?), agentloft_fold(?)", (text, text))
        grams = set(db_grams) if postgres else set(db_grams.split(" ")) - {""}
        assert grams == gram_set(text), text
        assert db_fold == fold(text), text
