"""``agentloft_grams`` names ``agentloft_fold`` with its schema, so a ``pg_dump`` restores

Revision ID: 0028_grams_schema
Revises: 0027_user_storage

``pg_restore`` (and ``pg_dump``'s plain SQL) runs with an empty ``search_path``, and builds the documents'
gram index by calling ``agentloft_grams``, whose body called ``agentloft_fold`` unqualified: the restore
stopped at that index ("function agentloft_fold(text) does not exist"), so ``agentloft backup`` on
PostgreSQL made a dump that could not be brought back. The body now names the schema the functions were
created in (the migration's ``current_schema()``). It is the same computation, so the index built on it
stays valid and is not rebuilt. SQLite has no such functions in the schema (they are Python functions
registered per connection): nothing to do there.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028_grams_schema"
down_revision = "0027_user_storage"
branch_labels = None
depends_on = None

SEPARATORS = (r"\u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
              r"\u2028\u2029\u202f\u205f\u3000")  # 19 characters, as in 0007


def _grams(fold: str) -> str:
    """0007's ``agentloft_grams`` with ``fold`` as the name of the folding function."""
    return f"""CREATE OR REPLACE FUNCTION agentloft_grams(t text) RETURNS text[]
       LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE COST 1000
       AS $$
         SELECT ARRAY(SELECT u.a FROM unnest(f.c) AS u(a) WHERE u.a COLLATE "C" > ' ')
             || ARRAY(SELECT x.a || x.b FROM unnest(f.c, f.c[2:]) AS x(a, b)
                      WHERE x.a COLLATE "C" > ' ' AND x.b COLLATE "C" > ' ')
         FROM (SELECT string_to_array(translate({fold}(t), E'{SEPARATORS}',
                                                '{" " * 19}'), NULL) AS c) AS f
       $$"""


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    schema = bind.execute(sa.text("SELECT current_schema()")).scalar_one()
    quoted = bind.dialect.identifier_preparer.quote_identifier(schema)
    op.execute(_grams(f"{quoted}.agentloft_fold"))


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(_grams("agentloft_fold"))
