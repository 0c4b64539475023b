"""The query helpers every service uses (``agentloft.core.db``): load a record or 404, rows a conditional
write matched, a model's table. On a real SQLite file through the app's ``Database``."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Integer, String, select, update
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from agentloft.core.db import one_or_404, rows_matched, table_of
from agentloft.core.errors import NotFound
from tests.support import file_database


class _Base(DeclarativeBase):
    pass


class Note(_Base):
    __tablename__ = "notes"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    owner: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(String(50))


async def test_one_or_404_returns_the_row_or_raises_the_given_error(tmp_path: Path) -> None:
    db = await file_database(tmp_path / "h.db", "CREATE TABLE notes (id INTEGER PRIMARY KEY, owner INTEGER, text TEXT)",
                             "INSERT INTO notes VALUES (1, 10, 'mine')")
    missing = NotFound("note not found", code="note_not_found")
    try:
        async with db.session() as s:
            row = await one_or_404(s, select(Note).where(Note.id == 1, Note.owner == 10), missing)
            assert row.text == "mine"
            with pytest.raises(NotFound) as raised:  # someone else's row is as missing as none
                await one_or_404(s, select(Note).where(Note.id == 1, Note.owner == 11), missing)
            assert raised.value is missing and raised.value.status == 404
            assert await rows_matched(s, update(Note).where(Note.owner == 10).values(text="x")) == 1
            assert await rows_matched(s, update(Note).where(Note.owner == 11).values(text="x")) == 0
    finally:
        await db.dispose()


def test_table_of_is_the_mapped_table() -> None:
    assert table_of(Note) is Note.__table__
