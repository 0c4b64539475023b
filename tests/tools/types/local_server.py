"""A small real HTTP server on 127.0.0.1 for the network tool tests: pages, JSON, feeds, a SearXNG-like
search, an echo endpoint, redirects, a slow answer and a huge body. It records every request it gets, so
a test can prove that a refused request never arrived."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from tests.fakes.openai_server import ThreadedServer

PAGE = """<!doctype html><html><head><title>Test page</title><style>body{color:red}</style>
<script>var secret = "not text";</script></head><body>
<nav>Home | About</nav><h1>Hello  world</h1><p>First <b>paragraph</b> with a <a href="/next">link</a>.</p>
<ul><li>one</li><li>two</li></ul><pre>  keep
   spacing</pre></body></html>"""

RSS = """<?xml version="1.0"?><rss version="2.0"><channel><title>Test feed</title><link>http://example.test/</link>
<description>News</description>
<item><title>Old item</title><link>http://example.test/1</link><pubDate>Mon, 01 Jan 2024 10:00:00 GMT</pubDate>
<description>&lt;p&gt;Old &lt;b&gt;summary&lt;/b&gt;&lt;/p&gt;</description></item>
<item><title>New item</title><link>http://example.test/3</link><pubDate>Wed, 03 Jan 2024 10:00:00 GMT</pubDate>
<description>Newest</description></item>
<item><title>Middle item</title><link>http://example.test/2</link><pubDate>Tue, 02 Jan 2024 10:00:00 GMT</pubDate>
<description>Middle</description></item>
</channel></rss>"""

ATOM = """<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>Atom feed</title>
<link href="http://example.test/"/><updated>2024-02-01T00:00:00Z</updated><id>urn:x</id>
<entry><title>Atom entry</title><link href="http://example.test/a"/><id>urn:a</id>
<updated>2024-02-01T00:00:00Z</updated><summary>Atom summary</summary></entry></feed>"""


class LocalWeb:
    def __init__(self, tls: tuple[str, str] | None = None) -> None:
        """``tls=(certfile, keyfile)`` serves HTTPS instead of HTTP."""
        self.requests: list[dict[str, Any]] = []
        self.server = ThreadedServer(self._app())
        if tls:
            config = self.server.server.config
            config.ssl_certfile, config.ssl_keyfile = tls
            self.server.server = uvicorn.Server(config)
            self.server.thread = threading.Thread(target=self.server.server.run, daemon=True)

    @property
    def url(self) -> str:
        return self.server.url

    @property
    def port(self) -> int:
        return self.server.port

    def paths(self) -> list[str]:
        return [r["path"] for r in self.requests]

    def _app(self) -> Starlette:
        async def record(request: Request) -> dict[str, Any]:
            entry = {"method": request.method, "path": request.url.path,
                     "rawPath": request.scope["raw_path"].decode("latin-1"), "query": dict(request.query_params),
                     "headers": dict(request.headers), "body": (await request.body()).decode(errors="replace")}
            self.requests.append(entry)
            return entry

        async def page(request: Request) -> Response:
            await record(request)
            return Response(PAGE, media_type="text/html; charset=utf-8")

        async def echo(request: Request) -> Response:
            entry = await record(request)
            status = int(request.query_params.get("status", "200"))
            return JSONResponse(entry, status_code=status)

        async def redirect(request: Request) -> Response:
            await record(request)
            return RedirectResponse(request.query_params["to"], status_code=int(request.query_params.get("code", 302)))

        async def loop(request: Request) -> Response:
            await record(request)
            return RedirectResponse("/loop", status_code=302)

        async def slow(request: Request) -> Response:
            await record(request)
            await asyncio.sleep(float(request.query_params.get("s", "5")))
            return PlainTextResponse("finally")

        async def big(request: Request) -> Response:
            await record(request)

            async def body() -> Any:
                for _ in range(200):  # 200 x 64 KiB = 12.5 MiB, far past any test's limit
                    yield b"x" * 65536

            return StreamingResponse(body(), media_type="text/plain")

        async def events(request: Request) -> Response:
            await record(request)

            async def body() -> Any:
                for i in range(200):  # as long as /big, as an event stream
                    yield f"data: {i} {'x' * 65536}\n\n".encode()

            return StreamingResponse(body(), media_type="text/event-stream")

        async def sse(request: Request) -> Response:
            """``count`` events of ``lines`` data lines of ``width`` bytes each, every line ended by ``end``
            (``lf``, ``crlf`` or ``cr``), sent in pieces of 4,093 bytes so that line ends straddle them."""
            await record(request)
            q = request.query_params
            end = {"lf": "\n", "crlf": "\r\n", "cr": "\r"}[q.get("end", "lf")]
            line = "data: " + "x" * int(q.get("width", "1000")) + end
            event = (line * int(q.get("lines", "1")) + end).encode()
            stream = event * int(q.get("count", "1"))

            async def body() -> Any:
                for at in range(0, len(stream), 4093):
                    yield stream[at:at + 4093]

            return StreamingResponse(body(), media_type="text/event-stream")

        async def binary(request: Request) -> Response:
            await record(request)
            return Response(b"\x89PNG\r\n\x1a\n" + b"\0" * 100, media_type="image/png")

        async def search(request: Request) -> Response:
            await record(request)
            if request.query_params.get("format") != "json":
                return PlainTextResponse("Forbidden", status_code=403)
            q = request.query_params.get("q", "")
            results = [{"title": f"Result {i} for {q}", "url": f"https://example.test/{i}",
                        "content": f"Snippet {i} " + "long " * 200, "engine": "fake"} for i in range(1, 9)]
            return JSONResponse({"query": q, "results": results, "answers": [], "suggestions": [f"{q} more"]})

        async def feed(request: Request) -> Response:
            await record(request)
            return Response(RSS, media_type="application/rss+xml")

        async def atom(request: Request) -> Response:
            await record(request)
            return Response(ATOM, media_type="application/atom+xml")

        async def data(request: Request) -> Response:
            await record(request)
            return Response(json.dumps({"b": 2, "a": [1, 2]}), media_type="application/json")

        return Starlette(routes=[
            Route("/page", page), Route("/echo", echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/echo/{rest:path}", echo, methods=["GET", "POST", "PUT", "PATCH", "DELETE"]),
            Route("/redirect", redirect, methods=["GET", "POST"]), Route("/loop", loop), Route("/slow", slow),
            Route("/big", big), Route("/events", events), Route("/sse", sse), Route("/binary", binary),
            Route("/search", search), Route("/feed.xml", feed),
            Route("/atom.xml", atom), Route("/data.json", data),
        ])


# The fixtures of the folders whose tests use this server (their conftests import them): one server per
# test session, its request log cleared for each test.

@pytest.fixture(scope="session")
def web_server() -> Iterator[LocalWeb]:
    web = LocalWeb()
    web.server.start()
    yield web
    web.server.stop()


@pytest.fixture
def web(web_server: LocalWeb) -> LocalWeb:
    web_server.requests.clear()
    return web_server
