"""The Jinja2 environment and ``render_page``: every page gets the user, the language, ``t`` and the
strings for JavaScript, so templates never assemble that context themselves."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from agentloft import __version__
from agentloft.core.plaintext import markdown_to_plain
from agentloft.web import i18n
from agentloft.web.static_files import static_version

WEB_DIR = Path(__file__).resolve().parent
TEMPLATES_DIR = WEB_DIR / "templates"
STATIC_DIR = WEB_DIR / "static"


def static_url(path: str) -> str:
    """The versioned URL of a static file (``web.static_files``): kept by browsers for a year, changed by
    any change to the static files. Modules it loads import each other by relative paths and so land
    under the same version."""
    return f"/static/{static_version(STATIC_DIR)}/{path.lstrip('/')}"


def _json_script(value: Any) -> Markup:
    """JSON safe to embed inside ``<script type="application/json">`` (no ``</script>`` breakout)."""
    text = json.dumps(value, ensure_ascii=False).replace("<", "\\u003c").replace(">", "\\u003e")
    return Markup(text.replace("&", "\\u0026"))


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES_DIR)),
        autoescape=select_autoescape(["html"]),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    from agentloft.defaults import TOOL_TEXTS  # the default tools' English texts, translated while unchanged

    env.globals.update(static_url=static_url, languages=i18n.LANGUAGES, version=__version__,
                       default_tool_texts=TOOL_TEXTS)
    env.filters["json_script"] = _json_script
    env.filters["plain"] = markdown_to_plain
    return env


def request_language(request: Request) -> str:
    return i18n.negotiate(request.cookies.get(i18n.LANG_COOKIE), request.headers.get("accept-language"))


THEME_COOKIE = "agentloft_theme"
THEMES = ("light", "dark")


def request_theme(request: Request) -> str | None:
    """The theme the reader chose (the top bar's button keeps it in a cookie); None follows the system."""
    value = request.cookies.get(THEME_COOKIE)
    return value if value in THEMES else None


def render_page(request: Request, template: str, *, status: int = 200, **context: Any) -> HTMLResponse:
    """Render ``template`` with the shared page context (user, language, translator, JS strings)."""
    lang = request_language(request)
    user = getattr(request.state, "user", None)
    base = {
        "request": request,
        "user": user,
        "lang": lang,
        "t": i18n.translator(lang),
        "js_strings": i18n.catalog(lang),
        "current_path": request.url.path,
        "theme": request_theme(request),
        "inbox_nav": getattr(request.state, "inbox_nav", None),  # set with the page's user (``web.deps``)
    }
    html = environment().get_template(template).render({**base, **context})
    return HTMLResponse(html, status_code=status)
