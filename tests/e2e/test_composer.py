"""The message box as people type in it every day: it grows with a long text (a pasted page) and shrinks
after sending; Enter that confirms a Chinese input method's composition never sends (Chrome's order,
Safari's order where the composition ends before that Enter, keyCode 229); Shift+Enter breaks the line;
the same holds in the editor of a sent message; and on a touch screen Enter breaks the line, Send sends."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from playwright.sync_api import Locator, Page, expect

from tests.e2e.conftest import add_fake_model, api
from tests.fakes.openai_server import FakeModel, FakeModelServer

pytestmark = pytest.mark.e2e

# Enter as a script sends it: no default action (no line break), no ``isComposing`` flag.
ENTER = ("e => e.dispatchEvent(new KeyboardEvent('keydown', "
         "{key: 'Enter', keyCode: 13, bubbles: true, cancelable: true}))")
SAFARI_IME_ENTER = ENTER.replace("13", "229")
# A file dropped on an element, and one pasted into it, as the browser delivers them.
_FILE = "const t = new DataTransfer(); t.items.add(new File(['some words'], name, {type: 'text/plain'}));"
_SEND = "bubbles: true, cancelable: true"
DROP = f"(e, name) => {{ {_FILE} e.dispatchEvent(new DragEvent('drop', {{dataTransfer: t, {_SEND}}})); }}"
PASTE = f"(e, name) => {{ {_FILE} e.dispatchEvent(new ClipboardEvent('paste', {{clipboardData: t, {_SEND}}})); }}"


def height(box: Locator) -> float:
    return box.evaluate("e => e.getBoundingClientRect().height")


def compose(page: Page, box: Locator, word: str) -> None:
    """Type ``word`` as an input method does: a composition, its text, and Enter to confirm it (Chrome
    sends that Enter with ``isComposing``; some input methods do not, so the page must know from the
    composition events)."""
    box.dispatch_event("compositionstart", {"data": ""})
    page.keyboard.insert_text(word)
    box.evaluate(ENTER)
    box.dispatch_event("compositionend", {"data": word})


def test_the_box_grows_waits_for_an_input_method_and_breaks_lines_on_a_phone(
    admin_page: Page, new_page: Callable[..., Page], fake_model_server: FakeModelServer, fake_model: FakeModel
) -> None:
    page = admin_page
    add_fake_model(page, fake_model_server)
    api(page, "POST", "/api/admin/agents", {"slug": "helper", "name": "Helper"})
    page.goto("/chat")
    box = page.get_by_label("Message")
    empty = height(box)
    box.fill("\n".join(f"line {i}" for i in range(8)))
    grown = height(box)
    assert grown > empty * 2, (empty, grown)
    box.fill("\n".join(f"line {i}" for i in range(200)))  # capped (40% of the window), then it scrolls
    assert grown < height(box) <= 860 * 0.4 + 1
    box.fill("")
    assert height(box) == empty

    box.focus()
    compose(page, box, "你好")
    page.keyboard.insert_text("世界")
    box.evaluate(SAFARI_IME_ENTER)  # Safari: compositionend came first, then Enter with keyCode 229
    page.keyboard.press("Shift+Enter")
    page.keyboard.insert_text("！")
    expect(box).to_have_value("你好世界\n！")
    expect(page.locator(".message")).to_have_count(0)
    page.keyboard.press("Enter")
    expect(page.locator(".message.user .bubble")).to_have_text("你好世界\n！")
    expect(page.locator(".message.assistant")).to_contain_text("echo: 你好世界")
    expect(box).to_have_value("")
    assert height(box) == empty

    # The editor of a sent message: the same rules.
    sent = page.locator(".message.user").first
    sent.hover()
    sent.get_by_role("button", name="Edit").click()
    editor = sent.get_by_label("Edited text")
    editor.press("End")
    compose(page, editor, "吗")
    expect(editor).to_be_visible()
    expect(editor).to_have_value("你好世界\n！吗")
    page.keyboard.press("Enter")
    expect(sent.locator(".bubble")).to_have_text("你好世界\n！吗")

    # Files: one the server cannot read says so on its chip and holds Send back until removed; a text
    # file attached by the button uploads, goes with the message, shows as a chip that downloads it, and
    # the model gets its text.
    with page.expect_file_chooser() as chooser:
        page.get_by_role("button", name="Attach").click()
    chooser.value.set_files([{"name": "blob.bin", "mimeType": "application/octet-stream", "buffer": bytes(range(256))},
                             {"name": "notes.txt", "mimeType": "text/plain", "buffer": b"The gate code is 4711."}])
    bad = page.locator("#attach-tray .attach-chip[data-name='blob.bin']")
    expect(bad.get_by_role("alert")).to_contain_text("This kind of file cannot be read here")
    expect(page.locator("#attach-tray .attach-chip[data-name='notes.txt']")).to_have_attribute("data-state", "ready")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    bad.get_by_role("button", name="Remove blob.bin").click()
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    box.fill("What is the gate code?")
    page.keyboard.press("Enter")
    asked = page.locator(".message.user").last
    expect(asked.locator(".message-attachments a")).to_have_attribute("download", "notes.txt")
    expect(page.locator("#attach-tray")).to_be_hidden()
    expect(page.locator(".message.assistant").last).to_contain_text("echo: What is the gate code?")
    sent_text = fake_model.requests[-1]["messages"][-1]["content"]
    assert any("The gate code is 4711." in part.get("text", "") for part in sent_text)
    page.reload()  # the saved message shows its file too
    expect(page.locator(".message.user").last.locator(".message-attachments")).to_contain_text("notes.txt")

    # Dropped on the chat, and pasted into the box (a screenshot is a file on the clipboard).
    page.locator("#chat").evaluate(DROP, "dropped.md")
    page.get_by_label("Message").evaluate(PASTE, "pasted.txt")
    for name in ("dropped.md", "pasted.txt"):
        expect(page.locator(f"#attach-tray .attach-chip[data-name='{name}']")).to_have_attribute("data-state", "ready")

    # A phone's keyboard has no Shift: Enter breaks the line, the Send button sends.
    phone = new_page(viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True)
    phone.context.add_cookies(page.context.cookies())
    phone.goto("/chat")
    phone_box = phone.get_by_label("Message")
    expect(phone_box).to_have_attribute("placeholder", "Message…")
    phone_box.tap()
    phone.keyboard.insert_text("first line")
    phone.keyboard.press("Enter")
    phone.keyboard.insert_text("second line")
    expect(phone_box).to_have_value("first line\nsecond line")
    expect(phone.locator(".message")).to_have_count(0)
    phone.get_by_role("button", name="Send").tap()
    expect(phone.locator(".message.user .bubble")).to_have_text("first line\nsecond line")
