"""The public base URL: ``AGENTLOFT_PUBLIC_URL`` when set, else the address a request reached the server
at, never the request's ``Host`` header; and the setting refuses what is not a base URL."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from starlette.requests import HTTPConnection

from agentloft.core import public_url
from agentloft.core.settings import ConfigError, load_settings


def connection(server: tuple[str, int | None] | None, scheme: str = "http", host: str = "evil.example"
               ) -> HTTPConnection:
    scope: dict[str, Any] = {"type": "http", "scheme": scheme, "server": server, "path": "/",
                             "headers": [(b"host", host.encode())]}
    return HTTPConnection(scope)


def test_the_setting_wins_over_every_request() -> None:
    settings = load_settings(public_url=" https://agents.example.com/team/ ")
    assert settings.public_url == "https://agents.example.com/team"
    assert public_url.public_base_url(connection(("10.0.0.11", 8000)), settings) == "https://agents.example.com/team"


@pytest.mark.parametrize(("server", "scheme", "expected"), [
    (("127.0.0.1", 8000), "http", "http://127.0.0.1:8000"),
    (("10.0.0.11", 443), "https", "https://10.0.0.11"),
    (("::1", 8000), "http", "http://[::1]:8000"),
    (("10.0.0.11", 80), "http", "http://10.0.0.11"),
    (None, "http", "http://127.0.0.1:9000"),  # no address to say (a Unix socket): the configured one
    (("/run/agentloft.sock", None), "http", "http://127.0.0.1:9000"),
])
def test_unset_it_is_where_the_request_came_in(server: tuple[str, int | None] | None, scheme: str,
                                               expected: str) -> None:
    settings = load_settings(port=9000)
    assert settings.public_url is None
    assert public_url.public_base_url(connection(server, scheme), settings) == expected


def test_a_host_that_differs_is_reported_once(caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
                                              ) -> None:
    monkeypatch.setattr(public_url, "_warned", False)
    settings = load_settings()
    with caplog.at_level(logging.WARNING, logger="agentloft.core.public_url"):
        public_url.public_base_url(connection(("127.0.0.1", 8000), host="127.0.0.1:8000"), settings)
        assert caplog.records == [], "the address it was reached at: nothing to say"
        for _ in range(3):
            public_url.public_base_url(connection(("127.0.0.1", 8000), host="agents.example.com"), settings)
    [record] = caplog.records
    assert "'agents.example.com'" in record.getMessage() and "AGENTLOFT_PUBLIC_URL" in record.getMessage()


@pytest.mark.parametrize("value", ["agents.example.com", "ftp://agents.example.com", "https://", "https://x/?a=1",
                                   "https://x/#top", "https://user:pw@x", "https://x:port", "https://[::1"])
def test_what_is_not_a_base_url_stops_the_start(value: str) -> None:
    with pytest.raises(ConfigError, match="AGENTLOFT_PUBLIC_URL"):
        load_settings(public_url=value)


def test_empty_is_unset() -> None:
    assert load_settings(public_url="").public_url is None
