"""Where file bytes live: one small interface, the data dir by default.

``LocalStore`` keeps each object as a file under ``<data dir>/files`` (directories 0700, files 0600, the
data dir itself is owner-only and hidden from every sandbox). A write goes to a temporary file that is
renamed into place, so a reader never sees half an object and a crash leaves no torn one. Disk work runs
on a worker thread: a 25 MiB write must not hold up the event loop.

Keys are made by ``files.service`` from the owner's id and the file's id (``<user id>/<file id>``), never
from anything a client sends; a key that would leave the store's directory is refused all the same.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import obstore
from obstore.store import S3Store as ObjectStore

if TYPE_CHECKING:
    from agentloft.core.settings import Settings

_KEY = re.compile(r"[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*")


class ObjectMissing(LookupError):
    """The store has no object under this key."""


class FileStore(Protocol):
    async def put(self, key: str, data: bytes) -> None: ...

    async def get(self, key: str) -> bytes:
        """The object's bytes; ``ObjectMissing`` when there is none."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the object; one that is not there is not an error."""
        ...


def check_key(key: str) -> str:
    if not _KEY.fullmatch(key) or any(part in (".", "..") for part in key.split("/")):
        raise ValueError(f"not a store key: {key!r}")
    return key


class LocalStore:
    """Objects as files below ``root`` (``<data dir>/files``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    async def put(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self._put, self._path(key), data)

    async def get(self, key: str) -> bytes:
        return await asyncio.to_thread(self._get, self._path(key))

    async def delete(self, key: str) -> None:
        path = self._path(key)
        await asyncio.to_thread(lambda: path.unlink(missing_ok=True))

    def _put(self, path: Path, data: bytes) -> None:
        self._make_dirs(path.parent)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".put-")  # created 0600
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def _make_dirs(self, directory: Path) -> None:
        """Create ``directory`` and its parents below the root as 0700 (whatever the umask)."""
        missing: list[Path] = []
        at = directory
        while not at.exists():
            missing.append(at)
            if at == self.root:
                break
            at = at.parent
        for path in reversed(missing):
            with contextlib.suppress(FileExistsError):  # made by a concurrent put meanwhile
                path.mkdir(mode=0o700)
                path.chmod(0o700)

    @staticmethod
    def _get(path: Path) -> bytes:
        try:
            return path.read_bytes()
        except FileNotFoundError:
            raise ObjectMissing(str(path.name)) from None


STREAM_CHUNK = 1024 * 1024  # what a backup or restore holds of an object at once


class S3Store:
    """Objects in an S3-compatible bucket (``AGENTLOFT_FILE_STORE=s3://bucket/prefix``), through ``obstore``
    (Rust's ``object_store``: async, no thread per call). Credentials, region and endpoint come from the
    usual ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_REGION`` and ``AWS_ENDPOINT_URL``
    variables (``obstore`` reads them), so several machines share the files without a service of ours.
    A plain ``http://`` endpoint (a local MinIO or moto) is allowed: the operator chose it."""

    def __init__(self, url: str) -> None:
        self._store = ObjectStore.from_url(url, client_options={"allow_http": True})

    async def put(self, key: str, data: bytes) -> None:
        await obstore.put_async(self._store, check_key(key), data)

    async def get(self, key: str) -> bytes:
        try:
            found = await obstore.get_async(self._store, check_key(key))
        except FileNotFoundError:
            raise ObjectMissing(key) from None
        return bytes(await found.bytes_async())

    async def delete(self, key: str) -> None:
        try:
            await obstore.delete_async(self._store, check_key(key))
        except FileNotFoundError:  # S3 answers a missing key's delete with success; other stores may not
            return

    # What ``agentloft backup`` and ``restore`` use: a command, not the server, so blocking calls; every
    # object goes through a file a chunk at a time, never whole in memory.

    def listing(self) -> Iterator[tuple[str, int]]:
        """Every object's key (relative to the prefix) and size, a page of the listing at a time."""
        for page in obstore.list(self._store, chunk_size=1000):
            for meta in page:
                yield meta["path"], meta["size"]

    def is_empty(self) -> bool:
        return next(self.listing(), None) is None

    def download(self, key: str, path: Path) -> int:
        """Stream the object into ``path`` (through a temporary file renamed into place, so a present file is
        a whole object); its size, or ``ObjectMissing`` when it went meanwhile."""
        try:
            found = obstore.get(self._store, check_key(key))
        except FileNotFoundError:
            raise ObjectMissing(key) from None
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".get-")
        size = 0
        try:
            with os.fdopen(fd, "wb") as out:
                for chunk in found.stream(min_chunk_size=STREAM_CHUNK):
                    out.write(chunk)
                    size += len(chunk)
            os.replace(temporary, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise
        return size

    def upload(self, key: str, path: Path) -> None:
        """Put the file at ``path`` as the object ``key``: ``obstore`` reads it in parts of 5 MiB (a multipart
        upload above that, S3's smallest part), and S3 shows the object only once it is whole."""
        obstore.put(self._store, check_key(key), path)


def build_store(settings: Settings) -> FileStore:
    """The store the settings name: an S3 bucket for ``s3://…``, else the data dir's ``files`` directory."""
    if settings.file_store.startswith("s3://"):
        return S3Store(settings.file_store)
    return LocalStore(settings.data_dir.resolve() / "files")
