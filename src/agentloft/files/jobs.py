"""The ``file.extract`` job: read an uploaded document in the sandbox and end its file ``ready`` or ``failed``.

``files.service.create`` queues it in the transaction that adds the file's row (``processing``), so the job
exists exactly when the file does. The handler reads the original bytes from the store, has
``files.extract`` read them in the sandbox, writes the pages (``service.Extracted``) under
``service.text_key`` and only then marks the row ``ready`` with its ``chars`` and ``pages``: a reader of a
``ready`` file always finds its text.

- **A file that cannot be read** (damaged, encrypted, too many pages, too much text, expands too much,
  timed out, too much memory or CPU) ends ``failed`` with that reason at once: trying again would end the
  same way. So does one uploaded while this host had no sandbox, if its job runs on such a host.
- **Anything else** (the store or the database unreachable, bubblewrap unable to start) raises, so the
  queue tries again later; when it gives up, the kind's ``failed`` hook ends the file ``failed`` with the
  last reason.
- **Idempotent**: a job run again after its worker was killed finds the file no longer ``processing`` (and
  does nothing) or reads it again, overwriting the same text object.
- **Deleting a file while its job runs never brings it back**: every write to the row is conditional on
  it still being there and ``processing``; when it is gone, the text object just written is removed
  again (a delete removes the row first and its objects after, so either side cleans up).
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any

from sqlalchemy import select, update

from agentloft.core.db import rows_matched
from agentloft.files import extract
from agentloft.files import service as files_service
from agentloft.files.errors import SANDBOX_UNAVAILABLE
from agentloft.files.models import File
from agentloft.files.service import EXTRACT_JOB, Extracted, Page
from agentloft.files.sniff import OFFICE, decode_text
from agentloft.files.store import ObjectMissing
from agentloft.tools.sandbox import SandboxUnavailable

if TYPE_CHECKING:
    from agentloft.core.jobs import JobRunner
    from agentloft.core.runtime import Runtime

log = logging.getLogger(__name__)

# The family the worker reads, by the media type ``files.sniff`` gave the file.
FAMILIES = {"application/pdf": "pdf", "text/html": "html", **{media: family for family, media in OFFICE.values()}}
ERROR_CHARS = 1000


async def _processing(rt: Runtime, file_id: str, user_id: int) -> File | None:
    async with rt.db.read_session() as db:
        stmt = select(File).where(File.id == file_id, File.user_id == user_id, File.status == "processing")
        return (await db.execute(stmt)).scalar_one_or_none()


async def _end(rt: Runtime, row: File, **values: Any) -> bool:
    """Write the outcome, if the file is still there and still being read."""
    async with rt.db.session() as db:
        stmt = update(File).where(File.id == row.id, File.user_id == row.user_id, File.status == "processing")
        return bool(await rows_matched(db, stmt.values(**values)))


async def _fail(rt: Runtime, row: File, reason: str) -> None:
    await _end(rt, row, status="failed", error=reason[:ERROR_CHARS], chars=None, pages=None)


def _input(row: File, data: bytes) -> tuple[str, bytes]:
    """The worker's family and bytes: HTML goes decoded, as UTF-8 (``sniff`` decoded it the same way)."""
    family = FAMILIES[row.media_type]
    if family == "html":
        return family, (decode_text(data) or "").encode("utf-8")
    return family, data


def _counted(pages: extract.Pages) -> Extracted:
    return Extracted(pages=[Page(number, text) for number, text in pages])


async def run(rt: Runtime, payload: dict[str, Any]) -> None:
    row = await _processing(rt, payload["fileId"], payload["userId"])
    if row is None:  # deleted, or already read by an earlier run of this job
        return
    try:
        data = await rt.file_store.get(files_service.bytes_key(row))
    except ObjectMissing:
        await _fail(rt, row, "its bytes are missing from the file store")
        return
    family, feed = _input(row, data)
    try:
        text = _counted(await extract.read(rt.settings, family, feed))
    except extract.Unreadable as exc:
        await _fail(rt, row, str(exc))
        return
    except SandboxUnavailable as exc:
        await _fail(rt, row, f"{SANDBOX_UNAVAILABLE}: {exc}")
        return
    key = files_service.text_key(row)
    await rt.file_store.put(key, await asyncio.to_thread(text.to_json))
    numbered = family in ("pdf", "pptx", "xlsx")
    if not await _end(rt, row, status="ready", error=None, chars=text.chars,
                      pages=len(text.pages) if numbered else None):
        await rt.file_store.delete(key)  # deleted meanwhile: leave nothing of it behind


async def failed(rt: Runtime, payload: dict[str, Any], reason: str) -> None:
    """The queue gave up on the job: the file ends failed with the last reason."""
    row = await _processing(rt, payload["fileId"], payload["userId"])
    if row is not None:
        await _fail(rt, row, f"reading it kept failing: {reason}")


def register(runner: JobRunner) -> None:
    runner.register(EXTRACT_JOB, run, failed=failed)
