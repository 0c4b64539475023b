"""Whether a model reads images (``model_configs.vision``)

Revision ID: 0024_model_vision
Revises: 0023_model_kind

A chat message with an image attached is refused for a model marked without vision (``422
model_without_vision``). Existing rows get what a new row of their kind gets (``llm.presets.default_vision``):
on for Anthropic and for OpenAI's own API, off for every other OpenAI-compatible server (Ollama, vLLM, a
custom one) and for embedding models, where the admin knows whether the model loaded there reads images and can switch it on.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024_model_vision"
down_revision = "0023_model_kind"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("model_configs", sa.Column("vision", sa.Boolean(), nullable=False, server_default=sa.false()))
    op.execute("UPDATE model_configs SET vision = true WHERE kind = 'chat' AND (provider = 'anthropic' OR "
               "(provider = 'openai' AND (base_url IS NULL OR base_url LIKE 'https://api.openai.com%')))")


def downgrade() -> None:
    with op.batch_alter_table("model_configs") as batch:
        batch.drop_column("vision")
