"""Markdown to safe HTML: markdown-it-py renders, nh3 sanitises. Never a hand-written parser.

Model output and user text are untrusted, so raw HTML in the source is escaped by markdown-it (``html``
off) and the result is still passed through nh3's allow-list: a bug or a future option in one layer
cannot open a script hole on its own.
"""

from __future__ import annotations

from functools import cache

import nh3
from markdown_it import MarkdownIt

_TAGS = {
    "a", "p", "br", "hr", "strong", "em", "del", "s", "code", "pre", "blockquote",
    "ul", "ol", "li", "h1", "h2", "h3", "h4", "h5", "h6",
    "table", "thead", "tbody", "tr", "th", "td", "img", "span",
}
_ATTRIBUTES = {
    "a": {"href", "title"},
    "img": {"src", "alt", "title"},
    "code": {"class"},
    "th": {"style"},
    "td": {"style"},
    "ol": {"start"},
}


@cache
def _parser() -> MarkdownIt:
    # commonmark + tables and strikethrough (GFM-like), linkify off: it needs an extra package.
    return MarkdownIt("commonmark", {"html": False, "breaks": True}).enable(["table", "strikethrough"])


def render(text: str) -> str:
    """Render markdown ``text`` to HTML that is safe to insert into a page."""
    html = _parser().render(text or "")
    return nh3.clean(
        html,
        tags=_TAGS,
        attributes=_ATTRIBUTES,
        url_schemes={"http", "https", "mailto"},
        link_rel="noopener noreferrer nofollow",
        filter_style_properties={"text-align"},
    )
