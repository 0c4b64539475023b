"""Fixtures for the core tests that need them: a real HTTP server on 127.0.0.1 for the network guard's."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.tools.types.local_server import LocalWeb


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
