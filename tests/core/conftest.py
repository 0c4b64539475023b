"""Fixtures for the core tests that need them: a real HTTP server on 127.0.0.1 for the network guard's."""

from __future__ import annotations

from tests.tools.types.local_server import web, web_server  # noqa: F401 (fixtures of this folder)
