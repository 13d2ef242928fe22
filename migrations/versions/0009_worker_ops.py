"""segment times, worker reviews and their action log (time on task, worker
management)

Revision ID: 0009_worker_ops
Revises: 0008_journey
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_worker_ops"
down_revision = "0008_journey"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "segment_times",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False),
        sa.Column("active_seconds", sa.Float(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignments.id"],
            name=op.f("fk_segment_times_assignment_id_assignments"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_segment_times")),
        sa.UniqueConstraint(
            "assignment_id", "segment", name=op.f("uq_segment_times_assignment_id_segment")
        ),
    )
    op.create_table(
        "worker_reviews",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=200), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=True),
        sa.Column("blocked", sa.Boolean(), nullable=False),
        sa.Column("note", sa.Text(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_worker_reviews_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker_reviews")),
        sa.UniqueConstraint(
            "study_id", "worker_id", name=op.f("uq_worker_reviews_study_id_worker_id")
        ),
    )
    op.create_table(
        "worker_actions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=200), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("detail", sa.Text(), nullable=False),
        sa.Column("actor", sa.String(length=320), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_worker_actions_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_worker_actions")),
    )
    op.create_index(
        op.f("ix_worker_actions_study_id"), "worker_actions", ["study_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_worker_actions_study_id"), table_name="worker_actions")
    op.drop_table("worker_actions")
    op.drop_table("worker_reviews")
    op.drop_table("segment_times")
