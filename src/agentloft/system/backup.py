"""``agentloft backup PATH`` and ``agentloft restore PATH``: a consistent copy of an instance while it
runs, and bringing it back into an empty data dir.

A backup is a directory (made owner-only: it holds the secret key) with:

- ``manifest.json``: what it holds (format, when, the agentloft version, the database kind and schema
  revision, how many stored files);
- the database: on SQLite ``agentloft.db``, copied through SQLite's online backup API a few pages at a
  time, so the running server keeps writing while it is taken and the copy is one consistent moment; on
  PostgreSQL ``database.dump`` made by ``pg_dump --format=custom`` (one snapshot by construction) when
  ``pg_dump`` is on the PATH, else the command refuses and says which ``pg_dump`` command to run;
- ``secret_key``: the key the stored secrets are encrypted with (from ``AGENTLOFT_SECRET_KEY`` or the data
  dir's file) — without it a restore could not decrypt the models' and tools' secrets;
- ``files/``: the uploaded files and their extracted text, when they live in the data dir. Objects are
  written once and never changed (``files.store``), so they are copied before the database and once more
  after it: an object made while the database was copied is in the second pass, and one deleted meanwhile
  is still in the first.
- ``files-s3/<key>``: the same for ``AGENTLOFT_FILE_STORE=s3://bucket/prefix``, every object under the
  prefix, streamed to disk a chunk at a time, in the same two passes and for the same reasons: an object
  written after the database copy is not referenced by it (a spare one, harmless: the restored server never
  names it), and one deleted while the database was copied was copied by the first pass, so the rows of
  the copy find their bytes. Only an object made after the first pass listed the bucket and deleted before
  the second can be missing: its file was deleted by its owner a moment after the copy, and the restored
  server answers it as any file whose bytes are gone (404). The manifest gives their count
  and bytes (``s3Objects``), and ``restore`` checks the backup holds them all before it writes anything.

A backup that fails (a bucket out of reach, ``pg_dump`` missing, the disk full) removes what it wrote, so
the same command can simply be run again.

``restore`` puts the files into the store the target's settings name, whichever the backup came from:
the keys are the same in both stores (``<user id>/<file id>``), so a bucket's backup restored without
``AGENTLOFT_FILE_STORE`` fills the data dir's ``files`` and one of the data dir goes into a bucket (a way to
move between them). It writes the files before the database, so a restore cut short leaves no database
and no server starts on half of it. It refuses a data dir that already holds a database, a key or files,
a bucket prefix that already holds objects (it never merges), and a PostgreSQL database that already has
tables; it refuses a backup of the other database kind, and an
``AGENTLOFT_SECRET_KEY`` that differs from the backup's (the secrets could not be read). The schema is
brought to this build's head by the next ``agentloft serve`` (or ``agentloft db upgrade``), as after any
upgrade.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from obstore.exceptions import BaseError
from sqlalchemy.engine import URL, make_url

from agentloft import __version__
from agentloft.core import migrate
from agentloft.core.settings import SECRET_KEY_FILE, ConfigError, Settings
from agentloft.files.store import ObjectMissing, S3Store, check_key

FORMAT = 1
MANIFEST = "manifest.json"
SQLITE_COPY = "agentloft.db"
PG_DUMP = "database.dump"
FILES = "files"
FILES_S3 = "files-s3"
PAGES_PER_STEP = 1024  # 4 MiB at SQLite's default page size: the server waits at most one step's copy


@dataclass
class Summary:
    database: str
    files: int
    note: str = ""


def _files_root(settings: Settings) -> Path | None:
    """The data dir's file store, or None when files live in a bucket."""
    return None if settings.file_store else settings.data_dir.resolve() / FILES


def _bucket(settings: Settings) -> S3Store | None:
    return S3Store(settings.file_store) if settings.file_store else None


@contextmanager
def _reaching(url: str) -> Iterator[None]:
    """The bucket's failures (no such bucket, refused credentials, no answer) as one line naming it, not
    a trace of ``obstore``'s retries."""
    try:
        yield
    except (BaseError, FileNotFoundError, PermissionError) as exc:  # how obstore raises
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ConfigError(f"{url}: {first[:500]} (check AGENTLOFT_FILE_STORE and the AWS_* variables)") from None


@dataclass
class Copied:
    count: int = 0
    bytes: int = 0

    def add(self, other: Copied) -> None:
        self.count += other.count
        self.bytes += other.bytes


def _download_new(store: S3Store, dst: Path) -> Copied:
    """Copy the bucket's objects that ``dst`` lacks (objects never change, so present means done); one
    listed and deleted before its turn is left out, as it would have been a moment later."""
    copied = Copied()
    for key, _size in store.listing():
        try:
            target = dst / check_key(key)
        except ValueError:
            raise ConfigError(f"the bucket holds {key!r} under AGENTLOFT_FILE_STORE's prefix, which is no key "
                              "agentloft writes; the prefix should hold only agentloft's files") from None
        if target.exists():
            continue
        target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        try:
            copied.add(Copied(1, store.download(key, target)))
        except ObjectMissing:
            continue
    return copied


def _copy_new(src: Path, dst: Path) -> int:
    """Copy the objects of ``src`` that ``dst`` lacks (objects never change, so present means done)."""
    copied = 0
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif path.is_file() and not target.exists() and not path.name.startswith("."):  # not a temp file
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            shutil.copy2(path, target)
            copied += 1
    return copied


def _libpq_env(url: URL) -> dict[str, str]:
    """The connection as libpq's variables, so the password never shows in a process list."""
    pairs = {"PGHOST": url.host, "PGPORT": url.port, "PGUSER": url.username, "PGPASSWORD": url.password,
             "PGDATABASE": url.database}
    return {**os.environ, **{k: str(v) for k, v in pairs.items() if v is not None}}


def _run(command: list[str], url: URL) -> None:
    if shutil.which(command[0]) is None:
        raise ConfigError(f"{command[0]} is not on the PATH; install the PostgreSQL client or run it yourself "
                          f"with this database's connection: {' '.join(command)}")
    done = subprocess.run(command, env=_libpq_env(url), capture_output=True, text=True)
    if done.returncode != 0:
        raise ConfigError(f"{command[0]} failed: {done.stderr.strip()[-2000:]}")


def _backup_sqlite(source: Path, dest: Path, progress: Callable[[int, int], None] | None) -> None:
    src = sqlite3.connect(source)
    dst = sqlite3.connect(dest / SQLITE_COPY)
    try:
        src.backup(dst, pages=PAGES_PER_STEP, progress=lambda _s, left, total: progress and progress(left, total))
        if dst.execute("PRAGMA quick_check").fetchone() != ("ok",):
            raise ConfigError("the copy of the database failed SQLite's check; nothing usable was written")
    finally:
        dst.close()
        src.close()
    os.chmod(dest / SQLITE_COPY, 0o600)


def _start(dest: Path) -> bool:
    """Make ``dest`` ready (new, or empty); whether it was made here."""
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ConfigError(f"{dest} exists and is not an empty directory; give a new path for the backup")
    made = not dest.exists()
    dest.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(dest, 0o700)
    return made


def _discard(dest: Path, made: bool) -> None:
    """What a backup that failed wrote, so the same command can simply be run again: ``dest`` was new or
    empty when it started, so everything in it is its own."""
    if made:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)


def _backup_database(settings: Settings, dest: Path, progress: Callable[[int, int], None] | None) -> str:
    sqlite_file = settings.sqlite_file
    if sqlite_file is not None:
        _backup_sqlite(sqlite_file, dest, progress)
        return "sqlite"
    _run(["pg_dump", "--format=custom", "--no-owner", f"--file={dest / PG_DUMP}"],
         make_url(settings.resolved_database_url))
    return "postgresql"


def backup(settings: Settings, dest: Path, progress: Callable[[int, int], None] | None = None) -> Summary:
    """Write a backup of the instance ``settings`` describe into ``dest`` (new or empty)."""
    sqlite_file = settings.sqlite_file
    if sqlite_file is not None and not sqlite_file.is_file():
        raise ConfigError(f"there is no database at {sqlite_file} to back up (is AGENTLOFT_DATA_DIR right?)")
    made = _start(dest)
    try:
        return _write_backup(settings, dest, progress)
    except BaseException:
        _discard(dest, made)
        raise


def _write_backup(settings: Settings, dest: Path, progress: Callable[[int, int], None] | None) -> Summary:
    """The backup's parts into the ready ``dest``: files, the database, files written meanwhile, the key,
    and the manifest last (a backup without one is refused by restore)."""
    url = settings.resolved_database_url
    revision = migrate.current_revision(url)
    root = _files_root(settings)
    bucket = _bucket(settings)
    files = 0
    objects = Copied()
    if root is not None and root.is_dir():
        files += _copy_new(root, dest / FILES)
    if bucket is not None:
        with _reaching(settings.file_store):
            objects.add(_download_new(bucket, dest / FILES_S3))
    kind = _backup_database(settings, dest, progress)
    if root is not None and root.is_dir():
        files += _copy_new(root, dest / FILES)
    if bucket is not None:
        with _reaching(settings.file_store):
            objects.add(_download_new(bucket, dest / FILES_S3))
    key = dest / SECRET_KEY_FILE
    key.write_text(settings.ensure_secret_key() + "\n")
    os.chmod(key, 0o600)
    manifest = {"format": FORMAT, "createdAt": datetime.now(UTC).isoformat(), "version": __version__,
                "database": kind, "revision": revision, "files": files, "fileStore": settings.file_store or "data dir"}
    if bucket is not None:
        manifest["s3Objects"] = {"count": objects.count, "bytes": objects.bytes}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    note = f"{objects.count} of them ({objects.bytes} bytes) from {settings.file_store}" if bucket else ""
    return Summary(database=kind, files=files + objects.count, note=note)


def _read_manifest(src: Path) -> dict[str, object]:
    try:
        manifest = json.loads((src / MANIFEST).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{src} is not an agentloft backup (no readable {MANIFEST}: {exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ConfigError(f"{src}: a backup format this version cannot read")
    return manifest


def _check_empty_target(settings: Settings) -> None:
    root = _files_root(settings)
    taken = [str(p) for p in (*settings.database_files(), settings.data_dir / SECRET_KEY_FILE) if p.exists()]
    if root is not None and root.is_dir() and any(root.iterdir()):
        taken.append(str(root))
    bucket = _bucket(settings)
    if bucket is not None:
        with _reaching(settings.file_store):
            if not bucket.is_empty():
                taken.append(f"objects in {settings.file_store}")
    if taken:
        raise ConfigError("restore goes into an empty data dir and file store; this one already has "
                          + ", ".join(taken))


def _backup_files(src: Path) -> Path | None:
    """Where the backup keeps its files (the data dir's or a bucket's), None when it has none."""
    return next((src / name for name in (FILES, FILES_S3) if (src / name).is_dir()), None)


def _objects_of(folder: Path) -> list[tuple[str, Path]]:
    return [(path.relative_to(folder).as_posix(), path) for path in sorted(folder.rglob("*"))
            if path.is_file() and not path.name.startswith(".")]


def _check_objects(manifest: dict[str, object], objects: list[tuple[str, Path]]) -> None:
    """A backup missing some of the objects its manifest lists (cut short, or copied in part) is refused
    before anything is written."""
    listed = manifest.get("s3Objects")
    if not isinstance(listed, dict):
        return
    held = {"count": len(objects), "bytes": sum(path.stat().st_size for _key, path in objects)}
    if held != {"count": listed.get("count"), "bytes": listed.get("bytes")}:
        raise ConfigError(f"the backup's {FILES_S3} holds {held['count']} object(s) of {held['bytes']} bytes, "
                          f"its manifest lists {listed.get('count')} of {listed.get('bytes')}; it is incomplete")


def _restore_files(settings: Settings, folder: Path | None, objects: list[tuple[str, Path]]) -> None:
    """Into the target's bucket, one object at a time; else into the data dir's ``files``."""
    bucket = _bucket(settings)
    if bucket is not None:
        with _reaching(settings.file_store):
            for key, path in objects:
                bucket.upload(check_key(key), path)
    elif folder is not None:
        root = settings.data_dir.resolve() / FILES
        root.mkdir(mode=0o700, exist_ok=True)
        _copy_new(folder, root)


def _check_key(settings: Settings, key: str) -> None:
    if settings.secret_key and settings.secret_key != key:
        raise ConfigError("AGENTLOFT_SECRET_KEY differs from the backup's key, so its stored secrets could not "
                          "be decrypted; unset it (the backup's key is restored into the data dir) or set it to "
                          "the backup's")


def restore(settings: Settings, src: Path) -> Summary:
    """Bring the backup in ``src`` into the empty instance ``settings`` describe: every check first, then
    the files, the database, the key."""
    manifest = _read_manifest(src)
    key = (src / SECRET_KEY_FILE).read_text().strip()
    _check_key(settings, key)
    sqlite_file = settings.sqlite_file
    kind = "sqlite" if sqlite_file is not None else "postgresql"
    if manifest.get("database") != kind:
        raise ConfigError(f"this backup is of a {manifest.get('database')} database; this instance uses {kind}")
    folder = _backup_files(src)
    objects = _objects_of(folder) if folder is not None else []
    _check_objects(manifest, objects)
    _check_empty_target(settings)
    url = settings.resolved_database_url
    if sqlite_file is None and migrate.current_revision(url) is not None:
        raise ConfigError("restore goes into an empty PostgreSQL database; this one already has agentloft's tables")
    settings.prepare_data_dir()
    _restore_files(settings, folder, objects)
    if sqlite_file is not None:
        shutil.copy2(src / SQLITE_COPY, sqlite_file)
        os.chmod(sqlite_file, 0o600)
    else:
        _run(["pg_restore", "--no-owner", "--exit-on-error", f"--dbname={make_url(url).database}",
              str(src / PG_DUMP)], make_url(url))
    if not settings.secret_key:
        path = settings.data_dir / SECRET_KEY_FILE
        path.write_text(key + "\n")
        os.chmod(path, 0o600)
    return Summary(database=kind, files=len(objects), note=f"into {settings.file_store or 'the data dir'}")
