"""The lexical index's tokens: folded words, CJK characters and pairs; the query's tokens."""

from __future__ import annotations

from agentloft.knowledge.terms import MAX_TOKEN_CHARS, query_tokens, terms, tokens


def test_words_are_folded_and_split_on_everything_but_letters_and_digits() -> None:
    assert tokens("Hello, World! GPT-4 foo_bar ｆｕｌｌ Straße 3.14") == [
        "hello", "world", "gpt", "4", "foo", "bar", "full", "strasse", "3", "14"]


def test_chinese_gives_every_character_and_every_pair() -> None:
    assert tokens("数据库") == ["数", "据", "库", "数据", "据库"]
    assert tokens("用GPT4模型") == ["用", "gpt4", "模", "型", "模型"]
    assert terms("索引，检索") == "索 引 索引 检 索 检索"


def test_repeats_are_kept_for_term_frequency() -> None:
    assert terms("key key", "Key") == "key key key"


def test_overlong_tokens_are_dropped() -> None:
    assert tokens("a" * (MAX_TOKEN_CHARS + 1) + " ok") == ["ok"]


def test_a_query_asks_for_pairs_not_single_characters() -> None:
    assert query_tokens("数据库的索引") == ["数据", "据库", "库的", "的索", "索引"]
    assert query_tokens("库 索引") == ["库", "索引"]


def test_a_query_drops_function_words_unless_nothing_else_is_left() -> None:
    assert query_tokens("How do I rotate the signing key?") == ["rotate", "signing", "key"]
    assert query_tokens("what is the") == ["what", "is", "the"]
    assert query_tokens("Key KEY key") == ["key"]
    assert query_tokens("?!，。") == []
