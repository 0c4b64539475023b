"""The token estimate: about one token per CJK character, about four Latin characters per token."""

from __future__ import annotations

from agentloft.documents.tokens import estimate_tokens


def test_latin_is_four_characters_per_token() -> None:
    assert estimate_tokens("") == 0 and estimate_tokens(None) == 0
    assert estimate_tokens("abcd") == 1 and estimate_tokens("abcde") == 2
    assert estimate_tokens("x" * 4000) == 1000


def test_cjk_is_about_one_token_per_character() -> None:
    assert estimate_tokens("记录重要的决策") == 7
    assert estimate_tokens("ひらがなカタカナ") == 8
    assert estimate_tokens("한국어") == 3
    assert estimate_tokens("你好，世界！") == 6  # full-width punctuation counts too
    assert estimate_tokens("𠀀𠀁") == 2  # Extension B, outside the basic plane


def test_mixed_text_adds_both() -> None:
    assert estimate_tokens("用 Python 写") == 2 + 2  # 2 Han + " Python " (8 chars) / 4
    chinese, english = "数据库迁移" * 100, "database migration " * 26
    assert len(chinese) == 500 and abs(len(english) - 500) < 10
    assert estimate_tokens(chinese) > 3.5 * estimate_tokens(english)
