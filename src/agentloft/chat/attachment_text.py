"""The text a model is given for the files attached to one message: pure functions, no database.

Each file's text names the file (and its pages where it has them), so the model can say where something
came from. The files of one message share one budget, ``AGENTLOFT_ATTACHMENT_TOKEN_BUDGET``, counted with
the estimate the documents use (``documents.tokens.estimate_tokens``: one token per CJK character, one per
four other characters). Files that fit what is left of it go whole, in the order they were attached; the
others share the rest equally, and each of them gives the model what fits of its share, saying that it
is only a part.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from agentloft.documents.tokens import estimate_tokens
from agentloft.files.service import Extracted, Page

# What one file's framing (its opening and closing lines) costs, counted against the budget.
FRAME_TOKENS = 30


@dataclass(frozen=True)
class FileText:
    """One attached file's text as read (``files.service.extracted``), with the name it is shown by."""

    name: str
    media_type: str
    extracted: Extracted

    @property
    def tokens(self) -> int:
        return sum(estimate_tokens(p.text) for p in self.extracted.pages) + FRAME_TOKENS


def _attrs(file: FileText) -> str:
    return f'name="{_quoted(file.name)}" type="{file.media_type}"'


def _quoted(value: str) -> str:
    return value.replace("&", "&amp;").replace('"', "&quot;")


def _page_text(page: Page, paged: bool) -> str:
    return f"[page {page.number}]\n{page.text}" if paged and page.number is not None else page.text


def whole(file: FileText) -> str:
    """The file's whole text, each page headed by its number where the format has pages."""
    pages = file.extracted.pages
    paged = any(p.number is not None for p in pages)
    body = "\n\n".join(_page_text(p, paged) for p in pages if p.text)
    return f"<attachment {_attrs(file)}>\n{body}\n</attachment>"


def _head(file: FileText, budget: int) -> list[Page]:
    """The file's first pages, the last one cut, within ``budget`` tokens."""
    kept: list[Page] = []
    left = budget
    for page in file.extracted.pages:
        cost = estimate_tokens(page.text)
        if cost <= left:
            kept.append(page)
            left -= cost
            continue
        cut = _cut(page.text, left)
        if cut:
            kept.append(Page(page.number, cut))
        break
    return kept


def _cut(text: str, budget: int) -> str:
    """The longest start of ``text`` within ``budget`` tokens (a binary search on the estimate)."""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate_tokens(text[:mid]) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo]


def part(file: FileText, budget: int) -> str:
    """What fits of a file too large for its share of the budget, saying it is a part."""
    pages = _head(file, max(budget - FRAME_TOKENS, 0))
    paged = any(p.number is not None for p in file.extracted.pages)
    body = "\n\n".join(_page_text(p, paged) for p in pages if p.text)
    note = "too long to include whole; its beginning follows"
    return f'<attachment {_attrs(file)} note="{note}">\n{body}\n</attachment>'


def texts(files: Sequence[FileText], budget: int) -> list[str]:
    """The text of each file, in order, within ``budget`` tokens together (see the module docstring)."""
    left = budget
    fits: set[int] = set()
    for i, file in enumerate(files):
        if file.tokens <= left:
            fits.add(i)
            left -= file.tokens
    over = [i for i in range(len(files)) if i not in fits]
    share = left // len(over) if over else 0
    return [whole(f) if i in fits else part(f, share) for i, f in enumerate(files)]


def gone(name: str) -> str:
    """What the model reads in place of a file deleted since it was attached."""
    return f'<attachment name="{_quoted(name)}" note="deleted by the user; its content is no longer available"/>'
