"""suggestion reason and paired earlier span (the LLM detector)

Revision ID: 0006_suggestion_reason
Revises: 0005_worker_slots
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_suggestion_reason"
down_revision = "0005_worker_slots"
branch_labels = None
depends_on = None

COLUMNS = ("reason", "paired_segment", "paired_start", "paired_end", "paired_text")


def upgrade() -> None:
    with op.batch_alter_table("suggestions") as batch:
        batch.add_column(sa.Column("reason", sa.Text(), nullable=True))
        batch.add_column(sa.Column("paired_segment", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("paired_start", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("paired_end", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("paired_text", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("suggestions") as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)
