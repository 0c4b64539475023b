"""The files API over real HTTP: upload, read back, list and delete one's own files; types from content;
the size limit and its own body limit; another user's file is 404 on every route. Each test runs on both
stores, the data dir and an S3 bucket (moto's server, ``tests.files.conftest``); those that look into the
data dir itself run on it alone."""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.files.conftest import BUCKET
from tests.files.samples import GIF, JPEG, PNG, WEBP
from tests.support import ApiClient, LiveApp, same_answer, start_app

BASE = "/api/files"
DATA_DIR_ONLY = pytest.mark.parametrize("app", ["data dir"], indirect=True)


@pytest.fixture(params=["data dir", "s3"])
def app(request: pytest.FixtureRequest, tmp_path: Path, template_db: Path) -> Iterator[LiveApp]:
    settings: dict[str, Any] = {}
    if request.param == "s3":
        request.getfixturevalue("s3_env")
        settings["file_store"] = f"s3://{BUCKET}/{tmp_path.name}"
    live = start_app(tmp_path / "data", template_db, **settings)
    yield live
    live.stop()


def upload(client: ApiClient, name: str, data: bytes, status: int = 201, content_type: str | None = None) -> Any:
    files = {"file": (name, data, content_type or "application/octet-stream")}
    resp = client.post(BASE, files=files)
    assert resp.status_code == status, resp.text
    return resp.json()


def error_code(resp: Any) -> str:
    return resp.json()["error"]["code"]


@DATA_DIR_ONLY
def test_a_text_file_is_ready_at_once_and_reads_back(app: LiveApp, user: ApiClient) -> None:
    body = upload(user, "notes.md", "# 标题\n\nsome words\n".encode())
    assert body["id"].startswith("fl_")
    assert {k: body[k] for k in ("name", "mediaType", "size", "status", "error", "chars", "pages")} == {
        "name": "notes.md", "mediaType": "text/markdown", "size": len("# 标题\n\nsome words\n".encode()),
        "status": "ready", "error": None, "chars": len("# 标题\n\nsome words\n"), "pages": None}
    assert user.ok("GET", f"{BASE}/{body['id']}") == body
    content = user.get(f"{BASE}/{body['id']}/content")
    assert content.status_code == 200 and content.content == "# 标题\n\nsome words\n".encode()
    assert content.headers["content-type"] == "text/markdown"
    assert content.headers["content-disposition"] == "attachment; filename=\"notes.md\"; filename*=UTF-8''notes.md"
    # what was read is kept in the store, as the pages JSON, not in the database
    (row,) = app.sql("SELECT sha256, status FROM files WHERE id = ?", (body["id"],))
    assert row[1] == "ready" and len(row[0]) == 64
    text_object = app.data_dir / "files" / str(user.ok("GET", "/api/auth/me")["id"]) / f"{body['id']}.text.json"
    assert json.loads(text_object.read_text()) == {"pages": [{"number": None, "text": "# 标题\n\nsome words\n"}]}


@DATA_DIR_ONLY
def test_the_store_keeps_files_private_to_the_server(app: LiveApp, user: ApiClient) -> None:
    body = upload(user, "a.txt", b"secret")
    user_dir = app.data_dir / "files" / str(user.ok("GET", "/api/auth/me")["id"])
    for directory in (app.data_dir / "files", user_dir):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    original = user_dir / body["id"]
    assert original.read_bytes() == b"secret" and stat.S_IMODE(original.stat().st_mode) == 0o600
    assert [p.name for p in user_dir.iterdir() if p.name.startswith(".put-")] == []  # no temporary left


@pytest.mark.parametrize(("name", "data", "media_type"), [
    ("photo.png", PNG, "image/png"), ("photo.jpg", JPEG, "image/jpeg"), ("anim.gif", GIF, "image/gif"),
    ("pic.webp", WEBP, "image/webp"),
    ("table.csv", b"a,b\n1,2\n", "text/csv"), ("data.json", b'{"a": 1}', "application/json"),
    ("main.py", b"print('hi')\n", "text/x-python"), ("README", b"plain words", "text/plain"),
    ("gbk.txt", "中文内容，国标编码".encode("gb18030"), "text/plain"),
    ("bom16.txt", "UTF-16 text".encode("utf-16"), "text/plain"),
])
def test_types_come_from_the_content(user: ApiClient, name: str, data: bytes, media_type: str) -> None:
    body = upload(user, name, data, content_type="application/x-whatever")  # the claimed type is ignored
    assert (body["mediaType"], body["status"]) == (media_type, "ready")
    if media_type.startswith("image/"):
        assert (body["chars"], body["pages"]) == (None, None)


def test_a_name_does_not_make_a_type(user: ApiClient) -> None:
    # text named like a PDF is text; a PNG named like text is an image
    assert upload(user, "report.pdf", b"just words")["mediaType"] == "text/plain"
    assert upload(user, "notes.txt", PNG)["mediaType"] == "image/png"


def test_text_in_a_legacy_encoding_is_read_as_such(user: ApiClient, app: LiveApp) -> None:
    body = upload(user, "gbk.txt", "中文内容".encode("gb18030"))
    assert body["chars"] == 4  # decoded, not counted in bytes


@pytest.mark.parametrize(("name", "data", "says"), [
    ("tool.exe", b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff\x00\x00" + bytes(range(256)) * 4, "supported:"),
    ("archive.zip", b"PK\x03\x04\x14\x00\x00\x00\x08\x00" + b"\x00" * 20 + b"hello.txt" + bytes(64),
     "zip archive"),
    ("old.doc", bytes.fromhex("d0cf11e0a1b11ae1") + bytes(504) + bytes(range(256)) * 8, "save it as .docx"),
    ("noise.bin", bytes(range(256)) * 16, "supported:"),
])
def test_a_type_it_cannot_read_is_415(user: ApiClient, name: str, data: bytes, says: str) -> None:
    resp = user.post(BASE, files={"file": (name, data)})
    assert resp.status_code == 415 and error_code(resp) == "file_type_unsupported", resp.text
    assert says in resp.json()["error"]["message"]
    assert user.ok("GET", BASE)["total"] == 0  # nothing kept


def test_names_are_cleaned(user: ApiClient) -> None:
    assert upload(user, "C:\\Users\\me\\My report.txt", b"x")["name"] == "My report.txt"
    assert upload(user, "../../etc/passwd", b"x")["name"] == "passwd"
    assert upload(user, "evil\u202etxt.exe", b"x")["name"] == "eviltxt.exe"
    long = upload(user, "n" * 400 + ".md", b"x")["name"]
    assert len(long) == 255 and long.endswith(".md")
    assert upload(user, "   ", b"x")["name"] == "file"  # nothing left of the name


def test_listing_pages_newest_first(user: ApiClient, make_user: Callable[..., ApiClient]) -> None:
    ids = [upload(user, f"f{i}.txt", f"file {i}".encode())["id"] for i in range(5)]
    upload(make_user("bob"), "bobs.txt", b"not alice's")
    first = user.ok("GET", BASE, params={"page": 1, "pageSize": 2})
    assert [f["id"] for f in first["items"]] == ids[::-1][:2]
    assert (first["total"], first["hasMore"]) == (5, True)
    last = user.ok("GET", BASE, params={"page": 3, "pageSize": 2})
    assert [f["id"] for f in last["items"]] == [ids[0]] and last["hasMore"] is False


@DATA_DIR_ONLY
def test_delete_removes_the_row_and_the_bytes(app: LiveApp, user: ApiClient) -> None:
    body = upload(user, "a.txt", b"gone soon")
    user_dir = app.data_dir / "files" / str(user.ok("GET", "/api/auth/me")["id"])
    assert (user_dir / body["id"]).exists()
    assert user.delete(f"{BASE}/{body['id']}").status_code == 204
    assert not (user_dir / body["id"]).exists() and not (user_dir / f"{body['id']}.text.json").exists()
    for method, path in (("GET", ""), ("GET", "/content"), ("DELETE", "")):
        resp = user.request(method, f"{BASE}/{body['id']}{path}")
        assert resp.status_code == 404 and error_code(resp) == "file_not_found"
    assert app.sql("SELECT count(*) FROM files") == [(0,)]


def test_another_users_file_is_404_on_every_route(user: ApiClient, make_user: Callable[..., ApiClient]) -> None:
    mine = upload(user, "mine.txt", b"alice's words")
    bob = make_user("bob")
    for method, path in (("GET", ""), ("GET", "/content"), ("DELETE", "")):
        resp = bob.request(method, f"{BASE}/{mine['id']}{path}")
        assert resp.status_code == 404 and error_code(resp) == "file_not_found", (method, path)
        missing = bob.request(method, f"{BASE}/fl_nothing_here{path}")
        assert same_answer(missing, resp)  # the same answer as for a file that does not exist
    assert bob.ok("GET", BASE)["total"] == 0
    assert user.get(f"{BASE}/{mine['id']}/content").content == b"alice's words"  # still there


def test_signed_out_is_401(anon: ApiClient, user: ApiClient) -> None:
    mine = upload(user, "mine.txt", b"x")
    assert anon.post(BASE, files={"file": ("a.txt", b"x")}).status_code == 401
    assert anon.get(f"{BASE}/{mine['id']}").status_code == 401
    assert anon.get(BASE).status_code == 401


def test_an_upload_without_a_file_is_422(user: ApiClient) -> None:
    resp = user.post(BASE, data={"other": "x"}, files={"notfile": ("a.txt", b"x")})
    assert resp.status_code == 422 and "file" in resp.json()["error"]["fields"]


def test_a_file_over_the_limit_is_413_and_nothing_is_kept(tmp_path: Path, template_db: Path) -> None:
    live = start_app(tmp_path / "data", template_db, file_max_bytes=100_000)
    try:
        with live.client() as c:
            c.ok("POST", "/api/auth/signup", json={"username": "admin", "password": "password123"})
            assert upload(c, "fits.txt", b"x" * 100_000)["size"] == 100_000
            just_over = c.post(BASE, files={"file": ("over.txt", b"x" * 100_001)})
            assert just_over.status_code == 413 and error_code(just_over) == "file_too_large"
            assert "100000 bytes" in just_over.json()["error"]["message"]
            # far over: refused by the body limit from the declared length, with the same code and words
            far = c.post(BASE, files={"file": ("far.txt", b"x" * 1_000_000)})
            assert far.status_code == 413 and same_answer(far, just_over)
            (kept,) = c.ok("GET", BASE)["items"]
        stored = sorted(p.name for p in (live.data_dir / "files").rglob("*") if p.is_file())
        assert stored == sorted([kept["id"], f"{kept['id']}.text.json"])  # nothing of the refused ones
    finally:
        live.stop()


def test_uploads_may_be_larger_than_the_apis_body_limit(user: ApiClient) -> None:
    """The API refuses bodies over 16 MiB; an upload of 20 MiB (under the default 25 MiB) is kept."""
    data = b"0123456789abcdef" * (20 * 2**20 // 16)
    assert upload(user, "big.txt", data)["size"] == 20 * 2**20
    other = user.post("/api/agent-documents", content=b"{" + b" " * (17 * 2**20) + b"}",
                      headers={"content-type": "application/json"})
    assert other.status_code == 413 and error_code(other) == "payload_too_large"


def test_an_empty_file_is_an_empty_text(user: ApiClient) -> None:
    body = upload(user, "empty.txt", b"")
    assert (body["status"], body["chars"], body["mediaType"]) == ("ready", 0, "text/plain")


def test_content_of_a_text_file_never_claims_a_charset(user: ApiClient) -> None:
    body = upload(user, "page.csv", "名,值\n".encode("gb18030"))
    resp = user.get(f"{BASE}/{body['id']}/content")
    assert resp.headers["content-type"] == "text/csv" and resp.content == "名,值\n".encode("gb18030")
    assert resp.headers["content-disposition"].startswith("attachment;")
    assert "sandbox" in resp.headers["content-security-policy"]
