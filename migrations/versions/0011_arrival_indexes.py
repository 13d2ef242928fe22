"""indexes for an arrival's reads under its study's lock

Neither covers a column the per-action writes change, so those UPDATEs stay heap-only (HOT).
The study's active assignments are found through (study_id, status), not a partial index on
study_id WHERE status = 'active': with that partial index every claim (add, position, remove,
heartbeat) cost Postgres about 0.2 ms more CPU (bench/server_cpu.py: add 0.62 against 0.42 ms).

Revision ID: 0011_arrival_indexes
Revises: 0010_training
"""

from __future__ import annotations

from alembic import op

revision = "0011_arrival_indexes"
down_revision = "0010_training"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.create_index("ix_assignments_study_worker", ["study_id", "worker_id"], unique=False)
        batch.create_index("ix_assignments_study_status", ["study_id", "status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("assignments") as batch:
        batch.drop_index("ix_assignments_study_status")
        batch.drop_index("ix_assignments_study_worker")
