"""Knowledge chunks' embedding vectors (``knowledge_vectors``)

Revision ID: 0025_knowledge_vectors
Revises: 0024_model_vision

One vector per chunk, made by one embedding model (``model_id``), stored as ``dim`` little-endian float32
values in a blob: no vector extension (pgvector cannot be installed from these machines' packages), the
top-k is computed in the server process (``knowledge.vectors``). A chunk's deletion (its file re-indexed
or removed, its collection deleted) and the model's deletion take the vectors with them. ``collection_id``
is the chunk's, copied so a collection's vectors load without a join; ``id`` only grows (SQLite
``AUTOINCREMENT``), so the newest id of a collection tells a process whether what it holds in memory is
current.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025_knowledge_vectors"
down_revision = "0024_model_vision"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "knowledge_vectors",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("chunk_id", sa.Integer(), nullable=False),
        sa.Column("collection_id", sa.String(length=64), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=False),
        sa.Column("dim", sa.Integer(), nullable=False),
        sa.Column("vector", sa.LargeBinary(), nullable=False),
        sa.ForeignKeyConstraint(["chunk_id"], ["knowledge_chunks.id"],
                                name=op.f("fk_knowledge_vectors_chunk_id_knowledge_chunks"), ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["model_id"], ["model_configs.id"],
                                name=op.f("fk_knowledge_vectors_model_id_model_configs"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_vectors")),
        sqlite_autoincrement=True,
    )
    op.create_index("uq_knowledge_vectors_chunk", "knowledge_vectors", ["chunk_id"], unique=True)
    op.create_index("idx_knowledge_vectors_collection", "knowledge_vectors", ["collection_id", "id"])
    op.create_index("idx_knowledge_vectors_model", "knowledge_vectors", ["model_id"])


def downgrade() -> None:
    op.drop_index("idx_knowledge_vectors_model", table_name="knowledge_vectors")
    op.drop_index("idx_knowledge_vectors_collection", table_name="knowledge_vectors")
    op.drop_index("uq_knowledge_vectors_chunk", table_name="knowledge_vectors")
    op.drop_table("knowledge_vectors")
