"""The text the model gets for attached files: whole within the shared budget, else a part that says so,
pages named, budgets counted with the CJK-aware estimate."""

from __future__ import annotations

from agentloft.chat import attachment_text
from agentloft.chat.attachment_text import FRAME_TOKENS, FileText
from agentloft.documents.tokens import estimate_tokens
from agentloft.files.service import Extracted, Page


def _file(name: str, *pages: tuple[int | None, str]) -> FileText:
    return FileText(name, "text/plain", Extracted(pages=[Page(n, t) for n, t in pages]))


def test_files_within_the_budget_go_whole_with_their_pages() -> None:
    report = _file("r.pdf", (1, "first page"), (2, "second page"))
    (out,) = attachment_text.texts([report], budget=1000, query="")
    assert out == ('<attachment name="r.pdf" type="text/plain">\n'
                   "[page 1]\nfirst page\n\n[page 2]\nsecond page\n</attachment>")


def _topics(count: int) -> str:
    """``count`` sections about different made-up things, one of them about herons."""
    sections = [f"## Item {n}\n\nThe warehouse {n} stores crates of bolts and nuts, counted every week. " * 1
                + " ".join(f"filler{n}word{k}" for k in range(120)) for n in range(count)]
    sections[count // 2] = "## Birds\n\nGrey herons migrate south to the Nile delta every autumn."
    return "\n\n".join(sections)


def test_a_file_over_the_budget_gives_its_most_relevant_chunks_within_its_share() -> None:
    small = _file("small.txt", (None, "short note"))
    big = _file("big.md", (None, _topics(60)))
    budget = 1000
    whole, cut = attachment_text.texts([small, big], budget=budget, query="Where do herons migrate?")
    assert "short note" in whole and "note=" not in whole
    assert 'note="too long to include whole; the parts most relevant to the message follow"' in cut
    body = cut.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert body == "Birds\n\nGrey herons migrate south to the Nile delta every autumn."
    assert 0 < estimate_tokens(body) <= budget - small.tokens - FRAME_TOKENS
    assert big.tokens > 10 * budget


def test_a_chinese_question_finds_its_chunk_by_two_character_words() -> None:
    sections = [f"## 第{n}节\n\n仓库{n}存放螺栓和螺母，每周清点一次。" + "填充文字" * 200 for n in range(40)]
    sections[7] = "## 鸟类\n\n苍鹭每年秋天向南迁徙到尼罗河三角洲。"
    big = _file("大文件.md", (None, "\n\n".join(sections)))
    (cut,) = attachment_text.texts([big], budget=600, query="苍鹭迁徙到哪里？")
    assert "苍鹭每年秋天向南迁徙" in cut and 'note="too long' in cut
    assert "仓库" not in cut


def test_a_message_sharing_no_word_with_the_file_gets_its_beginning() -> None:
    big = _file("big.md", (None, _topics(60)))
    (cut,) = attachment_text.texts([big], budget=500, query="hello there")
    assert cut.split("\n", 1)[1].startswith("Item 0\n\nThe warehouse 0")
