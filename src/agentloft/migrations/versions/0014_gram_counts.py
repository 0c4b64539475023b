"""PostgreSQL: exact totals of a user's most common one- and two-character terms, kept with every write

Revision ID: 0014_gram_counts
Revises: 0013_model_names

A search's total is a ``count(*)`` over the gram index's bitmap, and PostgreSQL 15 visits every match's
heap page for it (GIN has no index-only scans; the bitmap scan's skip-fetch was withdrawn in its minor
releases). For a character in 36,854 of a user's 100,000 documents that is ~30,000 pages: ~145 ms of a
150 ms search (docs/benchmarks.md), against ~12 ms for the rest of it.

``agent_document_gram_counts`` keeps that total for the few terms where it is costly: a row per user,
type (``''``: every type) and gram, created by ``documents.search`` the first time one short term alone
matches at least ``PG_KEEP_COUNT_FROM`` documents, then kept exact by a row trigger on
``agent_documents`` in the same transaction as the write (so a search's snapshot sees the documents and
the counts of the same moment). A gram of one or two characters without spaces is in
``agentloft_grams(t)`` exactly when it is a substring of ``agentloft_fold(t)``, so the trigger needs one
``strpos`` per kept gram, not the document's grams: a write of a user without kept counts costs one
index probe.

Locks (advisory, per user, held to the end of the transaction): every document write takes
``GRAM_GUARD`` shared before it looks for counts, and a search that creates a count takes it exclusively
(``pg_try_advisory_xact_lock``, never waiting) and counts again under it, so no write committed after
that count can miss the new row. Writes that change counts take ``GRAM_WRITE`` exclusively: two
transactions that each update several count rows would otherwise be able to deadlock. This assumes READ
COMMITTED, the default (each statement of the trigger sees the counts committed before it).

A ``TRUNCATE`` of the documents empties the counts. A later migration that changes ``agentloft_fold``
or ``agentloft_grams`` must empty them too (they come back on demand).

SQLite: nothing (its gram index counts a term's matches without reading the table).
"""

from __future__ import annotations

from alembic import op

revision = "0014_gram_counts"
down_revision = "0013_model_names"
branch_labels = None
depends_on = None

# GRAM_GUARD: keep identical to agentloft.documents.search.GRAM_GUARD (GRAM_WRITE is only taken here);
# the text below is PG_SEARCH_EXPR there, as the gram index has it.
GRAM_GUARD = 1_735_289_601
GRAM_WRITE = 1_735_289_602


def _folded(row: str) -> str:
    """``agentloft_fold`` of the row's text, read from its generated ``search_text`` (migration 0007: the
    folded text where folding changes more than the case, else NULL) instead of normalized again."""
    return (f"coalesce({row}.search_text, lower({row}.title || ' ' || coalesce({row}.summary, '') || ' ' || "
            f"coalesce({row}.tags, '') || ' ' || {row}.content))")


TABLE = """
CREATE TABLE agent_document_gram_counts (
    user_id integer NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    type varchar(16) NOT NULL,
    gram text NOT NULL,
    n integer NOT NULL,
    PRIMARY KEY (user_id, type, gram)
)
"""

# The change one write makes to each of a user's counts: +1 where the new text holds the gram (and the
# type fits), -1 where the old one did; rows that do not change are not touched. PL/pgSQL, not SQL: it
# keeps the statement's plan for the connection (a SQL function plans it again on every write).
APPLY = """
CREATE FUNCTION agentloft_count_grams(uid integer, old_text text, old_type text, new_text text,
                                      new_type text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_document_gram_counts c SET n = c.n + d.delta
    FROM (SELECT k.type, k.gram,
                 (new_text IS NOT NULL AND k.type IN ('', new_type) AND strpos(new_text, k.gram) > 0)::int
               - (old_text IS NOT NULL AND k.type IN ('', old_type) AND strpos(old_text, k.gram) > 0)::int
                 AS delta
          FROM agent_document_gram_counts k WHERE k.user_id = uid) d
    WHERE c.user_id = uid AND c.type = d.type AND c.gram = d.gram AND d.delta <> 0;
END
$$
"""

TRIGGER_FUNCTION = f"""
CREATE FUNCTION agentloft_doc_gram_counts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_text text;
    new_text text;
BEGIN
    IF TG_OP <> 'INSERT' THEN
        PERFORM pg_advisory_xact_lock_shared({GRAM_GUARD}, OLD.user_id);
        IF EXISTS (SELECT 1 FROM agent_document_gram_counts WHERE user_id = OLD.user_id) THEN
            old_text := {_folded("OLD")};
        END IF;
    END IF;
    IF TG_OP = 'UPDATE' AND OLD.user_id = NEW.user_id THEN  -- the guard is held, the counts looked for
        IF old_text IS NULL THEN
            RETURN NULL;
        END IF;
        new_text := {_folded("NEW")};
        IF old_text = new_text AND OLD.type = NEW.type THEN
            RETURN NULL;
        END IF;
        PERFORM pg_advisory_xact_lock({GRAM_WRITE}, NEW.user_id);
        PERFORM agentloft_count_grams(NEW.user_id, old_text, OLD.type, new_text, NEW.type);
        RETURN NULL;
    END IF;
    IF TG_OP <> 'DELETE' THEN
        PERFORM pg_advisory_xact_lock_shared({GRAM_GUARD}, NEW.user_id);
        IF EXISTS (SELECT 1 FROM agent_document_gram_counts WHERE user_id = NEW.user_id) THEN
            new_text := {_folded("NEW")};
        END IF;
    END IF;
    IF old_text IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock({GRAM_WRITE}, OLD.user_id);
        PERFORM agentloft_count_grams(OLD.user_id, old_text, OLD.type, NULL, NULL);
    END IF;
    IF new_text IS NOT NULL THEN
        PERFORM pg_advisory_xact_lock({GRAM_WRITE}, NEW.user_id);
        PERFORM agentloft_count_grams(NEW.user_id, NULL, NULL, new_text, NEW.type);
    END IF;
    RETURN NULL;
END
$$
"""

CLEAR_FUNCTION = """
CREATE FUNCTION agentloft_doc_gram_counts_clear() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM agent_document_gram_counts;
    RETURN NULL;
END
$$
"""

TRIGGERS = [
    "CREATE TRIGGER agent_documents_gram_counts AFTER INSERT OR DELETE OR UPDATE OF "
    "user_id, type, title, summary, tags, content ON agent_documents "
    "FOR EACH ROW EXECUTE FUNCTION agentloft_doc_gram_counts()",
    "CREATE TRIGGER agent_documents_gram_counts_clear AFTER TRUNCATE ON agent_documents "
    "FOR EACH STATEMENT EXECUTE FUNCTION agentloft_doc_gram_counts_clear()",
]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in (TABLE, APPLY, TRIGGER_FUNCTION, CLEAR_FUNCTION, *TRIGGERS):
        op.execute(statement)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("DROP TRIGGER IF EXISTS agent_documents_gram_counts_clear ON agent_documents")
    op.execute("DROP TRIGGER IF EXISTS agent_documents_gram_counts ON agent_documents")
    for function in ("agentloft_doc_gram_counts_clear()", "agentloft_doc_gram_counts()",
                     "agentloft_count_grams(integer, text, text, text, text)"):
        op.execute(f"DROP FUNCTION IF EXISTS {function}")
    op.execute("DROP TABLE IF EXISTS agent_document_gram_counts")
