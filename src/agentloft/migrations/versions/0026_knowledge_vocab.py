"""How many chunks hold each token, for knowledge search on SQLite (``knowledge_chunks_vocab``)

Revision ID: 0026_knowledge_vocab
Revises: 0025_knowledge_vectors

An ``fts5vocab`` table over the chunks' FTS5 index (one row per token with the number of chunks holding
it): knowledge search leaves tokens that most chunks hold out of its ranked OR (``knowledge.search``).
Nothing is stored: it reads the index. PostgreSQL keeps the same numbers in its column statistics.
"""

from __future__ import annotations

from alembic import op

revision = "0026_knowledge_vocab"
down_revision = "0025_knowledge_vectors"
branch_labels = None
depends_on = None


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("CREATE VIRTUAL TABLE knowledge_chunks_vocab USING fts5vocab(knowledge_chunks_fts, row)")


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS knowledge_chunks_vocab")
