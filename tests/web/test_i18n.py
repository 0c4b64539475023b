"""The two catalogs stay complete, and the browser's preference is read the way it is meant."""

from __future__ import annotations

import re
from pathlib import Path

from agentloft.web import i18n

WEB = Path(i18n.__file__).resolve().parent.parent


def test_every_english_string_has_a_chinese_one() -> None:
    raw: dict[str, set[str]] = {"en": set(), "zh-CN": set()}
    import importlib
    import pkgutil

    for info in pkgutil.iter_modules(i18n.__path__):
        module = importlib.import_module(f"{i18n.__name__}.{info.name}")
        for lang, strings in module.STRINGS.items():
            raw[lang] |= set(strings)
    assert raw["en"] == raw["zh-CN"], raw["en"] ^ raw["zh-CN"]


def test_every_key_used_by_templates_and_scripts_exists() -> None:
    used: set[str] = set()
    for path in [*WEB.glob("templates/**/*.html"), *WEB.glob("static/js/**/*.js")]:
        # Literal keys only: t('a.b') or t('a.b', ...); composed keys (t('a.' ~ x)) are not checked here.
        used |= set(re.findall(r"""\bt\(\s*['"]([A-Za-z0-9_.]*[A-Za-z0-9_])['"]\s*[,)]""", path.read_text()))
    missing = used - set(i18n.catalog("en"))
    assert not missing, missing


def test_accept_language_preference_order() -> None:
    assert i18n.negotiate(None, "zh-CN,zh;q=0.9,en;q=0.8") == "zh-CN"
    assert i18n.negotiate(None, "en-US,zh;q=0.5") == "en"
    assert i18n.negotiate(None, "fr;q=1, zh-Hans;q=0.4, en;q=0.3") == "zh-CN"
    assert i18n.negotiate(None, "de") == "en"
    assert i18n.negotiate("zh-CN", "en") == "zh-CN"
    assert i18n.negotiate("klingon", "zh") == "zh-CN"
    assert i18n.translator("en")("admin.models.testOk", ms=12) == "OK · 12 ms"
