"""indexes for an arrival's reads under its study's lock (issue 17)

Neither covers a column the per-action writes change, so those UPDATEs stay heap-only (HOT).

Revision ID: 0011_arrival_indexes
Revises: 0010_training
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_arrival_indexes"
down_revision = "0010_training"
branch_labels = None
depends_on = None

ACTIVE = sa.text("status = 'active'")


def upgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.create_index("ix_assignments_study_worker", ["study_id", "worker_id"], unique=False)
        batch.create_index(
            "ix_assignments_study_active",
            ["study_id"],
            unique=False,
            postgresql_where=ACTIVE,
            sqlite_where=ACTIVE,
        )


def downgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.drop_index("ix_assignments_study_active")
        batch.drop_index("ix_assignments_study_worker")
