"""Server-rendered pages (Jinja2) with plain ES-module JavaScript; no build step, nothing from a CDN.

``router.py`` aggregates one sub-router per module of ``pages/``; ``i18n`` holds the English and
Simplified Chinese catalogs; ``markdown.render`` is the only way text becomes HTML.
"""
