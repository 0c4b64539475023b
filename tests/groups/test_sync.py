"""Provider groups synced at sign-in (``groups.service.sync_provider_groups``): exactly the named groups
of that source, created when missing, the user's other groups of that source left, local groups and other
sources untouched; two first sign-ins bringing the same new group share one group."""

from __future__ import annotations

import asyncio
import os
import shutil
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import select

from agentloft.core.db import Database
from agentloft.groups import service
from agentloft.groups.models import Group, GroupMember
from tests.pg import database as pg
from tests.support import add_user


@pytest.fixture
async def db(tmp_path: Path, template_db: Path) -> AsyncIterator[Database]:
    if pg.server_url():
        url = os.environ["AGENTLOFT_DATABASE_URL"]  # the test's own clone (tests/conftest.py)
    else:
        shutil.copy(template_db, tmp_path / "g.db")
        url = f"sqlite+aiosqlite:///{tmp_path / 'g.db'}"
    database = Database(url)
    for user_id in (1, 2):
        await add_user(database, user_id)
    yield database
    await database.dispose()


async def _sync(db: Database, user_id: int, source: str, names: list[str]) -> list[int]:
    async with db.session() as s:
        return await service.sync_provider_groups(db=s, user_id=user_id, source=source, names=names)


async def _groups(db: Database) -> dict[tuple[str, str], int]:
    async with db.session() as s:
        return {(g.source, g.name): g.id for g in (await s.execute(select(Group))).scalars()}


async def _members(db: Database, user_id: int) -> set[tuple[str, str]]:
    async with db.session() as s:
        stmt = select(Group.source, Group.name).join(GroupMember).where(GroupMember.user_id == user_id)
        return {(source, name) for source, name in (await s.execute(stmt)).all()}


async def test_membership_follows_the_provider(db: Database) -> None:
    async with db.session() as s:
        local = Group(name="staff", source="local")
        s.add(local)
        await s.flush()
        s.add(GroupMember(group_id=local.id, user_id=1))
    ids = await _sync(db, 1, "kc", ["staff", " dev ", "ops", "", "dev"])
    groups = await _groups(db)
    assert set(groups) == {("local", "staff"), ("kc", "staff"), ("kc", "dev"), ("kc", "ops")}
    assert ids == sorted(groups.values())
    await _sync(db, 1, "other", ["dev"])
    ids = await _sync(db, 1, "kc", ["ops", "qa"])
    assert await _members(db, 1) == {("local", "staff"), ("kc", "ops"), ("kc", "qa"), ("other", "dev")}
    groups = await _groups(db)
    assert ids == sorted(groups[k] for k in [("local", "staff"), ("kc", "ops"), ("kc", "qa"), ("other", "dev")])
    assert ("kc", "dev") in groups  # left, not deleted: others may still be in it
    await _sync(db, 1, "kc", [])
    assert await _members(db, 1) == {("local", "staff"), ("other", "dev")}
    async with db.session() as s:
        assert await service.user_group_ids(db=s, user_id=1) == frozenset(
            {groups[("local", "staff")], groups[("other", "dev")]})
        assert await service.user_group_ids(db=s, user_id=2) == frozenset()


async def test_a_sync_never_makes_local_groups(db: Database) -> None:
    with pytest.raises(ValueError):
        await _sync(db, 1, "local", ["x"])


async def test_two_first_sign_ins_share_a_new_group(db: Database) -> None:
    first, second = await asyncio.gather(_sync(db, 1, "kc", ["new"]), _sync(db, 2, "kc", ["new"]))
    assert first == second and len(first) == 1
    assert await _members(db, 1) == await _members(db, 2) == {("kc", "new")}
