"""a study's learned detector retrained as its curated work grows

``detector_trainings``: one row per retraining (``marginalia study detector SLUG
--retrain-every N``), queued when the study's curated documents reach the last training's
count + N and run by a worker, which stores the new model (``detector_models``) and makes the
study use it.

Revision ID: 0017_detector_trainings
Revises: 0016_served_report
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017_detector_trainings"
down_revision = "0016_served_report"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "detector_trainings",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("documents", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("model_id", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(length=200), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_detector_trainings_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["model_id"],
            ["detector_models.id"],
            name=op.f("fk_detector_trainings_model_id_detector_models"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_detector_trainings")),
    )
    op.create_index(
        op.f("ix_detector_trainings_study_id"), "detector_trainings", ["study_id"], unique=False
    )
    op.create_index(
        op.f("ix_detector_trainings_status"), "detector_trainings", ["status"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_detector_trainings_status"), table_name="detector_trainings")
    op.drop_index(op.f("ix_detector_trainings_study_id"), table_name="detector_trainings")
    op.drop_table("detector_trainings")
