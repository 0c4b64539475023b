"""Server-rendered pages (Jinja2) with plain ES-module JavaScript; no build step, nothing from a CDN.

``router.py`` aggregates one sub-router per module of ``pages/``; ``i18n`` holds the English and
Simplified Chinese catalogs; ``markdown.render`` is the only way text becomes HTML, run by the render
pool's worker processes (``render_pool``), never on the event loop.
"""
