"""Model names are unique (``uq_model_configs_name``)

Revision ID: 0013_model_names
Revises: 0011_user_grams

Two models could share a name, and an agent's model picker then showed two entries no one could tell
apart. The service answers a taken name with a 409 ``model_name_taken``; the unique index makes that hold
under concurrent writes too. It is an index, not a table constraint: on SQLite a constraint means
rebuilding the table, and dropping the old ``model_configs`` would set every agent's and message's
``model_id`` to NULL (their foreign keys say ``ON DELETE SET NULL``).

Existing duplicates are renamed first, deterministically: the oldest row (lowest id) of each name keeps
it, every later one becomes ``<name> (<id>)`` (cut to fit the column; ``<name> (<id>-2)`` and so on in
the unlikely case that is taken too).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_model_names"
down_revision = "0011_user_grams"
branch_labels = None
depends_on = None

INDEX = "uq_model_configs_name"
NAME_LENGTH = 100


def _renamed(name: str, row_id: int, taken: set[str]) -> str:
    """The name a later duplicate gets: its id appended, the name cut so the whole fits the column."""
    tries = 1
    while True:
        suffix = f" ({row_id})" if tries == 1 else f" ({row_id}-{tries})"
        candidate = name[: NAME_LENGTH - len(suffix)] + suffix
        if candidate not in taken:
            return candidate
        tries += 1


def renames(rows: list[tuple[int, str]]) -> dict[int, str]:
    """New names for the duplicates among ``(id, name)`` rows: every name but the oldest row's."""
    taken = {name for _, name in rows}
    kept: set[str] = set()
    out: dict[int, str] = {}
    for row_id, name in sorted(rows):
        if name not in kept:
            kept.add(name)
            continue
        out[row_id] = _renamed(name, row_id, taken)
        taken.add(out[row_id])
    return out


def upgrade() -> None:
    bind = op.get_bind()
    table = sa.table("model_configs", sa.column("id", sa.Integer), sa.column("name", sa.String))
    rows = [(int(r.id), str(r.name)) for r in bind.execute(sa.select(table.c.id, table.c.name))]
    for row_id, name in renames(rows).items():
        bind.execute(table.update().where(table.c.id == row_id).values(name=name))
    op.create_index(INDEX, "model_configs", ["name"], unique=True)


def downgrade() -> None:
    op.drop_index(INDEX, table_name="model_configs")
