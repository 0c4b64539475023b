"""Markdown to safe HTML: markdown-it-py renders, nh3 sanitises. Never a hand-written parser.

Model output and user text are untrusted, so raw HTML in the source is escaped by markdown-it (``html``
off) and the result is still passed through nh3's allow-list: a bug or a future option in one layer
cannot open a script hole on its own. Two well-kept libraries add what chat replies need, both on the
server so the page loads no script for them:

- code blocks with a known language are highlighted by Pygments (token ``<span class>`` names only; the
  colours are ``static/css/highlight.css``); the language stays on ``<code class="language-…">`` for
  the label the page shows;
- ``$…$`` and ``$$…$$`` (mdit-py-plugins' dollarmath) become MathML through latex2mathml, which
  browsers lay out natively. nh3 decides which MathML survives like any other tag.
"""

from __future__ import annotations

from functools import cache, lru_cache
from html import escape
from typing import Any

import nh3
from latex2mathml.converter import convert as latex_to_mathml
from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from pygments import highlight as pygments_highlight
from pygments.formatters import HtmlFormatter
from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import STANDARD_TYPES
from pygments.util import ClassNotFound

# A formula longer than this is shown as its source: the converter's time grows with it.
MAX_FORMULA = 4000
# Code longer than this is shown unhighlighted: streamed replies are rendered several times a second.
MAX_HIGHLIGHT = 100_000

_MATHML = {
    "math", "semantics", "annotation", "mrow", "mi", "mo", "mn", "ms", "mtext", "mspace", "msup", "msub",
    "msubsup", "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mtable", "mtr", "mtd",
    "mstyle", "mpadded", "mphantom", "menclose", "merror", "mmultiscripts", "mprescripts", "none",
}
_TAGS = {
    "a", "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "img", "span", "div",
} | _MATHML
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
    "math": {"display", "xmlns"},
    "mo": {"stretchy", "fence", "separator", "form", "lspace", "rspace", "largeop", "movablelimits",
           "minsize", "maxsize", "symmetric", "accent"},
    "mover": {"accent"},
    "munder": {"accentunder"},
    "munderover": {"accent", "accentunder"},
    "mfrac": {"linethickness"},
    "mspace": {"width", "height", "depth"},
    "mpadded": {"width", "height", "depth", "lspace", "voffset"},
    "mstyle": {"displaystyle", "scriptlevel", "mathvariant"},
    "mi": {"mathvariant"},
    "mtext": {"mathvariant"},
    "mtable": {"columnalign", "rowspacing", "columnspacing", "columnlines", "rowlines", "frame"},
    "mtd": {"columnalign", "columnspan", "rowspan"},
    "menclose": {"notation"},
    "annotation": {"encoding"},
}
# Classes are allowed by name: Pygments' token classes on spans, the math wrappers.
_CLASSES = {
    "span": {c for c in STANDARD_TYPES.values() if c} | {"math", "inline", "display", "math-error"},
    "div": {"math", "block"},
}


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """Pygments' token spans for a fenced block with a known language; "" lets markdown-it escape it."""
    name = lang.strip().split()[0] if lang.strip() else ""
    if not name or len(code) > MAX_HIGHLIGHT:
        return ""
    lexer = _lexer(name.lower())
    return pygments_highlight(code, lexer, _formatter()) if lexer is not None else ""


@lru_cache(maxsize=128)  # bounded: the names come from untrusted text
def _lexer(name: str) -> Lexer | None:
    """Pygments' lexer for a language name (looking one up scans its registry: ~1.5 ms)."""
    try:
        return get_lexer_by_name(name)
    except ClassNotFound:
        return None


@cache
def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(nowrap=True)


def _math(content: str, options: dict[str, Any]) -> str:
    """MathML for one formula; its source in a ``code`` span when it is too long or not LaTeX we read."""
    if len(content) <= MAX_FORMULA:
        try:
            return latex_to_mathml(content, display="block" if options.get("display_mode") else "inline")
        except Exception:  # any converter failure (also RecursionError on deep nesting) shows the source
            pass
    return f'<span class="math-error">{escape(content)}</span>'


@cache
def _parser() -> MarkdownIt:
    # commonmark + tables and strikethrough (GFM-like), linkify off: it needs an extra package.
    md = MarkdownIt("commonmark", {"html": False, "breaks": True, "highlight": _highlight})
    md.enable(["table", "strikethrough"])
    # "$5 and $10" stays text: no digits or spaces just inside the dollars, as GitHub does.
    dollarmath_plugin(md, allow_space=False, allow_digits=False, allow_labels=False, double_inline=True,
                      renderer=_math)
    # ``$$…$$`` inside a sentence: a display formula, but in a span, so the paragraph is not split.
    md.add_render_rule("math_inline_double", _render_inline_display)
    return md


def _render_inline_display(self: Any, tokens: Any, idx: int, options: Any, env: Any) -> str:
    body = _math(str(tokens[idx].content).strip(), {"display_mode": True})
    return f'<span class="math display">{body}</span>'


def render(text: str) -> str:
    """Render markdown ``text`` to HTML that is safe to insert into a page."""
    return sanitize(_parser().render(text or ""))


def sanitize(html: str) -> str:
    """nh3's allow-list: the one place that decides which HTML reaches a page."""
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        allowed_classes=_CLASSES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        # A link in a reply or a document opens in a new tab: following it never leaves the chat (nor
        # cuts the reply still streaming there).
        set_tag_attribute_values={"a": {"target": "_blank"}},
        filter_style_properties={"text-align"},
    )


def render_many(texts: list[str]) -> list[str]:
    """``render`` for each text, in order (a saved conversation's replies in one request)."""
    return [render(t) for t in texts]
