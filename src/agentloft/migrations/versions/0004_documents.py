"""documents: agent_documents, versions, full-text index

Revision ID: 0004_documents
Revises: 0003_chat

``agent_documents`` is seed 000's table with its three indexes. ``session_id`` has no foreign key on
purpose: a memory must outlive the conversation that wrote it, and the column only records where it came
from. The full-text index depends on the dialect:
- SQLite: a contentless FTS5 table with the ``trigram`` tokenizer (substring matching, so Chinese needs
  no segmentation; the text is not stored twice) and three triggers that keep it in step with the table;
- PostgreSQL: the ``pg_trgm`` extension and a GIN index on the concatenated text, which serves
  ``ILIKE '%term%'`` (creating the extension needs a role allowed to do so).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

import agentloft.core.db

revision = "0004_documents"
down_revision = "0003_chat"
branch_labels = None
depends_on = None

FTS = "agent_documents_fts"
# Must stay identical to agentloft.documents.search.PG_SEARCH_EXPR (the planner matches the text).
PG_SEARCH_EXPR = (
    "(title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || content)"
)

# The index row of a document is ``(user_id << 32) + (4294967295 - rowid)``: one user's entries form one
# rowid range, so a search reads only that user's part of each term's list (FTS5 seeks by rowid), whoever
# else has data; and within it newer documents come first in ascending order, which FTS5 walks 2-3 times
# faster than descending. Keep identical to agentloft.documents.search.fts_rowid_sql.
FTS_ROWID_NEW = "(new.user_id << 32) + (4294967295 - new.rowid)"
FTS_ROWID_OLD = "(old.user_id << 32) + (4294967295 - old.rowid)"

SQLITE_FTS = [
    f"""CREATE VIRTUAL TABLE {FTS} USING fts5(
        title, summary, tags, content, content='', tokenize='trigram'
    )""",
    f"""CREATE TRIGGER {FTS}_ai AFTER INSERT ON agent_documents BEGIN
        INSERT INTO {FTS}(rowid, title, summary, tags, content)
        VALUES ({FTS_ROWID_NEW}, new.title, new.summary, new.tags, new.content);
    END""",
    f"""CREATE TRIGGER {FTS}_ad AFTER DELETE ON agent_documents BEGIN
        INSERT INTO {FTS}({FTS}, rowid, title, summary, tags, content)
        VALUES ('delete', {FTS_ROWID_OLD}, old.title, old.summary, old.tags, old.content);
    END""",
    f"""CREATE TRIGGER {FTS}_au AFTER UPDATE OF user_id, title, summary, tags, content ON agent_documents
    BEGIN
        INSERT INTO {FTS}({FTS}, rowid, title, summary, tags, content)
        VALUES ('delete', {FTS_ROWID_OLD}, old.title, old.summary, old.tags, old.content);
        INSERT INTO {FTS}(rowid, title, summary, tags, content)
        VALUES ({FTS_ROWID_NEW}, new.title, new.summary, new.tags, new.content);
    END""",
    f"""INSERT INTO {FTS}(rowid, title, summary, tags, content)
        SELECT (user_id << 32) + (4294967295 - rowid), title, summary, tags, content FROM agent_documents""",
]

POSTGRES_FTS = [
    "CREATE EXTENSION IF NOT EXISTS pg_trgm",
    f"CREATE INDEX idx_agent_doc_search_trgm ON agent_documents USING gin ({PG_SEARCH_EXPR} gin_trgm_ops)",
]


def _create_documents() -> None:
    op.create_table(
        "agent_documents",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("session_id", sa.String(length=64), nullable=True),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("tags", sa.String(length=500), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_agent_documents_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_documents")),
    )
    op.create_index("idx_agent_doc_user_type", "agent_documents", ["user_id", "type"])
    op.create_index("idx_agent_doc_user_created", "agent_documents", ["user_id", "created_at"])
    op.create_index("idx_agent_doc_session", "agent_documents", ["session_id"])


def _create_versions() -> None:
    op.create_table(
        "agent_document_versions",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("document_id", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("type", sa.String(length=16), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("tags", sa.String(length=500), nullable=True),
        sa.Column("created_at", agentloft.core.db.UTCDateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["agent_documents.id"],
            name=op.f("fk_agent_document_versions_document_id_agent_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_agent_document_versions")),
        sa.UniqueConstraint("document_id", "version", name="uq_agent_doc_version"),
    )


def upgrade() -> None:
    _create_documents()
    _create_versions()
    dialect = op.get_bind().dialect.name
    statements = {"sqlite": SQLITE_FTS, "postgresql": POSTGRES_FTS}.get(dialect, [])
    for statement in statements:
        op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        for trigger in ("ai", "ad", "au"):
            op.execute(f"DROP TRIGGER IF EXISTS {FTS}_{trigger}")
        op.execute(f"DROP TABLE IF EXISTS {FTS}")
    elif dialect == "postgresql":
        op.execute("DROP INDEX IF EXISTS idx_agent_doc_search_trgm")
    op.drop_table("agent_document_versions")
    op.drop_index("idx_agent_doc_session", table_name="agent_documents")
    op.drop_index("idx_agent_doc_user_created", table_name="agent_documents")
    op.drop_index("idx_agent_doc_user_type", table_name="agent_documents")
    op.drop_table("agent_documents")
