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

Rendering runs in a render worker process (``web.render_pool``), never on the event loop: ``render``
refuses to run on a thread with a running loop. There, ``render_job`` gives those two decorations a CPU
budget (``web.cpu_budget``): each block or formula gets at most ``BLOCK_CPU_SECONDS``, a render all
of them together at most ``RENDER_CPU_SECONDS``; past either, the block or formula is shown as its source
(code escaped, unhighlighted). Some Pygments lexers are super-linear on inputs such as whitespace runs
(``autohotkey``: 8 s for 4,000 characters); the budgets make any of them cost a bounded, small time.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextvars import ContextVar
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

from agentloft.web.cpu_budget import CpuBudget

# A formula longer than this is shown as its source: the converter's time grows with it.
MAX_FORMULA = 4000
# Code longer than this is shown unhighlighted: streamed replies are rendered several times a second,
# and the cost of one ``re`` call of the slow lexers grows with the code after it (bench/render_worst.py).
# Real code highlights at about 1 µs a character (20,000 characters, some 500 lines: 4-26 ms).
MAX_HIGHLIGHT = 20_000
# CPU seconds one code block or formula may take, and all of a render's together (docs/benchmarks.md,
# "Rendering never stalls the server"): four times the slowest real code at MAX_HIGHLIGHT; a render's
# total covers some 400,000 characters of real code.
BLOCK_CPU_SECONDS = 0.1
RENDER_CPU_SECONDS = 0.5

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


# The budget of the render in progress (``render_job``); None: no budget (a direct ``render`` call).
_budget: ContextVar[CpuBudget | None] = ContextVar("render_budget", default=None)


def _decorate(work: Callable[[], str]) -> str | None:
    """``work``'s result within the render's budget; None when it ran out (show the source instead)."""
    budget = _budget.get()
    return work() if budget is None else budget.spend(work)


def _highlight(code: str, lang: str, _attrs: str) -> str:
    """Pygments' token spans for a fenced block with a known language; "" lets markdown-it escape it."""
    name = lang.strip().split()[0] if lang.strip() else ""
    if not name or len(code) > MAX_HIGHLIGHT:
        return ""
    lexer = _lexer(name.lower())
    if lexer is None:
        return ""
    return _decorate(lambda: pygments_highlight(code, lexer, _formatter())) or ""


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
        display = "block" if options.get("display_mode") else "inline"
        try:
            mathml = _decorate(lambda: latex_to_mathml(content, display=display))
        except Exception:  # any converter failure (also RecursionError on deep nesting) shows the source
            mathml = None
        if mathml is not None:
            return mathml
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
    """Render markdown ``text`` to HTML that is safe to insert into a page.

    Request handlers call ``web.render_pool`` instead: this runs for as long as the text needs, so on an
    event loop's thread it refuses (RuntimeError) rather than stall every other request."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return sanitize(_parser().render(text or ""))
    raise RuntimeError("markdown.render blocks: render through web.render_pool, not on the event loop")


def render_job(texts: list[str], *, decorate: bool = True) -> list[str]:
    """``render`` for each text, in order, within one CPU budget for highlighting and math (all of it
    shown as source when ``decorate`` is false). For a render worker's main thread: see ``cpu_budget``."""
    total = RENDER_CPU_SECONDS if decorate else 0.0
    token = _budget.set(CpuBudget(total=total, each=BLOCK_CPU_SECONDS))
    try:
        return [render(t) for t in texts]
    finally:
        _budget.reset(token)


def source_html(text: str) -> str:
    """``text`` shown as it is, escaped (no markdown at all): what a page gets when even a render without
    highlighting and math did not finish in time."""
    return f"<pre>{escape(text)}</pre>" if text else ""


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

