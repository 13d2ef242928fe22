"""worker slots: when an assignment's worker first did something

Revision ID: 0005_worker_slots
Revises: 0004_scores
Create Date: 2026-11-23 02:20:00

A new assignment holds its slot briefly until ``engaged_at`` is set (an annotation, a
position update or a heartbeat); existing active assignments count as engaged, so nobody
mid-work loses a slot on upgrade.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005_worker_slots"
down_revision = "0004_scores"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.add_column(sa.Column("engaged_at", sa.DateTime(timezone=True), nullable=True))
    op.execute("UPDATE assignments SET engaged_at = last_seen_at")


def downgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.drop_column("engaged_at")
