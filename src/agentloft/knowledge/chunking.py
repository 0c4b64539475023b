"""Cutting a file's text into chunks for retrieval (pure: no database, no I/O).

``chunk(extracted)`` follows the text's structure, coarse to fine, and cuts only where it must:

1. **pages**: a chunk never spans two pages (PDF pages, slides, sheets), so its ``page`` is exact;
2. **sections**: Markdown headings (``#`` to ``######``, outside code fences) start a new chunk, and each
   chunk of a section begins with the section's heading path (``Guide › Install``) so that both the index
   and a model reading the chunk know what it is about;
3. **paragraphs** (blank lines) are packed together up to ``TARGET_TOKENS``;
4. a paragraph longer than ``MAX_TOKENS`` is cut into **sentences** (``.`` ``!`` ``?`` before a space,
   Chinese ``。！？``, line ends), packed the same way; a sentence longer than that (a table row, minified
   code) is cut at the last space before the limit, or at the limit.

Sizes are counted in approximate model tokens (``weight``): one per CJK character, one per four other
characters, which is how OpenAI's and most open tokenizers come out on English prose and Chinese text.
Counting characters instead would make Chinese chunks four times as dense as English ones.

A trailing piece smaller than a quarter of the target is merged into the previous chunk of its section
when both fit under ``MAX_TOKENS``, so a section does not end in a one-line chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentloft.knowledge.terms import is_cjk

# Measured (bench/knowledge_chunks.py, docs/benchmarks.md): the labelled passages inside longer documents
# (20 filler sentences after each), hybrid recall@5 English / Chinese and the tokens a top 5 hands the model:
# target 100: 0.762 / 0.833, ~450 tokens; 200: 0.844 / 1.000, ~950; 400: 0.944 / 1.000, ~1,900. At an
# equal budget of 1,000 tokens 400 falls to 0.738 / 0.975 (3 chunks) and 100 reaches 0.944 / 0.983 (11).
# So recall at the knowledge tool's default top 5 grows with size only by handing over more text; 200
# keeps five chunks near 1,000 tokens and Chinese recall whole. The limit lets a paragraph stay whole.
TARGET_TOKENS = 200
MAX_TOKENS = 320
HEADING_SEPARATOR = " › "

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")
_SENTENCE_END = re.compile(r"[。！？!?…]+[”’」』）)\]\"']*[ \t]*|(?<=[^\s.])\.[”’)\]\"']*(?:[ \t]+|$)|\n+")


class PageLike(Protocol):
    @property
    def number(self) -> int | None: ...

    @property
    def text(self) -> str: ...


class ExtractedLike(Protocol):
    """What ``files.service.extracted`` returns."""

    @property
    def pages(self) -> Sequence[PageLike]: ...


@dataclass(frozen=True)
class Chunk:
    ord: int
    """Its place in the file, from 0."""
    page: int | None
    text: str


def weight(text: str) -> int:
    """Approximate model tokens of ``text`` (see the module docstring)."""
    cjk = sum(1 for c in text if c >= "\u3040" and is_cjk(c))
    return cjk + (len(text) - cjk + 3) // 4


@dataclass(frozen=True)
class _Section:
    heading: str
    body: str


def _sections(text: str) -> Iterator[_Section]:
    """The page's text cut at its headings; each with the path of headings above it."""
    path: list[tuple[int, str]] = []
    body: list[str] = []
    fenced = False

    def flush() -> _Section:
        return _Section(HEADING_SEPARATOR.join(h for _, h in path), "\n".join(body).strip())

    for line in text.splitlines():
        if _FENCE.match(line):
            fenced = not fenced
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            body.append(line)
            continue
        section = flush()
        if section.body:
            yield section
        body = []
        level = len(heading.group(1))
        path = [(lvl, h) for lvl, h in path if lvl < level] + [(level, heading.group(2).strip())]
    section = flush()
    if section.body or section.heading:
        yield section if section.body else _Section(section.heading, section.heading)


def sentences(text: str) -> list[str]:
    """``text`` cut after each sentence end, each piece keeping its punctuation and trailing space."""
    out: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        if match.end() > start:
            out.append(text[start:match.end()])
            start = match.end()
    if start < len(text):
        out.append(text[start:])
    return [s for s in out if s.strip()]


def _hard_cut(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` tokens, cut at the last space before the limit if any."""
    out: list[str] = []
    start = 0
    while weight(text[start:]) > limit:
        used = 0
        end = start
        while end < len(text) and used < limit * 4:
            used += 4 if is_cjk(text[end]) else 1
            end += 1
        space = text.rfind(" ", start + 1, end)
        cut = space + 1 if space > start + (end - start) // 2 else end
        out.append(text[start:cut])
        start = cut
    out.append(text[start:])
    return [p for p in out if p.strip()]


def _units(body: str, limit: int) -> Iterator[tuple[str, str]]:
    """Paragraphs, or the sentences (or cut pieces) of those too long, each with the text that joins it
    to the one before."""
    for paragraph in _PARAGRAPH_BREAK.split(body):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if weight(paragraph) <= limit:
            yield paragraph, "\n\n"
            continue
        joiner = "\n\n"
        for sentence in sentences(paragraph):
            for piece in ([sentence] if weight(sentence) <= limit else _hard_cut(sentence, limit)):
                yield piece, joiner
                joiner = ""


def _pack(section: _Section, target: int, limit: int) -> list[str]:
    head = f"{section.heading}\n\n" if section.heading and section.body != section.heading else ""
    room = max(limit - weight(head), limit // 2)
    goal = max(target - weight(head), target // 2)
    pieces: list[str] = []
    current = ""
    for unit, joiner in _units(section.body, room):
        joined = f"{current}{joiner}{unit}" if current else unit
        if current and weight(joined) > goal:
            pieces.append(current)
            joined = unit
        current = joined
    if current:
        if pieces and weight(current) < goal // 4 and weight(pieces[-1] + "\n\n" + current) <= room:
            pieces[-1] = f"{pieces[-1]}\n\n{current}"
        else:
            pieces.append(current)
    return [head + p.strip() for p in pieces]


def chunk(extracted: ExtractedLike, *, target: int = TARGET_TOKENS, limit: int = MAX_TOKENS) -> list[Chunk]:
    """The chunks of a file's text, in order (see the module docstring)."""
    out: list[Chunk] = []
    for page in extracted.pages:
        for section in _sections(page.text):
            for text in _pack(section, target, limit):
                out.append(Chunk(ord=len(out), page=page.number, text=text))
    return out
