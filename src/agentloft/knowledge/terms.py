"""The token string a chunk is indexed under, and the tokens a query looks for (pure: no database).

A chunk's ``terms`` are its words folded as every search of the product folds them (``textsearch.fold``:
NFKC, then case folding), and for text without spaces between words (Chinese, Japanese, Korean) every
character and every pair of adjacent characters: Chinese words are mostly two characters long, and no
segmenter is needed to find them. Words are runs of letters and digits; everything else (punctuation,
underscores, symbols) separates them, so the string holds only tokens both indexes read the same way:
SQLite FTS5's ``ascii`` tokenizer (every non-ASCII character is part of a token, ASCII punctuation splits)
and PostgreSQL's ``to_tsvector('simple', …)`` (which keeps a run of CJK characters as one lexeme). Tokens
keep their order and repeats, so BM25 / ``ts_rank`` see how often each occurs.

A query is matched as a ranked OR of its tokens, not as the documents' AND of substrings: a question
("how do I rotate the signing key?") shares only some words with the passage that answers it. The query
side differs from the index side in two ways, both to keep a question's noise out of the OR:

- a run of CJK characters contributes its pairs only (a lone character contributes itself): the pairs
  already hold every character, and single characters such as 的 or 是 match nearly every chunk;
- a small list of English function words is dropped ("the", "is", "how"…), unless nothing else is left.
"""

from __future__ import annotations

import re

from agentloft.core.textsearch import fold

# Letters and digits; everything else separates tokens.
_WORD = re.compile(r"[^\W_]+")
# Scripts written without spaces between words: Han (with extensions and compatibility ideographs),
# kana, Hangul, bopomofo.
_CJK_CLASS = (r"\u3040-\u30ff\u3100-\u312f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af"
              r"\uf900-\ufaff\U00020000-\U0003134f")
_CJK_OR_NOT = re.compile(f"[{_CJK_CLASS}]+|[^{_CJK_CLASS}]+")
_CJK = re.compile(f"[{_CJK_CLASS}]")
# Longer "words" are hashes, base64 or minified code: nobody searches for them, and PostgreSQL would
# refuse a lexeme over 2 KB.
MAX_TOKEN_CHARS = 64
MAX_QUERY_TOKENS = 32
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how", "i", "if",
    "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "that", "the", "their", "them",
    "there", "these", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why",
    "will", "with", "you", "your",
})


def is_cjk(char: str) -> bool:
    return _CJK.match(char) is not None


def _pieces(text: str) -> list[tuple[str, bool]]:
    """The folded text's words, each split into runs that are CJK or not, with that flag."""
    out: list[tuple[str, bool]] = []
    for word in _WORD.findall(fold(text)):
        for run in _CJK_OR_NOT.findall(word):
            out.append((run, is_cjk(run[0])))
    return out


def _grams(run: str) -> list[str]:
    return [*run, *(run[i:i + 2] for i in range(len(run) - 1))]


def tokens(text: str) -> list[str]:
    """Every token of ``text`` in order, repeats kept (see the module docstring)."""
    out: list[str] = []
    for run, cjk in _pieces(text):
        if cjk:
            out.extend(_grams(run))
        elif len(run) <= MAX_TOKEN_CHARS:
            out.append(run)
    return out


def terms(*texts: str) -> str:
    """The ``terms`` column of a chunk: ``tokens`` of each text, space-separated."""
    return " ".join(t for text in texts for t in tokens(text))


def query_tokens(q: str, limit: int = MAX_QUERY_TOKENS) -> list[str]:
    """The distinct tokens a search looks for, in the order typed, at most ``limit``; empty when the
    query has no letters or digits."""
    found: list[str] = []
    for run, cjk in _pieces(q):
        if cjk:
            found.extend([run[i:i + 2] for i in range(len(run) - 1)] or [run])
        elif len(run) <= MAX_TOKEN_CHARS:
            found.append(run)
    unique = list(dict.fromkeys(found))
    content = [t for t in unique if t not in STOPWORDS]
    return (content or unique)[:limit]
