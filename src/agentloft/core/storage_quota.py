"""What one user keeps, in bytes, and the limit on it (``AGENTLOFT_USER_STORAGE_BYTES``).

One counter per user (table ``user_storage``), kept by the database's own triggers (migration
0027_user_storage), so every write path counts, whichever code runs it:

- a document counts the UTF-8 bytes of its title, content, summary and tags; each of its versions counts
  the same of the state it keeps (the version trigger of 0015 writes them, and drops the oldest beyond
  100: those stop counting);
- a file counts its original bytes (``files.size``; the text read from it is not counted: it is
  derived, and a few percent of a document's size);
- knowledge chunks, when they come, count by the same means: their migration adds triggers that add and
  subtract their bytes on ``user_storage`` as 0027's do, and their write path calls
  ``refuse_over_limit`` in its transaction. Nothing here needs to change.

Reading the limit is one primary-key read: a sum over a user's documents and every version of each
would read up to a hundred copies of each document's text on every write.

**When a write is refused.** Only the database knows what a document write adds (an update also keeps
the state it replaces as a version, and may drop the oldest), so the counter is read *after* the write's
statement, in the same transaction: a write that would take the user past the limit is rolled back
before anything of it is committed, and answered ``413 storage_quota_exceeded`` with what is in use, the
limit, and what it would have needed. A file, whose size is known beforehand, is also checked before its
bytes go to the store (and again as its row is written), so a refused upload stores nothing.

**Concurrent writes** of one user count one after the other: on SQLite the writers take turns
(``core.db_sqlite``) and the read follows the write under the lock; on PostgreSQL the trigger's update
locks the user's counter row until the transaction ends, so a second writer waits and then reads the
first one's bytes too. Two uploads at once therefore cannot both pass the limit.

Limit 0: no limit (the counter is still kept, so a limit set later holds at once).
"""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapped, mapped_column

from agentloft.core.db import Base
from agentloft.core.errors import AppError, problem


class UserStorage(Base):
    """The bytes one user stores (see the module docstring). Written only by the database's triggers; a
    user without a row stores nothing yet."""

    __tablename__ = "user_storage"

    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), primary_key=True)
    bytes: Mapped[int] = mapped_column(BigInteger, nullable=False, default=0)


def size_text(n: int) -> str:
    """``n`` bytes as people read sizes: ``812 KiB``, ``1.5 GiB``."""
    value = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if abs(value) < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "bytes" else f"{value:.3g} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


class StorageQuotaExceeded(AppError):
    """A write that would take the user past ``AGENTLOFT_USER_STORAGE_BYTES``. ``field`` names what the
    write brought (``content``, ``file``), so a form shows the sizes beside it in the reader's language."""

    status = 413
    code = "storage_quota_exceeded"

    def __init__(self, *, used: int, needed: int, limit: int, field: str) -> None:
        used_text, limit_text, needed_text = size_text(used), size_text(limit), size_text(needed)
        words = f"{used_text} of your {limit_text} storage limit are in use"
        super().__init__(
            f"this would need {needed_text} more storage, and {words}; delete documents or files you no longer "
            "need, or ask an administrator to raise the limit",
            fields={field: problem("storage_quota_exceeded", words, used=used_text, limit=limit_text,
                                   needed=needed_text)},
        )
        self.used, self.needed, self.limit = used, needed, limit


async def stored_bytes(*, db: AsyncSession, user_id: int) -> int:
    """What the user stores now, as this transaction sees it."""
    found = await db.execute(select(UserStorage.bytes).where(UserStorage.user_id == user_id))
    return int(found.scalar_one_or_none() or 0)


async def refuse_over_limit(*, db: AsyncSession, user_id: int, limit: int, adding: int = 0,
                            field: str = "content") -> None:
    """``413 storage_quota_exceeded`` when what the user stores, plus ``adding`` bytes not written yet,
    is over ``limit`` (0: no limit). Called in a write's transaction after its statements (``adding`` 0:
    the triggers counted them), or before a write whose size is known (a file, before its bytes go to
    the store). A refusal rolls the transaction back, so nothing of the write is kept, and reads what is
    in use without it for the message."""
    if not limit:
        return
    total = await stored_bytes(db=db, user_id=user_id) + adding
    if total <= limit:
        return
    await db.rollback()
    used = await stored_bytes(db=db, user_id=user_id)
    raise StorageQuotaExceeded(used=used, needed=total - used, limit=limit, field=field)
