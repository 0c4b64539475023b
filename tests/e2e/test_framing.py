"""In a real browser: no page of ours can be shown in a frame, where another site could lay a decoy over
it and turn a click into "Approve" (``web.security_headers``)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Page, Route

from tests.support import LiveApp

pytestmark = pytest.mark.e2e


def test_no_page_can_be_shown_in_a_frame(
    app: LiveApp, new_page: Callable[..., Page], csp_violations: list[str]
) -> None:
    """The framing page is served (by the test) from our own origin: the browser's local network rules
    would refuse a frame of 127.0.0.1 inside any other origin's page whatever our headers said, and
    prove nothing. ``frame-ancestors 'none'`` refuses every framing page, ours included."""
    page = new_page()
    framer = f"{app.url}/framer"

    def serve_framer(route: Route) -> None:
        route.fulfill(content_type="text/html", body=f'<iframe id="f" src="{app.url}/login"></iframe>')

    page.context.route(framer, serve_framer)
    page.goto(framer)  # "load" waits for the frame's own load, refused or not
    framed = next(f for f in page.frames if f != page.main_frame)
    # The browser refused to show the page: nothing of the sign-in form is inside the frame.
    assert framed.locator("#login-form").count() == 0, framed.url
    refused = [v for v in csp_violations if "frame-ancestors" in v]
    assert refused, csp_violations
    for v in refused:
        csp_violations.remove(v)
