"""search: one- and two-character terms indexed, NFKC folding, chat sessions searchable

Revision ID: 0007_cjk_search
Revises: 0010_mcp_remote

What ``agentloft.core.textsearch`` describes, for documents and for chat (session titles, and the text of
messages that did not come from A2A):

- SQLite: per searchable thing two contentless FTS5 tables, ``<table>_fts`` (``trigram``) over the
  folded text and ``<table>_grams`` (every character and adjacent pair, ``detail=none``), fed by triggers
  through the functions ``agentloft_fold`` / ``agentloft_grams`` (installed on every app connection by
  ``core.db``). The documents' trigram index is rebuilt, since it now holds the folded text. Index rowids
  are ``(user_id << 32) + (4294967295 - rowid)`` (one range per user, newest first). Messages have no
  user column: their rowid takes the session's user, and a session's own delete trigger (BEFORE, so its
  messages are still there) removes its messages' entries, because a cascaded message delete runs
  after the session row is gone.
- PostgreSQL: IMMUTABLE SQL functions ``agentloft_fold`` and ``agentloft_grams``; a generated column
  ``search_text`` (the folded text where folding changes more than the case) on documents and messages;
  GIN indexes (``pg_trgm`` over the folded text, array containment over the grams), so the indexes are
  built here and kept by PostgreSQL. Needs a UTF8 database (``normalize``).

The statements are spelled out here, not imported, so this revision keeps doing what it did.
"""

from __future__ import annotations

from alembic import op

revision = "0007_cjk_search"
down_revision = "0010_mcp_remote"
branch_labels = None
depends_on = None

MASK = 4294967295

# Every printable ASCII character is part of a gram token, so the tokenizer splits the gram string on
# spaces only (non-ASCII characters always belong to tokens; grams hold no control characters).
_TOKENCHARS = "".join(c for c in map(chr, range(33, 127)) if not c.isalnum())
_GRAMS_TOKENIZE = "ascii tokenchars '" + _TOKENCHARS.replace("'", "''") + "'"


def _fts_tables(name: str, columns: str) -> list[str]:
    tokenize = _GRAMS_TOKENIZE.replace('"', '""')
    return [
        f"CREATE VIRTUAL TABLE {name}_fts USING fts5({columns}, content='', tokenize='trigram')",
        f'CREATE VIRTUAL TABLE {name}_grams USING fts5(grams, content=\'\', detail=none, columnsize=0, '
        f'tokenize="{tokenize}")',
    ]


# --- documents (SQLite) ------------------------------------------------------------------------------

DOC = "agent_documents"
DOC_COLUMNS = ("title", "summary", "tags", "content")


def _doc_rowid(row: str) -> str:
    return f"({row}.user_id << 32) + ({MASK} - {row}.rowid)"


def _doc_grams(row: str) -> str:
    """A document's gram string, plus the token ``type:<type>`` (never a gram: grams are one or two
    characters), so that a short-term search keeps one type inside the index."""
    raw = ", ".join(f"{row}.{c}" for c in DOC_COLUMNS)
    return f"agentloft_grams({raw}) || ' type:' || {row}.type"


def _doc_add(row: str) -> str:
    folded = ", ".join(f"agentloft_fold({row}.{c})" for c in DOC_COLUMNS)
    return (f"INSERT INTO {DOC}_fts(rowid, {', '.join(DOC_COLUMNS)}) VALUES ({_doc_rowid(row)}, {folded}); "
            f"INSERT INTO {DOC}_grams(rowid, grams) VALUES ({_doc_rowid(row)}, {_doc_grams(row)});")


def _doc_remove(row: str) -> str:
    folded = ", ".join(f"agentloft_fold({row}.{c})" for c in DOC_COLUMNS)
    return (f"INSERT INTO {DOC}_fts({DOC}_fts, rowid, {', '.join(DOC_COLUMNS)}) "
            f"VALUES ('delete', {_doc_rowid(row)}, {folded}); "
            f"INSERT INTO {DOC}_grams({DOC}_grams, rowid, grams) "
            f"VALUES ('delete', {_doc_rowid(row)}, {_doc_grams(row)});")


DOC_TRIGGERS = [
    f"CREATE TRIGGER {DOC}_fts_ai AFTER INSERT ON {DOC} BEGIN {_doc_add('new')} END",
    f"CREATE TRIGGER {DOC}_fts_ad AFTER DELETE ON {DOC} BEGIN {_doc_remove('old')} END",
    f"CREATE TRIGGER {DOC}_fts_au AFTER UPDATE OF user_id, type, {', '.join(DOC_COLUMNS)} ON {DOC} "
    f"BEGIN {_doc_remove('old')} {_doc_add('new')} END",
]
DOC_BACKFILL = [
    f"INSERT INTO {DOC}_fts(rowid, {', '.join(DOC_COLUMNS)}) SELECT {_doc_rowid(DOC)}, "
    + ", ".join(f"agentloft_fold({c})" for c in DOC_COLUMNS) + f" FROM {DOC}",
    f"INSERT INTO {DOC}_grams(rowid, grams) SELECT {_doc_rowid(DOC)}, {_doc_grams(DOC)} FROM {DOC}",
]

# The triggers of 0004 (raw text, trigrams only), for the downgrade.
_OLD_ROWID_NEW = f"(new.user_id << 32) + ({MASK} - new.rowid)"
_OLD_ROWID_OLD = f"(old.user_id << 32) + ({MASK} - old.rowid)"
DOC_TRIGGERS_0004 = [
    f"""CREATE TRIGGER {DOC}_fts_ai AFTER INSERT ON {DOC} BEGIN
        INSERT INTO {DOC}_fts(rowid, title, summary, tags, content)
        VALUES ({_OLD_ROWID_NEW}, new.title, new.summary, new.tags, new.content);
    END""",
    f"""CREATE TRIGGER {DOC}_fts_ad AFTER DELETE ON {DOC} BEGIN
        INSERT INTO {DOC}_fts({DOC}_fts, rowid, title, summary, tags, content)
        VALUES ('delete', {_OLD_ROWID_OLD}, old.title, old.summary, old.tags, old.content);
    END""",
    f"""CREATE TRIGGER {DOC}_fts_au AFTER UPDATE OF user_id, title, summary, tags, content ON {DOC}
    BEGIN
        INSERT INTO {DOC}_fts({DOC}_fts, rowid, title, summary, tags, content)
        VALUES ('delete', {_OLD_ROWID_OLD}, old.title, old.summary, old.tags, old.content);
        INSERT INTO {DOC}_fts(rowid, title, summary, tags, content)
        VALUES ({_OLD_ROWID_NEW}, new.title, new.summary, new.tags, new.content);
    END""",
]

# --- chat (SQLite) -----------------------------------------------------------------------------------

SES = "agent_sessions"
MSG = "agent_messages"


def _ses_rowid(row: str) -> str:
    return f"({row}.user_id << 32) + ({MASK} - {row}.rowid)"


def _ses_entry(op_: str, row: str) -> str:
    """Add (``op_`` empty) or delete the session title's entries; untitled sessions are not indexed."""
    head_fts = f"INSERT INTO {SES}_fts({SES}_fts, rowid, title) SELECT 'delete', " if op_ else \
        f"INSERT INTO {SES}_fts(rowid, title) SELECT "
    head_grams = f"INSERT INTO {SES}_grams({SES}_grams, rowid, grams) SELECT 'delete', " if op_ else \
        f"INSERT INTO {SES}_grams(rowid, grams) SELECT "
    when = f"WHERE {row}.title <> ''"
    return (f"{head_fts}{_ses_rowid(row)}, agentloft_fold({row}.title) {when}; "
            f"{head_grams}{_ses_rowid(row)}, agentloft_grams({row}.title) {when};")


def _msg_user(row: str) -> str:
    return f"(SELECT user_id FROM {SES} WHERE id = {row}.session_id)"


def _msg_entry(op_: str, row: str) -> str:
    """Add or delete one message's entries: only messages with text that did not come from A2A."""
    rowid = f"({_msg_user(row)} << 32) + ({MASK} - {row}.rowid)"
    head_fts = f"INSERT INTO {MSG}_fts({MSG}_fts, rowid, content) SELECT 'delete', " if op_ else \
        f"INSERT INTO {MSG}_fts(rowid, content) SELECT "
    head_grams = f"INSERT INTO {MSG}_grams({MSG}_grams, rowid, grams) SELECT 'delete', " if op_ else \
        f"INSERT INTO {MSG}_grams(rowid, grams) SELECT "
    when = f"WHERE {row}.source <> 'a2a' AND {row}.content <> '' AND {_msg_user(row)} IS NOT NULL"
    return (f"{head_fts}{rowid}, agentloft_fold({row}.content) {when}; "
            f"{head_grams}{rowid}, agentloft_grams({row}.content) {when};")


def _session_messages_removed() -> str:
    """Before a session row goes, its indexed messages' entries go (a cascade deletes the messages after
    the session row is gone, when their own trigger can no longer find the user)."""
    rowid = f"(old.user_id << 32) + ({MASK} - m.rowid)"
    where = f"FROM {MSG} m WHERE m.session_id = old.id AND m.source <> 'a2a' AND m.content <> ''"
    return (f"INSERT INTO {MSG}_fts({MSG}_fts, rowid, content) "
            f"SELECT 'delete', {rowid}, agentloft_fold(m.content) {where}; "
            f"INSERT INTO {MSG}_grams({MSG}_grams, rowid, grams) "
            f"SELECT 'delete', {rowid}, agentloft_grams(m.content) {where};")


CHAT_TRIGGERS = [
    f"CREATE TRIGGER {SES}_search_ai AFTER INSERT ON {SES} BEGIN {_ses_entry('', 'new')} END",
    f"CREATE TRIGGER {SES}_search_au AFTER UPDATE OF title, user_id ON {SES} "
    f"WHEN old.title IS NOT new.title OR old.user_id IS NOT new.user_id "
    f"BEGIN {_ses_entry('delete', 'old')} {_ses_entry('', 'new')} END",
    f"CREATE TRIGGER {SES}_search_bd BEFORE DELETE ON {SES} "
    f"BEGIN {_session_messages_removed()} {_ses_entry('delete', 'old')} END",
    f"CREATE TRIGGER {MSG}_search_ai AFTER INSERT ON {MSG} BEGIN {_msg_entry('', 'new')} END",
    f"CREATE TRIGGER {MSG}_search_au AFTER UPDATE OF content, source, session_id ON {MSG} "
    f"WHEN old.content IS NOT new.content OR old.source IS NOT new.source "
    f"OR old.session_id IS NOT new.session_id "
    f"BEGIN {_msg_entry('delete', 'old')} {_msg_entry('', 'new')} END",
    f"CREATE TRIGGER {MSG}_search_ad AFTER DELETE ON {MSG} BEGIN {_msg_entry('delete', 'old')} END",
]
CHAT_BACKFILL = [
    f"INSERT INTO {SES}_fts(rowid, title) SELECT {_ses_rowid(SES)}, agentloft_fold(title) FROM {SES} "
    "WHERE title <> ''",
    f"INSERT INTO {SES}_grams(rowid, grams) SELECT {_ses_rowid(SES)}, agentloft_grams(title) FROM {SES} "
    "WHERE title <> ''",
    f"INSERT INTO {MSG}_fts(rowid, content) SELECT (s.user_id << 32) + ({MASK} - m.rowid), "
    f"agentloft_fold(m.content) FROM {MSG} m JOIN {SES} s ON s.id = m.session_id "
    "WHERE m.source <> 'a2a' AND m.content <> ''",
    f"INSERT INTO {MSG}_grams(rowid, grams) SELECT (s.user_id << 32) + ({MASK} - m.rowid), "
    f"agentloft_grams(m.content) FROM {MSG} m JOIN {SES} s ON s.id = m.session_id "
    "WHERE m.source <> 'a2a' AND m.content <> ''",
]
CHAT_TRIGGER_NAMES = [f"{SES}_search_ai", f"{SES}_search_au", f"{SES}_search_bd", f"{MSG}_search_ai",
                      f"{MSG}_search_au", f"{MSG}_search_ad"]

# --- PostgreSQL --------------------------------------------------------------------------------------

# The separators of agentloft.core.textsearch.SEPARATOR_RANGES above U+0020 (those up to U+0020 are
# compared directly); NFKC already turns most of them into a space.
PG_SEPARATORS = (r"\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
                 r"\u2028\u2029\u202f\u205f\u3000")  # 19 characters, written as E-string escapes
PG_FUNCTIONS = [
    # ASCII needs no NFKC (PostgreSQL's costs ~0.2 us a character, ASCII or not).
    """CREATE OR REPLACE FUNCTION agentloft_fold(t text) RETURNS text
       LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
       AS $$ SELECT CASE WHEN octet_length(t) = char_length(t) THEN lower(t) ELSE lower(normalize(t, NFKC)) END $$""",
    # Every character and every adjacent pair of the folded text but those with a separator; duplicates
    # are left to GIN, which keeps each key of a row once. About 0.2-0.5 ms for a 300-character text:
    # the cost keeps it out of per-row filters, but stays below its true price, because the planner
    # charges it for every row a bitmap scan reads as if the index's exact matches were checked again,
    # and would then rather combine a rare gram with a bitmap of all the user's documents.
    f"""CREATE OR REPLACE FUNCTION agentloft_grams(t text) RETURNS text[]
       LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 1000
       AS $$
         SELECT ARRAY(SELECT u.a FROM unnest(f.c) AS u(a) WHERE u.a COLLATE "C" > ' ')
             || ARRAY(SELECT x.a || x.b FROM unnest(f.c, f.c[2:]) AS x(a, b)
                      WHERE x.a COLLATE "C" > ' ' AND x.b COLLATE "C" > ' ')
         FROM (SELECT string_to_array(translate(agentloft_fold(t), E'{PG_SEPARATORS}',
                                                '{" " * 19}'), NULL) AS c) AS f
       $$""",
]


def _pg_folded_column(table: str, text_sql: str, skip: str = "") -> str:
    """A stored copy of the folded text, kept by PostgreSQL, for the rows where folding changes more than
    the case (NULL for ASCII): what the trigram index holds, so that checking its candidates reads the
    row instead of normalizing it again (~50 us a row)."""
    ascii_ = f"octet_length({text_sql}) = char_length({text_sql})"
    return (f"ALTER TABLE {table} ADD COLUMN search_text text GENERATED ALWAYS AS "
            f"(CASE WHEN {skip}{ascii_} THEN NULL ELSE lower(normalize({text_sql}, NFKC)) END) STORED")


# Keep identical to agentloft.documents.search.PG_SEARCH_EXPR / PG_SEARCH_FOLDED (the planner matches
# the expressions).
PG_DOC_EXPR = "(title || ' ' || coalesce(summary, '') || ' ' || coalesce(tags, '') || ' ' || content)"
PG_DOC_FOLDED = f"coalesce(search_text, lower({PG_DOC_EXPR}))"
PG_MSG_FOLDED = "coalesce(search_text, lower(content))"
PG_STATEMENTS = [
    _pg_folded_column(DOC, PG_DOC_EXPR),
    f"CREATE INDEX idx_agent_doc_search_trgm ON {DOC} USING gin (({PG_DOC_FOLDED}) gin_trgm_ops)",
    f"CREATE INDEX idx_agent_doc_search_grams ON {DOC} USING gin (agentloft_grams({PG_DOC_EXPR}))",
    # Frequencies of ten times more grams, down to the rare ones, so that the planner knows a rare
    # gram's few rows are cheaper to read than a bitmap of all the user's documents to combine with.
    "ALTER INDEX idx_agent_doc_search_grams ALTER COLUMN 1 SET STATISTICS 1000",
    f"CREATE INDEX idx_agent_sessions_search_trgm ON {SES} USING gin (agentloft_fold(title) gin_trgm_ops)",
    f"CREATE INDEX idx_agent_sessions_search_grams ON {SES} USING gin (agentloft_grams(title))",
    _pg_folded_column(MSG, "content", skip="source = 'a2a' OR "),
    f"CREATE INDEX idx_agent_messages_search_trgm ON {MSG} USING gin (({PG_MSG_FOLDED}) gin_trgm_ops) "
    "WHERE source <> 'a2a'",
    f"CREATE INDEX idx_agent_messages_search_grams ON {MSG} USING gin (agentloft_grams(content)) "
    "WHERE source <> 'a2a'",
    "ALTER INDEX idx_agent_messages_search_grams ALTER COLUMN 1 SET STATISTICS 1000",
]
PG_INDEX_NAMES = ["idx_agent_doc_search_grams", "idx_agent_sessions_search_trgm", "idx_agent_sessions_search_grams",
                  "idx_agent_messages_search_trgm", "idx_agent_messages_search_grams"]


def _upgrade_sqlite() -> None:
    for trigger in ("ai", "ad", "au"):
        op.execute(f"DROP TRIGGER IF EXISTS {DOC}_fts_{trigger}")
    op.execute(f"INSERT INTO {DOC}_fts({DOC}_fts) VALUES ('delete-all')")
    op.execute(_fts_tables(DOC, "")[1])
    for name, columns in ((SES, "title"), (MSG, "content")):
        for statement in _fts_tables(name, columns):
            op.execute(statement)
    for statement in DOC_TRIGGERS + DOC_BACKFILL + CHAT_TRIGGERS + CHAT_BACKFILL:
        op.execute(statement)


def _downgrade_sqlite() -> None:
    for trigger in [*CHAT_TRIGGER_NAMES, f"{DOC}_fts_ai", f"{DOC}_fts_ad", f"{DOC}_fts_au"]:
        op.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    for table in (f"{DOC}_grams", f"{SES}_fts", f"{SES}_grams", f"{MSG}_fts", f"{MSG}_grams"):
        op.execute(f"DROP TABLE IF EXISTS {table}")
    op.execute(f"INSERT INTO {DOC}_fts({DOC}_fts) VALUES ('delete-all')")
    for statement in DOC_TRIGGERS_0004:
        op.execute(statement)
    op.execute(f"INSERT INTO {DOC}_fts(rowid, title, summary, tags, content) "
               f"SELECT {_doc_rowid(DOC)}, title, summary, tags, content FROM {DOC}")


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _upgrade_sqlite()
    elif dialect == "postgresql":
        for statement in PG_FUNCTIONS:
            op.execute(statement)
        op.execute("DROP INDEX IF EXISTS idx_agent_doc_search_trgm")
        for statement in PG_STATEMENTS:
            op.execute(statement)


def downgrade() -> None:
    dialect = op.get_bind().dialect.name
    if dialect == "sqlite":
        _downgrade_sqlite()
    elif dialect == "postgresql":
        for name in [*PG_INDEX_NAMES, "idx_agent_doc_search_trgm"]:
            op.execute(f"DROP INDEX IF EXISTS {name}")
        for table in (DOC, MSG):
            op.execute(f"ALTER TABLE {table} DROP COLUMN IF EXISTS search_text")
        op.execute(f"CREATE INDEX idx_agent_doc_search_trgm ON {DOC} USING gin ({PG_DOC_EXPR} gin_trgm_ops)")
        op.execute("DROP FUNCTION IF EXISTS agentloft_grams(text)")
        op.execute("DROP FUNCTION IF EXISTS agentloft_fold(text)")
