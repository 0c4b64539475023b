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
    (out,) = attachment_text.texts([report], budget=1000)
    assert out == ('<attachment name="r.pdf" type="text/plain">\n'
                   "[page 1]\nfirst page\n\n[page 2]\nsecond page\n</attachment>")


def test_a_file_over_the_budget_gives_a_part_within_its_share_and_says_so() -> None:
    small = _file("small.txt", (None, "short note"))
    big = _file("big.txt", (None, "字" * 5000))
    budget = 1000
    whole, cut = attachment_text.texts([small, big], budget=budget)
    assert "short note" in whole and "note=" not in whole
    assert 'note="too long to include whole' in cut
    body = cut.split("\n", 1)[1].rsplit("\n", 1)[0]
    assert 0 < estimate_tokens(body) <= budget - small.tokens - FRAME_TOKENS
