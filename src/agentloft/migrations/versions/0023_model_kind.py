"""What a model is for (``model_configs.kind``): ``chat`` or ``embedding``

Revision ID: 0023_model_kind
Revises: 0022_knowledge

Knowledge retrieval needs an embedding model (an OpenAI-compatible ``/v1/embeddings`` endpoint) beside
the chat models agents run on. Both are rows of ``model_configs``, told apart by ``kind``; every existing
row is a chat model. SQLite adds the column in place (a constant default needs no table rebuild).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023_model_kind"
down_revision = "0022_knowledge"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("model_configs", sa.Column("kind", sa.String(length=16), nullable=False, server_default="chat"))


def downgrade() -> None:
    with op.batch_alter_table("model_configs") as batch:
        batch.drop_column("kind")
