"""The text a model is given for the files attached to one message: pure functions, no database.

Each file's text names the file (and its pages where it has them), so the model can say where something
came from. The files of one message share one budget, ``AGENTLOFT_ATTACHMENT_TOKEN_BUDGET``, counted with
the estimate the documents use (``documents.tokens.estimate_tokens``: one token per CJK character, one per
four other characters). Files that fit what is left of it go whole, in the order they were attached; the
others share the rest equally, and each of them gives the model the chunks (``knowledge.chunking``, as
collections are cut) most relevant to the message that fit its share, in the file's order and saying
that they are only parts. Relevance is BM25 over the knowledge index's tokens, computed here over the
one file's chunks: nothing is indexed for a file that is only attached.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from agentloft.documents.tokens import estimate_tokens
from agentloft.files.service import Extracted, Page
from agentloft.knowledge.chunking import Chunk, chunk
from agentloft.knowledge.terms import query_tokens, tokens

# What one file's framing (its opening and closing lines) costs, counted against the budget.
FRAME_TOKENS = 30
# BM25's usual constants (term frequency saturation, length normalisation).
BM25_K1 = 1.2
BM25_B = 0.75
# Between two parts that are not next to each other in the file.
GAP = "[…]"


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


def _ranked(chunks: Sequence[Chunk], query: str) -> list[Chunk]:
    """The chunks that match ``query``, best first: BM25 over the knowledge index's tokens
    (``knowledge.terms``, a ranked OR, so a question need not share every word with its answer), ties in
    file order. Chunks matching none of its tokens are left out, unless none matches at all (or the query
    has no tokens): then all of them in the file's order, its beginning first."""
    wanted = query_tokens(query)
    if not wanted:
        return list(chunks)
    counts = [Counter(tokens(c.text)) for c in chunks]
    lengths = [sum(c.values()) for c in counts]
    average = (sum(lengths) / len(lengths)) or 1.0
    n = len(chunks)
    idf = {t: math.log(1 + (n - df + 0.5) / (df + 0.5))
           for t in wanted if (df := sum(1 for c in counts if t in c))}

    def score(i: int) -> float:
        norm = BM25_K1 * (1 - BM25_B + BM25_B * lengths[i] / average)
        return sum(w * counts[i][t] * (BM25_K1 + 1) / (counts[i][t] + norm) for t, w in idf.items() if t in counts[i])

    scores = [score(i) for i in range(n)]
    order = sorted((i for i in range(n) if scores[i] > 0), key=lambda i: (-scores[i], i))
    return [chunks[i] for i in order] if order else list(chunks)


def _relevant(file: FileText, budget: int, query: str) -> list[Chunk]:
    """The chunks of the file most relevant to ``query`` that fit ``budget`` tokens, in file order."""
    kept: list[Chunk] = []
    left = budget
    for candidate in _ranked(chunk(file.extracted), query):
        cost = estimate_tokens(candidate.text)
        if cost <= left:
            kept.append(candidate)
            left -= cost
    return sorted(kept, key=lambda c: c.ord)


def part(file: FileText, budget: int, query: str) -> str:
    """The parts of a file too large for its share of the budget most relevant to the message (``query``),
    in the file's order, each with its page where the format has pages, saying it is only a part."""
    paged = any(p.number is not None for p in file.extracted.pages)
    body, last = "", None
    for piece in _relevant(file, max(budget - FRAME_TOKENS, 0), query):
        gap = "" if last is None else ("\n\n" if piece.ord == last + 1 else f"\n{GAP}\n")
        body, last = body + gap + _page_text(Page(piece.page, piece.text), paged), piece.ord
    note = "too long to include whole; the parts most relevant to the message follow"
    return f'<attachment {_attrs(file)} note="{note}">\n{body}\n</attachment>'


def texts(files: Sequence[FileText], budget: int, query: str) -> list[str]:
    """The text of each file, in order, within ``budget`` tokens together (see the module docstring);
    ``query`` (the message) decides which parts of a file too large for it are given."""
    left = budget
    fits: set[int] = set()
    for i, file in enumerate(files):
        if file.tokens <= left:
            fits.add(i)
            left -= file.tokens
    over = [i for i in range(len(files)) if i not in fits]
    share = left // len(over) if over else 0
    return [whole(f) if i in fits else part(f, share, query) for i, f in enumerate(files)]


def gone(name: str) -> str:
    """What the model reads in place of a file deleted since it was attached."""
    return f'<attachment name="{_quoted(name)}" note="deleted by the user; its content is no longer available"/>'
