"""practice feedback per segment and attention checks (training)

Revision ID: 0010_training
Revises: 0009_worker_ops
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_training"
down_revision = "0009_worker_ops"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("gold_errors") as batch:
        batch.add_column(sa.Column("is_check", sa.Boolean(), nullable=False, server_default="0"))
    op.create_table(
        "practice_checks",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False),
        sa.Column("feedback", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignments.id"],
            name=op.f("fk_practice_checks_assignment_id_assignments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_practice_checks")),
        sa.UniqueConstraint(
            "assignment_id", "segment", name=op.f("uq_practice_checks_assignment_id_segment")
        ),
    )


def downgrade() -> None:
    op.drop_table("practice_checks")
    with op.batch_alter_table("gold_errors") as batch:
        batch.drop_column("is_check")
