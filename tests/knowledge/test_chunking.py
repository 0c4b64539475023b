"""Chunking units: structure first (pages, headings, paragraphs, sentences in English and Chinese), the
size limits in approximate tokens, and nothing of the text lost or reordered."""

from __future__ import annotations

import re

from agentloft.files.service import Extracted, Page
from agentloft.knowledge.chunking import MAX_TOKENS, TARGET_TOKENS, chunk, sentences, weight


def pages(*texts: str, numbered: bool = False) -> Extracted:
    return Extracted(pages=[Page(i + 1 if numbered else None, t) for i, t in enumerate(texts)])


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def test_weight_counts_a_chinese_character_as_four_latin_ones() -> None:
    assert weight("abcd" * 10) == 10
    assert weight("数据" * 5) == 10
    assert weight("") == 0


def test_a_short_text_is_one_chunk() -> None:
    assert [(c.ord, c.page, c.text) for c in chunk(pages("Just one paragraph.\n\nAnd another."))] == [
        (0, None, "Just one paragraph.\n\nAnd another.")]


def test_pages_are_never_mixed_and_keep_their_number() -> None:
    chunks = chunk(pages("first page", "", "third page", numbered=True))
    assert [(c.ord, c.page, c.text) for c in chunks] == [(0, 1, "first page"), (1, 3, "third page")]


def test_headings_start_chunks_and_lead_each_with_their_path() -> None:
    text = "# Guide\n\nIntro.\n\n## Install\n\nRun it.\n\n### Linux\n\nUse apt.\n\n## Use\n\nCall it."
    assert [c.text for c in chunk(pages(text))] == [
        "Guide\n\nIntro.", "Guide › Install\n\nRun it.", "Guide › Install › Linux\n\nUse apt.",
        "Guide › Use\n\nCall it."]


def test_a_hash_inside_a_code_fence_is_no_heading() -> None:
    text = "# Script\n\n```\n# a comment\nrun()\n```"
    assert [c.text for c in chunk(pages(text))] == ["Script\n\n```\n# a comment\nrun()\n```"]


def test_long_sections_are_packed_by_paragraph_up_to_the_target() -> None:
    paragraph = "Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 6  # ~85 tokens
    text = "\n\n".join(f"{i} {paragraph}" for i in range(20))
    chunks = chunk(pages(text))
    assert len(chunks) > 5
    assert all(weight(c.text) <= TARGET_TOKENS for c in chunks)
    assert all(c.text.count("\n\n") + 1 == len(re.findall(r"(?:^|\n\n)\d+ ", c.text)) for c in chunks)
    assert words(" ".join(c.text for c in chunks)) == words(text)  # nothing lost, nothing reordered


def test_a_long_chinese_paragraph_is_cut_at_its_sentence_ends() -> None:
    sentence = "知识库把文件切成小块并建立索引，以便智能体检索相关内容。"  # 27 characters
    text = sentence * 40  # one paragraph of ~1,100 tokens
    chunks = chunk(pages(text))
    assert len(chunks) >= 4
    assert all(c.text.endswith("。") and weight(c.text) <= MAX_TOKENS for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_sentences_split_in_both_languages() -> None:
    assert sentences("One. Two? Three! 四。五！六？“七。”八") == ["One. ", "Two? ", "Three! ", "四。", "五！", "六？",
                                                       "“七。”", "八"]
    assert sentences("Pi is 3.14 today.") == ["Pi is 3.14 today."]


def test_a_sentence_without_ends_is_cut_at_spaces_under_the_limit() -> None:
    text = " ".join(f"word{i}" for i in range(2000))
    chunks = chunk(pages(text))
    assert all(weight(c.text) <= MAX_TOKENS for c in chunks)
    assert words(" ".join(c.text for c in chunks)) == words(text)  # no word cut in two


def test_text_without_any_space_is_cut_at_the_limit() -> None:
    text = "x" * 10000
    chunks = chunk(pages(text))
    assert all(weight(c.text) <= MAX_TOKENS for c in chunks)
    assert "".join(c.text for c in chunks) == text


def test_a_small_tail_joins_the_chunk_before_it() -> None:
    paragraph = "A sentence of some length that fills the chunk nicely. " * 12  # ~170 tokens
    chunks = chunk(pages(f"{paragraph}\n\nTail."))
    assert len(chunks) == 1 and chunks[0].text.endswith("\n\nTail.")


def test_a_heading_without_a_body_is_kept() -> None:
    assert [c.text for c in chunk(pages("# Only a title"))] == ["Only a title"]


def test_empty_text_gives_no_chunk() -> None:
    assert chunk(pages("", "  \n\n ")) == []
