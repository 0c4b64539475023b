"""Fixtures for the model-provider tests: the fake Anthropic Messages API server (the fake OpenAI-compatible
server is the suite's own, in ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fakes.anthropic_server import FakeAnthropic, FakeAnthropicServer


@pytest.fixture(scope="session")
def anthropic_server() -> Iterator[FakeAnthropicServer]:
    server = FakeAnthropicServer().start()
    yield server
    server.stop()


@pytest.fixture
def fake_anthropic(anthropic_server: FakeAnthropicServer) -> Iterator[FakeAnthropic]:
    anthropic_server.fake.reset()
    yield anthropic_server.fake
    anthropic_server.fake.reset()
