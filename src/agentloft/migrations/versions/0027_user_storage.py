"""What each user stores, in bytes, kept by triggers (``user_storage``)

Revision ID: 0027_user_storage
Revises: 0026_knowledge_vocab

``AGENTLOFT_USER_STORAGE_BYTES`` bounds what one user keeps (``core.storage_quota``). Summing a user's
documents, every version of each and their files on every write would read up to a hundred copies of
each document's text; one counter row per user, kept by row triggers on the tables that hold the bytes,
costs a primary-key upsert per write instead, and counts every write path alike (the version trigger of
0015, a later migration's rewrite, the CLI).

What counts: a document's and a version's title, content, summary and tags (UTF-8 bytes), and a file's
original bytes. A document's delete subtracts its own bytes and its versions' before the row goes (its
versions then leave by ``ON DELETE CASCADE``, and their trigger finds no document to charge); a version
dropped by the version trigger subtracts its bytes. Deletes only subtract (an UPDATE), and on
PostgreSQL not while their user is being deleted: that deletion cascades to the counter row too, which must not be recreated
or updated meanwhile. Additions upsert, so a user's first write
makes their row. The upgrade fills the counters from what is stored now.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027_user_storage"
down_revision = "0026_knowledge_vocab"
branch_labels = None
depends_on = None

FIELDS = ("title", "content", "summary", "tags")
SQLITE_BYTES = "length(CAST(coalesce({row}.{field}, '') AS BLOB))"
PG_BYTES = "coalesce(octet_length({row}.{field}), 0)"
# On PostgreSQL, a subtraction while the user is being deleted (their rows go by cascade) would update a
# counter row whose user is gone, and PostgreSQL checks the foreign key of a row updated twice in one
# transaction. (SQLite checks a foreign key only when its column changes; its triggers name no other table
# than they write, which the read cache's schema test wants: tests/core/test_readcache_schema.py.)
LIVE = " AND EXISTS (SELECT 1 FROM users WHERE users.id = user_storage.user_id)"
ADD = ("INSERT INTO user_storage (user_id, bytes) {values} ON CONFLICT (user_id) DO UPDATE "
       "SET bytes = user_storage.bytes + excluded.bytes")


def _size(template: str, row: str) -> str:
    return "(" + " + ".join(template.format(row=row, field=f) for f in FIELDS) + ")"


def _sqlite_triggers() -> list[str]:
    def size(row: str) -> str:
        return _size(SQLITE_BYTES, row)
    document_user = "(SELECT user_id FROM agent_documents WHERE id = {row}.document_id)"
    return [
        f"""CREATE TRIGGER user_storage_document_insert AFTER INSERT ON agent_documents BEGIN
  {ADD.format(values=f"VALUES (new.user_id, {size('new')})")};
END""",
        f"""CREATE TRIGGER user_storage_document_update AFTER UPDATE OF {", ".join(FIELDS)} ON agent_documents
WHEN {size('new')} != {size('old')} BEGIN
  {ADD.format(values=f"VALUES (new.user_id, {size('new')} - {size('old')})")};
END""",
        f"""CREATE TRIGGER user_storage_document_delete BEFORE DELETE ON agent_documents BEGIN
  UPDATE user_storage SET bytes = bytes - {size('old')} - (
    SELECT coalesce(sum({size('v')}), 0) FROM agent_document_versions v WHERE v.document_id = old.id)
  WHERE user_id = old.user_id;
END""",
        f"""CREATE TRIGGER user_storage_version_insert AFTER INSERT ON agent_document_versions BEGIN
  {ADD.format(values=f"SELECT user_id, {size('new')} FROM agent_documents WHERE id = new.document_id")};
END""",
        f"""CREATE TRIGGER user_storage_version_delete AFTER DELETE ON agent_document_versions BEGIN
  UPDATE user_storage SET bytes = bytes - {size('old')} WHERE user_id = {document_user.format(row='old')};
END""",
        f"""CREATE TRIGGER user_storage_file_insert AFTER INSERT ON files BEGIN
  {ADD.format(values="VALUES (new.user_id, new.size)")};
END""",
        """CREATE TRIGGER user_storage_file_delete AFTER DELETE ON files BEGIN
  UPDATE user_storage SET bytes = bytes - old.size WHERE user_id = old.user_id;
END""",
    ]


SQLITE_TRIGGERS = ("user_storage_document_insert", "user_storage_document_update", "user_storage_document_delete",
                   "user_storage_version_insert", "user_storage_version_delete", "user_storage_file_insert",
                   "user_storage_file_delete")


def _pg_functions() -> list[str]:
    def size(row: str) -> str:
        return _size(PG_BYTES, row)
    return [
        f"""CREATE OR REPLACE FUNCTION agentloft_storage_document() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  delta bigint;
BEGIN
  IF TG_OP = 'DELETE' THEN
    UPDATE user_storage SET bytes = bytes - {size('old')} - (
      SELECT coalesce(sum({size('v')}), 0) FROM agent_document_versions v WHERE v.document_id = old.id)
    WHERE user_id = old.user_id{LIVE};
    RETURN old;
  END IF;
  IF TG_OP = 'INSERT' THEN
    delta := {size('new')};
  ELSE
    delta := {size('new')} - {size('old')};
  END IF;
  {ADD.format(values="VALUES (new.user_id, delta)")};  -- also when 0: the lock comes first (see PG_TRIGGERS)
  RETURN new;
END
$$""",
        f"""CREATE OR REPLACE FUNCTION agentloft_storage_version() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {ADD.format(values=f"SELECT user_id, {size('new')} FROM agent_documents WHERE id = new.document_id")};
  ELSE
    UPDATE user_storage SET bytes = bytes - {size('old')}
    WHERE user_id = (SELECT user_id FROM agent_documents WHERE id = old.document_id){LIVE};
  END IF;
  RETURN NULL;
END
$$""",
        f"""CREATE OR REPLACE FUNCTION agentloft_storage_file() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    {ADD.format(values="VALUES (new.user_id, new.size)")};
  ELSE
    UPDATE user_storage SET bytes = bytes - old.size WHERE user_id = old.user_id{LIVE};
  END IF;
  RETURN NULL;
END
$$""",
    ]


# (trigger, table, when and on what, function). A document's trigger runs BEFORE the write, so that its
# counter row is locked before the search counts' advisory lock (0014, AFTER): every document write takes
# the two in the same order, and two writers of one user cannot deadlock. It runs on every UPDATE (a change
# of type alone takes the advisory lock and keeps a version too). What the write then does to the versions
# (0015's trigger) updates the row it holds already.
PG_TRIGGERS = (
    ("user_storage_document", "agent_documents", "BEFORE INSERT OR DELETE OR UPDATE", "agentloft_storage_document"),
    ("user_storage_version", "agent_document_versions", "AFTER INSERT OR DELETE", "agentloft_storage_version"),
    ("user_storage_file", "files", "AFTER INSERT OR DELETE", "agentloft_storage_file"),
)
PG_FUNCTIONS = ("agentloft_storage_document", "agentloft_storage_version", "agentloft_storage_file")


def _backfill(template: str) -> str:
    return f"""INSERT INTO user_storage (user_id, bytes)
SELECT user_id, sum(n) FROM (
  SELECT d.user_id AS user_id, {_size(template, 'd')} AS n FROM agent_documents d
  UNION ALL
  SELECT d.user_id, {_size(template, 'v')} FROM agent_document_versions v JOIN agent_documents d ON d.id = v.document_id
  UNION ALL
  SELECT f.user_id, f.size FROM files f
) stored GROUP BY user_id"""


def upgrade() -> None:
    op.create_table(
        "user_storage",
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["user_id"], ["users.id"], name=op.f("fk_user_storage_user_id_users"),
                                ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("user_id", name=op.f("pk_user_storage")),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_backfill(PG_BYTES))
        for function in _pg_functions():
            op.execute(function)
        for name, table, event, function in PG_TRIGGERS:
            op.execute(f"CREATE TRIGGER {name} {event} ON {table} FOR EACH ROW EXECUTE FUNCTION {function}()")
    else:
        op.execute(_backfill(SQLITE_BYTES))
        for trigger in _sqlite_triggers():
            op.execute(trigger)


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, table, _event, _function in PG_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name} ON {table}")
        for function in PG_FUNCTIONS:
            op.execute(f"DROP FUNCTION IF EXISTS {function}()")
    else:
        for name in SQLITE_TRIGGERS:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
    op.drop_table("user_storage")
