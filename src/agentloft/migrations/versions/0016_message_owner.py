"""PostgreSQL: chat messages carry their session's owner, and their gram index is keyed by it

Revision ID: 0016_message_owner
Revises: 0015_version_trigger

The chat search (``chat.search``) finds a one- or two-character term in a user's messages through
migration 0007's GIN over ``agentloft_grams(content)``, which lists every user's matches: for a common
character, 66,257 messages of all users for the searching user's 13,656 (``bench.chat_search``: 200,000
messages, the user with 40,000), each read from the table and joined with the user's sessions before
the rest could be ruled out. That made the search of a common character as slow as the LIKE scan it
replaces. The documents' gram index had the same blind spot and is keyed by user since migration 0011.

Messages have no owner of their own (a session has one), so this adds ``agent_messages.user_id``, kept by
the database: set from the session on every insert (and on a move to another session), and changed with
the session's owner. It is not in the ORM model (the app never writes it, SQLite has no use for it: its
indexes are keyed by user through their rowids), like the folded ``search_text`` column of 0007. No
foreign key: the session's cascade already removes the messages of a deleted user.

The new GIN over ``(user_id, agentloft_grams(content))`` needs ``btree_gin`` (migration 0011 creates it
where the role may); without it the old index stays, and the search, which filters on ``user_id`` either
way, is as fast as before.

SQLite: nothing.
"""

from __future__ import annotations

import logging

from alembic import op

revision = "0016_message_owner"
down_revision = "0015_version_trigger"
branch_labels = None
depends_on = None

log = logging.getLogger("agentloft.migrations")

OLD_INDEX = "idx_agent_messages_search_grams"
NEW_INDEX = "idx_agent_messages_search_user_grams"

MESSAGE_OWNER = """
CREATE FUNCTION agentloft_message_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.user_id := (SELECT user_id FROM agent_sessions WHERE id = NEW.session_id);
    RETURN NEW;
END
$$
"""
SESSION_OWNER = """
CREATE FUNCTION agentloft_session_owner() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE agent_messages SET user_id = NEW.user_id WHERE session_id = NEW.id;
    RETURN NULL;
END
$$
"""
TRIGGERS = [
    "CREATE TRIGGER agent_messages_owner BEFORE INSERT OR UPDATE OF session_id, user_id ON agent_messages "
    "FOR EACH ROW EXECUTE FUNCTION agentloft_message_owner()",
    "CREATE TRIGGER agent_sessions_owner AFTER UPDATE OF user_id ON agent_sessions "
    "FOR EACH ROW WHEN (OLD.user_id IS DISTINCT FROM NEW.user_id) EXECUTE FUNCTION agentloft_session_owner()",
]


def _has_btree_gin() -> bool:
    found = op.get_bind().exec_driver_sql("SELECT 1 FROM pg_extension WHERE extname = 'btree_gin'").first()
    return found is not None


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("ALTER TABLE agent_messages ADD COLUMN user_id integer")
    op.execute("UPDATE agent_messages m SET user_id = s.user_id FROM agent_sessions s WHERE s.id = m.session_id")
    op.execute(MESSAGE_OWNER)
    op.execute(SESSION_OWNER)
    for statement in TRIGGERS:
        op.execute(statement)
    if not _has_btree_gin():
        log.warning("btree_gin extension unavailable: keeping the message gram index of migration 0007; "
                    "chat searches of common short terms stay slower on PostgreSQL")
        return
    op.execute(f"CREATE INDEX {NEW_INDEX} ON agent_messages USING gin (user_id, agentloft_grams(content)) "
               "WHERE source <> 'a2a'")
    op.execute(f"DROP INDEX IF EXISTS {OLD_INDEX}")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"CREATE INDEX IF NOT EXISTS {OLD_INDEX} ON agent_messages USING gin (agentloft_grams(content)) "
               "WHERE source <> 'a2a'")
    op.execute(f"ALTER INDEX {OLD_INDEX} ALTER COLUMN 1 SET STATISTICS 1000")
    op.execute(f"DROP INDEX IF EXISTS {NEW_INDEX}")
    op.execute("DROP TRIGGER IF EXISTS agent_sessions_owner ON agent_sessions")
    op.execute("DROP TRIGGER IF EXISTS agent_messages_owner ON agent_messages")
    op.execute("DROP FUNCTION IF EXISTS agentloft_session_owner()")
    op.execute("DROP FUNCTION IF EXISTS agentloft_message_owner()")
    op.execute("ALTER TABLE agent_messages DROP COLUMN user_id")
