"""Knowledge collections (``knowledge_collections``, ``knowledge_files``, ``knowledge_chunks``)

Revision ID: 0022_knowledge
Revises: 0021_message_attachments

A user's collections, the files in each with their indexing state, and the chunks cut from them. The
chunks' ``terms`` (``knowledge.terms``) get a lexical index per dialect: on SQLite an FTS5 table over
them (external content, ``ascii`` tokenizer, ranked by bm25), kept in step by triggers, since chunks are
only ever inserted and deleted (also by cascade); on PostgreSQL a stored ``tsvector`` of them
(``to_tsvector('simple', terms)``) with a GIN index, ranked with ``ts_rank``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0022_knowledge"
down_revision = "0021_message_attachments"
branch_labels = None
depends_on = None

SQLITE_INDEX = (
    "CREATE VIRTUAL TABLE knowledge_chunks_fts USING fts5(terms, content='knowledge_chunks', "
    "content_rowid='id', tokenize='ascii')",
    "CREATE TRIGGER knowledge_chunks_fts_insert AFTER INSERT ON knowledge_chunks BEGIN "
    "INSERT INTO knowledge_chunks_fts(rowid, terms) VALUES (new.id, new.terms); END",
    "CREATE TRIGGER knowledge_chunks_fts_delete AFTER DELETE ON knowledge_chunks BEGIN "
    "INSERT INTO knowledge_chunks_fts(knowledge_chunks_fts, rowid, terms) VALUES ('delete', old.id, old.terms); END",
)
POSTGRES_INDEX = (
    "ALTER TABLE knowledge_chunks ADD COLUMN terms_vector tsvector "
    "GENERATED ALWAYS AS (to_tsvector('simple', terms)) STORED",
    "CREATE INDEX idx_knowledge_chunks_terms ON knowledge_chunks USING gin (terms_vector)",
)


def upgrade() -> None:
    op.create_table(
        "knowledge_collections",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_knowledge_collections_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_collections")),
    )
    op.create_index("idx_knowledge_collections_user", "knowledge_collections", ["user_id", "created_at"])
    op.create_table(
        "knowledge_files",
        sa.Column("collection_id", sa.String(length=64), nullable=False),
        sa.Column("file_id", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("error", agentloft.core.db.StorableText(), nullable=True),
        sa.Column("chunks", sa.Integer(), nullable=False),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(["collection_id"], ["knowledge_collections.id"],
                                name=op.f("fk_knowledge_files_collection_id_knowledge_collections"),
                                ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["file_id"], ["files.id"], name=op.f("fk_knowledge_files_file_id_files"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("collection_id", "file_id", name=op.f("pk_knowledge_files")),
    )
    op.create_index("idx_knowledge_files_file", "knowledge_files", ["file_id"])
    op.create_table(
        "knowledge_chunks",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("collection_id", sa.String(length=64), nullable=False),
        sa.Column("file_id", sa.String(length=64), nullable=False),
        sa.Column("ord", sa.Integer(), nullable=False),
        sa.Column("page", sa.Integer(), nullable=True),
        sa.Column("text", agentloft.core.db.StorableText(), nullable=False),
        sa.Column("terms", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(["collection_id", "file_id"],
                                ["knowledge_files.collection_id", "knowledge_files.file_id"],
                                name=op.f("fk_knowledge_chunks_collection_id_knowledge_files"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_knowledge_chunks")),
    )
    op.create_index("idx_knowledge_chunks_file", "knowledge_chunks", ["collection_id", "file_id", "ord"])
    dialect = op.get_bind().dialect.name
    for statement in SQLITE_INDEX if dialect == "sqlite" else POSTGRES_INDEX if dialect == "postgresql" else ():
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE IF EXISTS knowledge_chunks_fts")
    op.drop_index("idx_knowledge_chunks_file", table_name="knowledge_chunks")
    op.drop_table("knowledge_chunks")
    op.drop_index("idx_knowledge_files_file", table_name="knowledge_files")
    op.drop_table("knowledge_files")
    op.drop_index("idx_knowledge_collections_user", table_name="knowledge_collections")
    op.drop_table("knowledge_collections")
