"""the served report: a study's change log (``work_changes``, a row per write that
changes its counted work) and the whole report stored on its ``figure_jobs`` row, so the
dashboard and report.json serve the last computation instead of recomputing it per request

Revision ID: 0016_served_report
Revises: 0015_detector_models
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016_served_report"
down_revision = "0015_detector_models"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "work_changes",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=40), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_work_changes_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_work_changes")),
    )
    op.create_index("ix_work_changes_study_id_id", "work_changes", ["study_id", "id"])
    with op.batch_alter_table("figure_jobs") as batch:
        batch.add_column(sa.Column("report", sa.Text(), nullable=True))
        batch.add_column(sa.Column("report_change", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("report_at", sa.DateTime(timezone=True), nullable=True))
        batch.add_column(sa.Column("report_seconds", sa.Float(), nullable=True))
        batch.add_column(
            sa.Column("with_figures", sa.Boolean(), nullable=False, server_default=sa.true())
        )


def downgrade() -> None:
    with op.batch_alter_table("figure_jobs") as batch:
        for name in ("with_figures", "report_seconds", "report_at", "report_change", "report"):
            batch.drop_column(name)
    op.drop_index("ix_work_changes_study_id_id", table_name="work_changes")
    op.drop_table("work_changes")
