"""The one answer to "at which address is this instance reached?", for every URL the server hands out
(the endpoints in A2A agent cards; sign-in callbacks will ask the same).

``AGENTLOFT_PUBLIC_URL`` when it is set. Otherwise the address the request reached this server at: the
local end of its connection (the listening socket's address and port, ASGI's ``server``) and its scheme
(``https`` from a trusted proxy's ``X-Forwarded-Proto``, see ``AGENTLOFT_FORWARDED_ALLOW_IPS``). Never the
``Host`` header: the client writes it, and a card cached under a written ``Host`` would send other
callers, and their tokens, wherever it says. Run directly (``agentloft serve``, a browser on the same
network) the fallback is right; behind a reverse proxy it is the proxy's upstream address, which is why
the first request whose ``Host`` names another address logs a warning saying to set the setting.
"""

from __future__ import annotations

import logging

from starlette.requests import HTTPConnection

from agentloft.core.settings import Settings

log = logging.getLogger(__name__)

_DEFAULT_PORTS = {"http": 80, "https": 443}
_warned = False


def _netloc(host: str, port: int | None, scheme: str) -> str:
    name = f"[{host}]" if ":" in host else host  # an IPv6 address
    return name if port is None or _DEFAULT_PORTS.get(scheme) == port else f"{name}:{port}"


def _connection_url(request: HTTPConnection, settings: Settings) -> str:
    """The address the request came in on; the configured host and port when the server has none to say
    (a Unix socket)."""
    scheme = str(request.scope.get("scheme", "http"))
    scheme = {"ws": "http", "wss": "https"}.get(scheme, scheme)
    server = request.scope.get("server")
    if server and server[1] is not None:
        host, port = str(server[0]), int(server[1])
    else:
        host, port = settings.host, settings.port
    return f"{scheme}://{_netloc(host, port, scheme)}"


def public_base_url(request: HTTPConnection, settings: Settings) -> str:
    """The base URL (no trailing slash) that addresses handed out in answer to ``request`` start with."""
    if settings.public_url:
        return settings.public_url
    url = _connection_url(request, settings)
    _warn_once(request, url)
    return url


def _warn_once(request: HTTPConnection, url: str) -> None:
    global _warned
    named = request.headers.get("host", "")
    if _warned or not named or url.endswith("//" + named):
        return
    _warned = True
    log.warning("a request named the host %r, but the addresses this server hands out (A2A agent cards) "
                "name %s, where it was reached; set AGENTLOFT_PUBLIC_URL to the address clients use",
                named, url)
