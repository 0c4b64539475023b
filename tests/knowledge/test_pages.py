"""The knowledge pages as the server renders them: the list, a collection's page with its data for the
script, the nav link, both languages, and another user's collection as the 404 page."""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from tests.knowledge.helpers import indexed
from tests.support import ApiClient


def test_the_list_shows_the_users_collections_and_the_nav_links_it(user: ApiClient) -> None:
    empty = user.get("/knowledge")
    assert empty.status_code == 200 and 'data-testid="kb-empty"' in empty.text
    assert '<a href="/knowledge" aria-current="page">Knowledge</a>' in empty.text
    kb = indexed(user, ("keys.md", "# Keys\n\nRotate them."), name="Handbook")
    page = user.get("/knowledge").text
    assert f'href="/knowledge/{kb}">Handbook</a>' in page and "1 files, 1 passages" in page
    user.cookies.set("agentloft_lang", "zh-CN")
    assert "1 个文件，1 个段落" in user.get("/knowledge").text


def test_a_collections_page_carries_its_files_for_the_script(user: ApiClient) -> None:
    kb = indexed(user, ("keys.md", "# Keys\n\nRotate them."), name="Handbook")
    page = user.get(f"/knowledge/{kb}")
    assert page.status_code == 200
    data = json.loads(re.search(r'<script type="application/json" id="kb-data">(.*?)</script>', page.text, re.S)[1])
    assert data["id"] == kb and data["status"] == "ready"
    assert [(f["name"], f["status"], f["chunks"]) for f in data["files"]] == [("keys.md", "ready", 1)]


def test_another_users_collection_is_the_404_page(user: ApiClient, make_user: Callable[..., ApiClient]) -> None:
    kb = indexed(user, ("keys.md", "words"))
    page = make_user("bob").get(f"/knowledge/{kb}")
    assert page.status_code == 404 and page.headers["content-type"].startswith("text/html")
