"""What the admin pages share (``js/pages/admin-common.js``), in a real browser: deleting a row after a
confirmation (and not without one), a refused save that keeps the editor open with the reason, and a
refused in-place change whose row goes back to what the server holds; Admin → Usage's top users and
agents; Admin → Groups' members, named on Admin → Users; and Admin → Audit's type filter and export link."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from tests.chat.helpers import parse_sse, text_of
from tests.e2e.conftest import HeldRequests, add_fake_model, api, csrf_headers, sign_in
from tests.fakes.oidc_server import OidcProvider
from tests.fakes.openai_server import FakeModel, FakeModelServer, text
from tests.identity.conftest import oidc_server  # noqa: F401  (the test OpenID provider, once per session)
from tests.support import LiveApp

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize(("path", "create", "key"), [
    ("/admin/models", ("/api/admin/models", {"name": "Spare", "provider": "openai", "model": "m"}), "name"),
    ("/admin/agents", ("/api/admin/agents", {"slug": "spare", "name": "Spare"}), "slug"),
    ("/admin/agent-tools", ("/api/agent-tools", {"slug": "spare", "name": "Spare", "type": "calculator"}), "slug"),
])
def test_a_row_is_deleted_only_after_confirming(admin_page: Page, path: str, create: tuple[str, dict[str, str]],
                                                key: str) -> None:
    page = admin_page
    url, body = create
    api(page, "POST", url, body)
    page.goto(path)
    row = page.locator(f"tbody tr[data-{key}='{body[key]}']")
    expect(row).to_be_visible()

    # asked in the page's own dialog, never the browser's confirm() (which would fail the test here)
    page.on("dialog", lambda dialog: pytest.fail(f"browser dialog: {dialog.message}"))
    confirm = page.locator("dialog.confirm-dialog")
    row.get_by_role("button", name="Delete").click()
    expect(confirm).to_contain_text("Spare")
    expect(confirm.get_by_role("button", name="Cancel")).to_be_focused()
    confirm.get_by_role("button", name="Cancel").click()
    expect(confirm).to_have_count(0)
    expect(row).to_be_visible()
    row.get_by_role("button", name="Delete").click()
    confirm.get_by_role("button", name="Delete").click()
    expect(row).to_have_count(0)
    expect(page.locator(".page-error")).to_be_hidden()


def test_a_refused_save_keeps_the_editor_open_with_the_reason(admin_page: Page) -> None:
    page = admin_page
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    page.goto("/admin/agents")
    page.get_by_role("button", name="New agent").click()
    dialog = page.locator("#agent-dialog")
    # Saved empty from the bottom of the dialog: the first field that needs something gets the focus,
    # which scrolls the dialog up to it.
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.get_by_label("Name")).to_be_focused()
    expect(dialog.get_by_label("Name")).to_have_attribute("aria-invalid", "true")
    expect(dialog.get_by_label("Name")).to_be_in_viewport()
    dialog.get_by_label("Name").fill("Second Hélper 2")
    expect(dialog.get_by_label("Slug")).to_have_value("second-helper-2")  # filled in from the name
    dialog.get_by_label("Slug").fill("helper")
    dialog.get_by_label("Name").fill("Second")  # typed by the admin, the slug no longer follows
    expect(dialog.get_by_label("Slug")).to_have_value("helper")
    dialog.get_by_role("button", name="Save").click()
    expect(dialog.locator(".field-error")).to_have_text(["taken"])  # beside the field, as for tools
    expect(dialog.get_by_label("Slug")).to_have_attribute("aria-invalid", "true")
    expect(dialog).to_be_visible()
    expect(page.locator("tbody tr")).to_have_count(1)


def turn(page: Page, slug: str, message: str, reply: str) -> None:
    """One chat turn through the API as the page's user, read to its end (a Server-Sent Events answer)."""
    answer = page.request.fetch(f"/api/agents/{slug}/chat", method="POST", data={"message": message},
                                headers=csrf_headers(page))
    assert answer.ok and text_of(parse_sse(answer.text())) == reply, answer.text()


def test_a_refused_change_shows_why_and_the_row_shows_what_was_stored(
    admin_page: Page, new_page: Callable[..., Page], fake_model_server: FakeModelServer, fake_model: FakeModel,
) -> None:
    page = admin_page
    page.goto("/admin/users")
    # Add user with nothing filled in: each problem once, beside its field in words, the first focused.
    page.get_by_role("button", name="Add user").click()
    form = page.locator("#user-form")
    expect(form.locator(".field-error")).to_have_count(2)
    expect(page.get_by_label("Username")).to_be_focused()
    expect(page.locator("p.form-error")).to_be_hidden()
    expect(page.locator("main")).not_to_contain_text("username:")
    role = page.locator("select[data-role='root']")
    expect(role).to_have_value("admin")
    role.select_option("user")  # the only admin: refused
    expect(page.locator(".form-error")).to_have_text("The last administrator cannot be removed or demoted.")
    expect(page.locator("select[data-role='root']")).to_have_value("admin")
    # Usage by two people with two agents, made after them (so ranking by tokens is not the order of ids)
    model = add_fake_model(page, fake_model_server)
    api(page, "PUT", f"/api/admin/models/{model['id']}", {"inputPricePerMTok": 1, "outputPricePerMTok": 2})
    for slug in ("helper", "writer"):
        api(page, "POST", "/api/admin/agents", {"slug": slug, "name": slug.title()})
    api(page, "POST", "/api/admin/users", {"username": "alice", "password": "password123", "role": "user"})
    alice = new_page()
    sign_in(alice, "alice", "password123")
    expect(alice).not_to_have_url(re.compile(r"/login"))
    fake_model.push(text("a", input_tokens=10, output_tokens=5), text("b", input_tokens=100, output_tokens=50),
                    text("c", input_tokens=7, output_tokens=1))
    turn(page, "helper", "one", "a")
    turn(alice, "writer", "two", "b")
    turn(page, "writer", "three", "c")
    # Admin → Usage from the same navigation: the vendored chart library draws both charts (CSP allows it)
    page.get_by_role("link", name="Usage").click()
    expect(page.locator("#usage-tokens-chart canvas")).to_have_count(1)
    expect(page.locator("#usage-cost-chart .u-legend")).to_contain_text("Cost")
    expect(page.locator("#usage-table tr.total")).to_contain_text("Total")
    # ... and ranks who and which agent used the most tokens, most first, with the cost beside
    top_users = page.get_by_role("region", name="Top users by tokens").get_by_role("listitem")
    expect(top_users.locator(".usage-top-name")).to_have_text(["alice", "root"])
    expect(top_users.first).to_contain_text("150 tokens")
    expect(top_users.first.locator(".usage-top-cost")).to_have_text("$0.0002")
    top_agents = page.get_by_role("region", name="Top agents by tokens").get_by_role("listitem")
    expect(top_agents.locator(".usage-top-name")).to_have_text(["Writer", "Helper"])
    expect(top_agents.last).to_contain_text("15 tokens")

    # Admin → Groups: a group made, its members ticked, and Admin → Users naming it on the member's row
    page.get_by_role("link", name="Groups").click()
    page.locator("#group-form").get_by_label("Name").fill("Team")
    page.get_by_role("button", name="Add group").click()
    row = page.locator("tbody tr[data-group='Team']")
    expect(row.locator(".member-count")).to_have_text("0")
    row.get_by_role("button", name="Members").click()
    row.get_by_role("group", name="Members of Team").get_by_label("root").check()
    row.get_by_role("button", name="Save").click()
    expect(row.locator(".member-count")).to_have_text("1")
    page.get_by_role("link", name="Users").click()
    expect(page.locator("tbody tr[data-username='root'] td.groups")).to_have_text("Team")

    # Admin → Audit: the type filter narrows the list to the group's changes, and the export link keeps it
    page.get_by_role("link", name="Audit", exact=True).click()
    expect(page.locator("#audit-table > tbody > tr[data-type='auth.sign_in']")).not_to_have_count(0)
    page.get_by_label("Type").select_option(label="Admin change")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/admin/audit\?type=admin\.change"))
    changes = page.locator("#audit-table > tbody > tr")
    expect(changes.filter(has_text="groups #1 insert")).to_have_count(1)  # the group made above
    expect(page.locator("#audit-table > tbody > tr:not([data-type='admin.change'])")).to_have_count(0)
    expect(page.get_by_role("link", name="Export JSONL")).to_have_attribute(
        "href", "/api/admin/audit.jsonl?type=admin.change")
    changes.first.get_by_text("All details").click()
    expect(changes.first.locator("pre.audit-json")).to_be_visible()


def test_the_agent_editor_shows_only_once_its_sections_are_filled(admin_page: Page) -> None:
    """While the tool list is on its way the editor stays closed, so a choice made in it (kind "remote")
    cannot be reset when that section fills in; shown before, a quick user lost it."""
    page = admin_page
    page.goto("/admin/agents")
    tools = HeldRequests(page, "**/api/agent-tools?*")
    with page.expect_request("**/api/agent-tools?*"):
        page.get_by_role("button", name="New agent").click()
    form = page.locator("#agent-form")
    expect(form).to_be_hidden()
    tools.release()
    expect(form).to_be_visible()
    form.get_by_label("Kind").select_option("remote")
    expect(form.get_by_label("System prompt")).to_be_hidden()


def test_signing_in_with_an_identity_provider(
    admin_page: Page, new_page: Callable[..., Page], app: LiveApp, oidc_server: OidcProvider  # noqa: F811
) -> None:
    """A provider added and edited in Admin → Settings → Sign-in; the sign-in page's button, the
    provider's own login form, and back signed in where the sign-in began; the admin list of users says
    the account is the provider's, with the groups the provider named."""
    api(admin_page, "PUT", "/api/admin/settings", {"allowedInternalHosts": ["127.0.0.1"]})
    client_id = f"agentloft-e2e-{app.url.rsplit(':', 1)[1]}"
    oidc_server.register(client_id, "e2e-secret", [f"{app.url}/auth/oidc/corp/callback"])
    admin_page.goto("/admin/settings")  # the provider added in Admin → Settings → Sign-in
    form = admin_page.locator("#provider-form")
    form.get_by_label("Slug").fill("corp")
    form.get_by_label("Name", exact=True).fill("Corp")
    form.get_by_label("Issuer URL").fill(oidc_server.issuer)
    form.get_by_label("Client ID").fill(client_id)
    form.get_by_label("Client secret").fill("e2e-secret")
    form.get_by_label("Scopes").fill("openid, email, profile, groups")
    form.get_by_label("Admin groups").fill("loft-admins")
    form.get_by_role("button", name="Save").click()
    admin_page.locator("#providers-table tr[data-slug='corp']").get_by_role("button", name="Edit").click()
    form.get_by_label("Name", exact=True).fill("Corp SSO")  # an edit keeps the secret it does not send
    form.get_by_role("button", name="Save").click()
    expect(admin_page.locator("#providers-table tr[data-slug='corp']")).to_contain_text("Corp SSO")
    page = new_page()
    page.goto("/login?next=/admin/users")
    page.get_by_role("button", name="Sign in with Corp SSO").click()
    expect(page.get_by_role("heading", name="Test identity provider")).to_be_visible()
    page.get_by_label("Login").fill("alice")
    page.get_by_label("Password").fill("alice-pw")
    page.get_by_role("button", name="Sign in to the test provider").click()
    expect(page).to_have_url(re.compile(r"/admin/users$"))
    alice = page.locator("tr[data-username='alice']")
    expect(alice.locator("td[data-provider]")).to_have_text("corp")  # an admin: a member of loft-admins
    for group in ("engineering (corp)", "loft-admins (corp)"):  # the groups the provider named, synced
        expect(alice.locator("td.groups")).to_contain_text(group)
    expect(page.locator("tr[data-username='root'] td[data-provider]")).to_have_text("Password")
