"""Static files under versioned URLs that browsers keep for a year, and compression of what people load.

Every page links ``/static/<version>/…`` (``templating.static_url``), where the version is a digest of
the static files themselves: a release that changes any file changes every URL, so a browser never
runs yesterday's script against today's page, and can keep each file without asking again. ES modules
import each other by relative paths, so they resolve under the same versioned prefix: one URL per
module (one instance), all cached the same way. Unversioned ``/static/…`` still works and is
revalidated on each use.

Pages and static files are gzip-compressed; the API is left alone, and in particular its SSE streams
are never compressed nor buffered.
"""

from __future__ import annotations

import hashlib
import os
from functools import cache
from pathlib import Path

from fastapi.staticfiles import StaticFiles
from starlette.middleware.gzip import GZipMiddleware
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
VERSION_PREFIX = "v-"


@cache
def static_version(directory: Path) -> str:
    """A digest of every file's path and bytes under ``directory`` (read once per process)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        digest.update(path.relative_to(directory).as_posix().encode())
        digest.update(path.read_bytes())
    return VERSION_PREFIX + digest.hexdigest()[:12]


class VersionedStaticFiles(StaticFiles):
    """``StaticFiles`` that also answers ``/<version>/<path>``: the current version for a year, an older
    one (a page loaded before a release) with the current file, revalidated like unversioned paths."""

    def __init__(self, *, directory: Path) -> None:
        super().__init__(directory=directory)
        self.version = static_version(directory)

    def get_path(self, scope: Scope) -> str:
        path = super().get_path(scope)
        first, sep, rest = path.partition(os.sep)
        if sep and first.startswith(VERSION_PREFIX):
            scope["agentloft.static_current"] = first == self.version
            return rest
        return path

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        response.headers["Cache-Control"] = IMMUTABLE if scope.get("agentloft.static_current") else REVALIDATE
        return response


class CompressPages:
    """gzip for everything but the API, A2A and MCP endpoints: pages, static files, the API documentation.
    The API's JSON is small and its streams must reach the browser chunk by chunk, so it is never
    wrapped (and Starlette's middleware would skip ``text/event-stream`` anyway)."""

    SKIP = ("/api/", "/a2a/", "/mcp")

    def __init__(self, app: ASGIApp, *, minimum_size: int = 1024) -> None:
        self.app = app
        self.gzip = GZipMiddleware(app, minimum_size=minimum_size, compresslevel=6)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"].startswith(self.SKIP):
            await self.app(scope, receive, send)
            return
        await self.gzip(scope, receive, send)
