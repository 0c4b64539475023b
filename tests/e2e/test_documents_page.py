"""In the browser: open a document, edit it with the live preview, save, find it by search (Chinese and
English), and restore the earlier version."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import HeldRequests, add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer, call, text

pytestmark = pytest.mark.e2e


def test_edit_a_document_and_find_it_by_search(admin_page: Page) -> None:
    page = admin_page
    doc = api(page, "POST", "/api/agent-documents", {"title": "Release plan", "content": "draft", "type": "document"})
    api(page, "POST", "/api/agent-documents", {"title": "Other notes", "content": "nothing here", "type": "document"})

    page.goto("/agent-documents?type=document")
    expect(page.get_by_test_id("tab-document")).to_have_attribute("aria-selected", "true")
    page.get_by_role("link", name="Release plan").click()
    expect(page.get_by_test_id("doc-body")).to_have_text("draft")

    page.get_by_test_id("edit-doc").click()
    page.get_by_test_id("edit-title").fill("Release plan v2")
    page.get_by_test_id("edit-content").fill("# Rollout\n\nThe **蓝鲸迁移** ships on Friday with zero-downtime.")
    expect(page.get_by_test_id("edit-preview").locator("h1")).to_have_text("Rollout")
    expect(page.get_by_test_id("edit-preview").locator("strong")).to_have_text("蓝鲸迁移")
    page.get_by_test_id("save-doc").click()

    expect(page.get_by_test_id("doc-title")).to_have_text("Release plan v2")
    expect(page.get_by_test_id("doc-body").locator("h1")).to_have_text("Rollout")
    expect(page.locator("[data-testid=versions] tbody tr")).to_have_count(1)

    for query in ("蓝鲸迁移", "downtime"):
        page.goto("/agent-documents?type=document")
        page.get_by_test_id("doc-search").fill(query)
        page.get_by_test_id("doc-search").press("Enter")
        expect(page.get_by_test_id("doc-total")).to_have_text("1 found")
        expect(page.get_by_test_id("doc-items").get_by_role("link")).to_have_text(["Release plan v2"])

    page.get_by_role("link", name="Release plan v2").click()
    page.once("dialog", lambda d: d.accept())
    page.locator("[data-restore-version='1']").click()
    expect(page.get_by_test_id("doc-title")).to_have_text("Release plan")
    expect(page.get_by_test_id("doc-body")).to_have_text("draft")
    assert api(page, "GET", f"/api/agent-documents/{doc['id']}")["content"] == "draft"


def test_create_and_delete_from_the_pages(admin_page: Page) -> None:
    page = admin_page
    page.goto("/agent-documents")
    expect(page.get_by_test_id("doc-empty")).to_be_visible()
    page.get_by_role("button", name="New document").click()
    page.locator("#new-form [name=title]").fill("记住这个")
    page.locator("#new-form [name=content]").fill("用户喜欢简短的回答")
    page.locator("#new-form button[type=submit]").click()
    expect(page.get_by_test_id("doc-title")).to_have_text("记住这个")
    page.once("dialog", lambda d: d.accept())
    page.get_by_test_id("delete-doc").click()
    expect(page.get_by_test_id("doc-empty")).to_be_visible()
    assert api(page, "GET", "/api/agent-documents")["total"] == 0


def test_edit_and_delete_wait_for_the_page_script(admin_page: Page) -> None:
    """Until the page's script has run, Edit and Delete would do nothing when pressed: they are disabled."""
    page = admin_page
    doc = api(page, "POST", "/api/agent-documents", {"title": "Slow page", "content": "x", "type": "document"})
    script = HeldRequests(page, "**/documents-detail.js*")
    page.goto(f"/agent-documents/{doc['id']}", wait_until="commit")
    buttons = [page.get_by_test_id("edit-doc"), page.get_by_test_id("delete-doc")]
    for button in buttons:
        expect(button).to_be_disabled()
    script.release()
    for button in buttons:
        expect(button).to_be_enabled()


def test_a_knowledge_collection_from_upload_to_search_and_sources(
    admin_page: Page, fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    """The knowledge pages share this browser: make a collection, upload a text file, see it indexed,
    find it by a two-character Chinese word; then an agent's reply that searched it lists its sources, and
    so does one in a chat the collection was attached to in the composer."""
    page = admin_page
    page.goto("/knowledge")
    expect(page.get_by_test_id("kb-empty")).to_be_visible()
    page.get_by_test_id("new-kb").click()
    page.get_by_test_id("kb-name").fill("手册")
    page.get_by_test_id("kb-create").click()
    expect(page.get_by_test_id("kb-title")).to_have_text("手册")

    content = "# 备份\n\n数据库每天凌晨备份一次。\n\n# Keys\n\nRotate the signing key every ninety days."
    page.get_by_test_id("kb-file").set_input_files(
        files=[{"name": "运维.md", "mimeType": "text/markdown", "buffer": content.encode()}])
    row = page.get_by_test_id("kb-files").locator("tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-status", "ready")  # polled until indexed
    expect(row.locator("td").nth(2)).to_have_text("2")
    expect(page.get_by_test_id("kb-counts")).to_have_text("1 files, 2 passages")

    page.get_by_test_id("kb-q").fill("备份")
    page.get_by_test_id("kb-q").press("Enter")
    results = page.get_by_test_id("kb-results").locator("li")
    expect(results).to_have_count(1)
    expect(results.first.locator(".kb-source")).to_have_text("运维.md")
    expect(results.first.locator(".kb-text")).to_contain_text("数据库每天凌晨备份一次")

    kb_id = page.get_by_test_id("kb-title").evaluate("() => document.getElementById('kb-view').dataset.id")
    add_fake_model(page, fake_model_server)
    agent = api(page, "POST", "/api/admin/agents", {"slug": "ops", "name": "Ops"})
    tool = api(page, "POST", "/api/agent-tools", {"slug": "handbook", "name": "Handbook", "type": "knowledge",
                                                   "config": {"collectionIds": [kb_id]}})
    api(page, "PUT", f"/api/admin/agents/{agent['id']}/tools", [{"toolId": tool["id"]}])
    fake_model.push(call("handbook", {"query": "数据库备份"}), text("每天凌晨备份。"))
    page.goto("/chat")
    page.get_by_label("Message").fill("数据库多久备份？")
    page.get_by_role("button", name="Send").click()
    reply = page.locator(".message.assistant").last
    expect(reply.locator(".md")).to_have_text("每天凌晨备份。")
    sources = reply.get_by_test_id("sources")
    expect(sources.locator("summary")).to_have_text(["运维.md"])
    below = sources.bounding_box()
    text_box = reply.locator(".md").bounding_box()
    assert below and text_box and below["y"] > text_box["y"]  # under the reply's text
    sources.locator("summary").first.click()
    expect(sources.locator(".kb-chunk").first).to_contain_text("数据库每天凌晨备份一次")

    # The same collection as the reader's own, attached in a new chat's composer: the chat's model gets a
    # tool for it beside the agent's, the reply lists what it found, and the chat keeps the collection.
    page.goto("/chat")
    page.get_by_role("button", name="Knowledge").click()
    page.locator("#kb-menu").get_by_role("button", name="手册").click()
    chips = page.locator("#kb-tray .kb-chip .attach-name")
    expect(chips).to_have_text(["手册"])
    fake_model.push(call("my_knowledge", {"query": "signing key"}), text("Every ninety days."))
    page.get_by_label("Message").fill("How often is the signing key rotated?")
    page.get_by_role("button", name="Send").click()
    reply = page.locator(".message.assistant").last
    expect(reply.locator(".md")).to_have_text("Every ninety days.")
    assert [t["function"]["name"] for t in fake_model.requests[-2]["tools"]] == ["handbook", "my_knowledge"]
    sources = reply.get_by_test_id("sources")
    expect(sources.locator("summary")).to_have_text(["运维.md"])
    sources.locator("summary").first.click()
    expect(sources.locator(".kb-chunk").first).to_contain_text("Rotate the signing key every ninety days.")
    page.reload()
    expect(chips).to_have_text(["手册"])
    page.get_by_role("button", name="Stop searching 手册").click()
    expect(page.locator("#kb-tray")).to_be_hidden()
    fake_model.push(text("Noted."))
    page.get_by_label("Message").fill("Thanks.")
    page.get_by_role("button", name="Send").click()
    expect(page.locator(".message.assistant").last.locator(".md")).to_have_text("Noted.")
    assert [t["function"]["name"] for t in fake_model.requests[-1]["tools"]] == ["handbook"]
    assert api(page, "GET", f"/api/agent-sessions/{page.url.rsplit('/', 1)[-1]}")["knowledge"] == []
