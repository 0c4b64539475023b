"""Interface strings in English and Simplified Chinese, and the choice of language per request.

Every module in this package exposes ``STRINGS = {"en": {...}, "zh-CN": {...}}``; they are merged, so a
page added later ships its own strings in its own module without editing anyone else's. A key missing
in Chinese falls back to English, then to the key itself (a visible hint, never a crash). API error
messages are not translated: they stay English with stable codes, which the pages word (``errors``).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from functools import cache

LANGUAGES: dict[str, str] = {"en": "English", "zh-CN": "简体中文"}
DEFAULT_LANGUAGE = "en"
LANG_COOKIE = "agentloft_lang"

Translator = Callable[..., str]


@cache
def catalogs() -> dict[str, dict[str, str]]:
    """All strings by language, merged from every module of this package (loaded once)."""
    merged: dict[str, dict[str, str]] = {lang: {} for lang in LANGUAGES}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        for lang, strings in getattr(module, "STRINGS", {}).items():
            merged.setdefault(lang, {}).update(strings)
    english = merged[DEFAULT_LANGUAGE]
    return {lang: {**english, **strings} for lang, strings in merged.items()}


def catalog(lang: str) -> dict[str, str]:
    return catalogs().get(lang, catalogs()[DEFAULT_LANGUAGE])


def _match(tag: str) -> str | None:
    tag = tag.strip().lower()
    if not tag:
        return None
    for code in LANGUAGES:
        if tag == code.lower():
            return code
    if tag.startswith("zh"):
        # zh, zh-Hans, zh-SG map to Simplified; Traditional tags still read Simplified better than English.
        return "zh-CN"
    if tag.startswith("en"):
        return "en"
    return None


def parse_accept_language(header: str | None) -> str | None:
    """The supported language the browser prefers most, honouring q-values."""
    choices: list[tuple[float, int, str]] = []
    for index, item in enumerate((header or "").split(",")):
        tag, _, params = item.partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        code = _match(tag)
        if code and q > 0:
            choices.append((-q, index, code))
    return min(choices)[2] if choices else None


def negotiate(cookie: str | None, accept_language: str | None) -> str:
    """The cookie (an explicit switch) wins over the browser's preference; English otherwise."""
    if cookie in LANGUAGES:
        return cookie
    return parse_accept_language(accept_language) or DEFAULT_LANGUAGE


def translator(lang: str) -> Translator:
    strings = catalog(lang)

    def t(key: str, **values: object) -> str:
        text = strings.get(key, key)
        for name, value in values.items():
            text = text.replace("{" + name + "}", str(value))
        return text

    return t
