"""A document's previous state is kept as a version by the database, in the UPDATE that replaces it

Revision ID: 0015_version_trigger
Revises: 0014_gram_counts

``documents.service.update_document`` used to INSERT the version itself before it flushed the UPDATE:
a statement more per update, and on PostgreSQL a round trip and ~0.6 ms of the process's work out of a
~3.6 ms update, which kept the update's p95 at the 5 ms goal (docs/benchmarks.md). A row trigger now
writes ``OLD`` as the next version whenever one of the versioned columns (type, title, content, summary,
tags) changes, and drops the versions beyond the newest ``MAX_VERSIONS_KEPT``: every UPDATE of those
columns keeps its version, whichever code path writes it (a later migration that rewrites them adds a
version to every row it changes).

The next number is read inside the trigger, after the row's lock: on PostgreSQL a second writer of the
same document waits for the first to commit and then numbers after it (READ COMMITTED gives each
statement of the trigger a new snapshot), where the INSERT of the service refused it with a 409. The
unique ``(document_id, version)`` still guards the numbering under stricter isolation levels.

A version's ``created_at`` is the replaced state's ``updated_at``, as before ("what it said when").
"""

from __future__ import annotations

from alembic import op

revision = "0015_version_trigger"
down_revision = "0014_gram_counts"
branch_labels = None
depends_on = None

# Keep equal to agentloft.documents.service.MAX_VERSIONS_KEPT (tests/documents/test_versions.py).
MAX_VERSIONS_KEPT = 100
TRIGGER = "agent_documents_keep_version"
COLUMNS = ("type", "title", "content", "summary", "tags")
VERSION_VALUES = "old.id, {number}, old.type, old.title, old.content, old.summary, old.tags, old.updated_at"
INSERT = ("INSERT INTO agent_document_versions (document_id, version, type, title, content, summary, tags, "
          "created_at) ")

SQLITE_CHANGED = " OR ".join(f"old.{c} IS NOT new.{c}" for c in COLUMNS)
SQLITE_TRIGGER = f"""
CREATE TRIGGER {TRIGGER} AFTER UPDATE OF {", ".join(COLUMNS)} ON agent_documents
WHEN {SQLITE_CHANGED}
BEGIN
  {INSERT}SELECT {VERSION_VALUES.format(number="coalesce(max(version), 0) + 1")}
    FROM agent_document_versions WHERE document_id = old.id;
  DELETE FROM agent_document_versions WHERE document_id = old.id AND version <= (
    SELECT max(version) FROM agent_document_versions WHERE document_id = old.id) - {MAX_VERSIONS_KEPT};
END
"""

PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION agentloft_keep_document_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n integer;
BEGIN
  SELECT coalesce(max(version), 0) + 1 INTO n FROM agent_document_versions WHERE document_id = old.id;
  {INSERT}VALUES ({VERSION_VALUES.format(number="n")});
  IF n > {MAX_VERSIONS_KEPT} THEN
    DELETE FROM agent_document_versions WHERE document_id = old.id AND version <= n - {MAX_VERSIONS_KEPT};
  END IF;
  RETURN NULL;
END
$$
"""
PG_CHANGED = f"({', '.join(f'old.{c}' for c in COLUMNS)}) IS DISTINCT FROM ({', '.join(f'new.{c}' for c in COLUMNS)})"
PG_TRIGGER = (f"CREATE TRIGGER {TRIGGER} AFTER UPDATE OF {', '.join(COLUMNS)} ON agent_documents "
              f"FOR EACH ROW WHEN ({PG_CHANGED}) EXECUTE FUNCTION agentloft_keep_document_version()")


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(PG_FUNCTION)
        op.execute(PG_TRIGGER)
    else:
        op.execute(SQLITE_TRIGGER)


def downgrade() -> None:
    """Back to versions written by the service (the code of revision 0014)."""
    op.execute(f"DROP TRIGGER IF EXISTS {TRIGGER}" + (
        " ON agent_documents" if op.get_bind().dialect.name == "postgresql" else ""))
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS agentloft_keep_document_version()")
