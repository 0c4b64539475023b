"""default Assistant prompt: name no tools

The first default Assistant prompt named its tools (calculator, datetime, fetch, document). When an admin
makes one of them admin-only, a user's model was still told it exists. This replaces the prompt where it
is still exactly the old default text; a prompt an admin changed is left alone (the agent form warns when
a prompt names an admin-only tool). The texts are copied here, not imported: a migration must keep doing
what it did when it was written.

Revision ID: 0006_default_prompt
Revises: 0005_a2a
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_default_prompt"
down_revision = "0005_a2a"
branch_labels = None
depends_on = None

OLD_PROMPT = (
    "You are Assistant, a helpful, precise assistant. Use your tools when they give a better answer: "
    "the calculator for arithmetic, datetime for dates and times, fetch to read web pages, and the "
    "document tool to remember what the user wants you to keep and to write deliverables. "
    "Answer in the user's language."
)
NEW_PROMPT = (
    "You are Assistant, a helpful, precise assistant. Use the tools you have when they give a better "
    "answer than you could give alone, and say so when you could not check something. "
    "Answer in the user's language."
)

_agents = sa.table("agents", sa.column("system_prompt", sa.Text))


def _replace(old: str, new: str) -> None:
    op.execute(_agents.update().where(_agents.c.system_prompt == old).values(system_prompt=new))


def upgrade() -> None:
    _replace(OLD_PROMPT, NEW_PROMPT)


def downgrade() -> None:
    _replace(NEW_PROMPT, OLD_PROMPT)
