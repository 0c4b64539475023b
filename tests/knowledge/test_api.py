"""The knowledge API over real HTTP: collections, files added and indexed in the background, search;
isolation between users; bad input in the one error shape."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.knowledge.helpers import BASE, add, collection, indexed, search, settled, upload
from tests.support import ApiClient, LiveApp

GUIDE = "# Keys\n\nRotate the signing key every ninety days.\n\n# Backups\n\nBackups run nightly at two."


def code(resp: Any) -> str:
    return resp.json()["error"]["code"]


def test_a_collection_is_created_read_listed_renamed_and_deleted(user: ApiClient) -> None:
    made = collection(user, "Handbook", "How we work")
    assert made["id"].startswith("kb_")
    assert {k: made[k] for k in ("name", "description", "fileCount", "chunkCount", "status")} == {
        "name": "Handbook", "description": "How we work", "fileCount": 0, "chunkCount": 0, "status": "ready"}
    assert user.ok("GET", f"{BASE}/{made['id']}")["files"] == []
    second = collection(user, "Second")
    listed = user.ok("GET", BASE)
    assert [c["id"] for c in listed["items"]] == [second["id"], made["id"]] and listed["total"] == 2
    renamed = user.ok("PUT", f"{BASE}/{made['id']}", json={"name": "  Manual "})
    assert (renamed["name"], renamed["description"]) == ("Manual", "How we work")
    user.ok("DELETE", f"{BASE}/{made['id']}", status=204)
    assert code(user.get(f"{BASE}/{made['id']}")) == "knowledge_not_found"


def test_a_text_file_is_indexed_in_the_background_and_found(user: ApiClient, app: LiveApp) -> None:
    kb = collection(user)["id"]
    file_id = upload(user, "guide.md", GUIDE)
    entry = add(user, kb, file_id)
    assert entry == {"id": file_id, "name": "guide.md", "status": "processing", "error": None, "chunks": 0}
    done = settled(user, kb)
    assert done["files"] == [{"id": file_id, "name": "guide.md", "status": "ready", "error": None, "chunks": 2}]
    assert (done["fileCount"], done["chunkCount"]) == (1, 2)
    found = search(user, kb, "when do backups run?")
    assert found["mode"] == "lexical"
    top = found["items"][0]
    assert (top["fileId"], top["fileName"], top["page"]) == (file_id, "guide.md", None)
    assert top["text"] == "Backups\n\nBackups run nightly at two." and top["score"] > 0
    assert isinstance(top["chunkId"], int)
    # adding it again changes nothing and queues nothing
    assert add(user, kb, file_id)["status"] == "ready"
    assert app.sql("SELECT count(*) FROM jobs WHERE kind = 'knowledge.index'") == [(1,)]


def test_removing_a_file_takes_its_chunks_out_of_search(user: ApiClient, app: LiveApp) -> None:
    kb = indexed(user, ("guide.md", GUIDE))
    file_id = user.ok("GET", f"{BASE}/{kb}")["files"][0]["id"]
    user.ok("DELETE", f"{BASE}/{kb}/files/{file_id}", status=204)
    assert search(user, kb, "backups")["items"] == []
    assert app.sql("SELECT count(*) FROM knowledge_chunks") == [(0,)]
    assert code(user.delete(f"{BASE}/{kb}/files/{file_id}")) == "knowledge_file_not_found"
    assert user.ok("GET", f"/api/files/{file_id}")["id"] == file_id  # the file itself stays


def test_deleting_the_file_or_the_collection_deletes_the_chunks(user: ApiClient, app: LiveApp) -> None:
    kb = indexed(user, ("a.md", GUIDE), ("b.md", "Nothing about keys here."))
    first, _ = (f["id"] for f in user.ok("GET", f"{BASE}/{kb}")["files"])
    user.ok("DELETE", f"/api/files/{first}", status=204)
    after = user.ok("GET", f"{BASE}/{kb}")
    assert (after["fileCount"], after["chunkCount"]) == (1, 1)
    assert [h["fileName"] for h in search(user, kb, "keys")["items"]] == ["b.md"]
    user.ok("DELETE", f"{BASE}/{kb}", status=204)
    assert app.sql("SELECT count(*) FROM knowledge_chunks") == [(0,)]
    assert app.sql("SELECT count(*) FROM knowledge_files") == [(0,)]


def test_an_image_fails_with_its_reason(user: ApiClient) -> None:
    from tests.files.samples import PNG

    kb = collection(user)["id"]
    resp = user.post("/api/files", files={"file": ("pic.png", PNG, "image/png")})
    add(user, kb, resp.json()["id"])
    files = settled(user, kb)["files"]
    assert [(f["status"], f["error"]) for f in files] == [("failed", "an image holds no text to index")]


def test_another_users_collection_is_missing_on_every_route(user: ApiClient,
                                                            make_user: Callable[..., ApiClient]) -> None:
    kb = indexed(user, ("guide.md", GUIDE))
    file_id = user.ok("GET", f"{BASE}/{kb}")["files"][0]["id"]
    bob = make_user("bob")
    own = upload(bob, "mine.txt", "bob's words")
    for method, url, body in [
        ("GET", f"{BASE}/{kb}", None), ("PUT", f"{BASE}/{kb}", {"name": "x"}), ("DELETE", f"{BASE}/{kb}", None),
        ("POST", f"{BASE}/{kb}/files", {"fileId": own}), ("DELETE", f"{BASE}/{kb}/files/{file_id}", None),
        ("GET", f"{BASE}/{kb}/search?q=keys", None),
    ]:
        resp = bob.request(method, url, json=body)
        assert (resp.status_code, code(resp)) == (404, "knowledge_not_found"), (method, url)
    assert bob.ok("GET", BASE)["items"] == []
    assert search(user, kb, "keys")["items"]  # still there for its owner


def test_a_file_one_does_not_own_cannot_be_added(user: ApiClient, make_user: Callable[..., ApiClient]) -> None:
    theirs = upload(make_user("bob"), "theirs.txt", "secret words")
    kb = collection(user)["id"]
    resp = user.post(f"{BASE}/{kb}/files", json={"fileId": theirs})
    assert (resp.status_code, code(resp)) == (404, "file_not_found")
    resp = user.post(f"{BASE}/{kb}/files", json={"fileId": "fl_nope"})
    assert (resp.status_code, code(resp)) == (404, "file_not_found")


def test_bad_input_is_refused_in_the_one_error_shape(user: ApiClient, anon: ApiClient) -> None:
    kb = collection(user)["id"]
    for body in ({"name": ""}, {"name": "x" * 256}, {}, {"name": "a", "extra": 1}, {"name": "a\u0000"}):
        resp = user.post(BASE, json=body)
        assert (resp.status_code, code(resp)) == (422, "validation_error"), body
    resp = user.post(f"{BASE}/{kb}/files", json={})
    assert (resp.status_code, code(resp)) == (422, "validation_error")
    for params in ({"q": ""}, {"q": "keys", "topK": 0}, {"q": "keys", "topK": 51}, {}):
        resp = user.get(f"{BASE}/{kb}/search", params=params)
        assert (resp.status_code, code(resp)) == (422, "validation_error"), params
    resp = user.get(f"{BASE}/{kb}/search", params={"q": "?!"})
    assert resp.status_code == 422 and resp.json()["error"]["fieldCodes"]["q"]["code"] == "no_search_terms"
    assert anon.get(BASE).status_code == 401
