"""Agents' starter prompts (``agents.starter_prompts``)

Revision ID: 0017_starter_prompts
Revises: 0016_message_owner

A new chat shows its agent's description and, where the admin wrote some, a few prompts to start from as
buttons (the chat apps people know do the same). A JSON list of short strings, empty for every existing
agent; SQLite adds the column in place (a constant default needs no table rebuild).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_starter_prompts"
down_revision = "0016_message_owner"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("agents", sa.Column("starter_prompts", sa.JSON(), nullable=False, server_default="[]"))


def downgrade() -> None:
    with op.batch_alter_table("agents") as batch:
        batch.drop_column("starter_prompts")
