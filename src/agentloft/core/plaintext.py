"""Markdown reduced to its words, for places that show one line of text: chat titles, document summaries.

markdown-it-py parses (the same dialect the pages render), and only the text the reader would see is
kept: ``**Plan** for `x`:`` becomes ``Plan for x:``. No pattern of our own guesses at markdown.
"""

from __future__ import annotations

import re
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token
from mdit_py_plugins.dollarmath import dollarmath_plugin

# Text with none of these has no markdown to drop: it is returned without parsing (the common case, and a
# title is made as every chat turn starts). Only a shortcut: anything that matches goes to the parser.
_MAYBE_MARKDOWN = re.compile(r"[*_`\[\]#>|~$<&\\!]|^\s*(?:[-+]|\d+[.)])(?:\s|$)|^\s*[-=]{3,}|^ {4}|\t", re.M)

# Inline tokens whose ``content`` is what a reader sees.
_TEXT_TOKENS = {"text", "code_inline", "math_inline", "math_inline_double"}
# Block tokens whose ``content`` is shown as is (code, formulas).
_BLOCK_TEXT = {"fence", "code_block", "math_block"}


@cache
def _parser() -> MarkdownIt:
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])
    dollarmath_plugin(md, allow_space=False, allow_digits=False, allow_labels=False, double_inline=True)
    return md


def _inline_words(children: list[Token]) -> list[str]:
    words: list[str] = []
    for child in children:
        if child.type in _TEXT_TOKENS:
            words.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            words.append(" ")
        elif child.type == "image" and child.children:
            words.extend(_inline_words(child.children))
    return words


def markdown_to_plain(text: str) -> str:
    """The words of ``text`` on one line, markdown syntax dropped, whitespace collapsed."""
    if not _MAYBE_MARKDOWN.search(text or ""):
        return " ".join((text or "").split())
    return parsed_plain(text)


def parsed_plain(text: str) -> str:
    """``markdown_to_plain`` without the shortcut: always through the parser."""
    pieces: list[str] = []
    for token in _parser().parse(text or ""):
        if token.type == "inline":
            pieces.append("".join(_inline_words(token.children or [])))
        elif token.type in _BLOCK_TEXT:
            pieces.append(token.content)
    return " ".join(" ".join(pieces).split())
