"""The data dir and the database's files are the server's alone: owner-only from the first start, and
fixed at every start for an install made before (whose files the default umask left world-readable)."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentloft import cli
from agentloft.core.settings import ConfigError, load_settings
from tests.support import signup, start_app

pytestmark = pytest.mark.sqlite_only(reason="the SQLite database's files")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most servers start with: what SQLite and ``mkdir`` applied to their default modes."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def test_a_new_install_keeps_its_files_to_itself(tmp_path: Path) -> None:
    data = tmp_path / "data"
    live = start_app(data, secret_key=None)  # the key is generated into the data dir
    try:
        with live.client() as client:
            signup(client, "owner")  # a write: SQLite now has its WAL and shared-memory files open
        files = {name: mode(data / name) for name in
                 ("agentloft.db", "agentloft.db-wal", "agentloft.db-shm", "secret_key")}
        assert files == dict.fromkeys(files, 0o600)
        assert mode(data) == 0o700
    finally:
        live.stop()


def test_an_earlier_install_is_made_private_when_it_starts(tmp_path: Path, template_db: Path) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    shutil.copy(template_db, data / "agentloft.db")
    (data / "secret_key").write_text("an-earlier-key")
    for side in ("-wal", "-shm"):  # empty ones: SQLite takes them as a WAL with nothing in it
        (data / f"agentloft.db{side}").touch()
    for path in data.iterdir():
        path.chmod(0o644)
    live = start_app(data, secret_key=None)
    try:
        with live.client() as client:
            assert client.get("/api/health").status_code == 200
        assert mode(data) == 0o700
        assert {p.name: mode(p) for p in data.iterdir()} == dict.fromkeys(
            ("agentloft.db", "agentloft.db-wal", "agentloft.db-shm", "secret_key"), 0o600)
        assert (data / "secret_key").read_text() == "an-earlier-key"
    finally:
        live.stop()


def test_the_command_line_makes_them_private_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    elsewhere = tmp_path / "db" / "agentloft.sqlite"
    monkeypatch.setenv("AGENTLOFT_DATA_DIR", str(data))
    monkeypatch.setenv("AGENTLOFT_DATABASE_URL", f"sqlite+aiosqlite:///{elsewhere}")
    assert cli.main(["db", "upgrade"]) == 0
    assert (mode(data), mode(elsewhere)) == (0o700, 0o600)


def test_a_shared_directory_is_refused_untouched() -> None:
    before = mode(Path("/tmp"))
    with pytest.raises(ConfigError, match="a directory other users share"):
        load_settings(data_dir=Path("/tmp")).prepare_data_dir()
    assert mode(Path("/tmp")) == before
