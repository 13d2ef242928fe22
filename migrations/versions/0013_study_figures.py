"""maintained figures: each study's report as last computed, and the job recomputing it
(issue 34)

``study_figures``: one row per study and variant (with or without the training phase's
practice documents): the counted-work state (``version``), the recompute job's queue fields
(the claim rule of app/detection/queue.py) and the stored report with its age.

Revision ID: 0013_study_figures
Revises: 0012_practice_documents
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_study_figures"
down_revision = "0012_practice_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "study_figures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("include_practice", sa.Boolean(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("run_after", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(length=200), nullable=True),
        sa.Column("claimed_version", sa.Integer(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("computed_version", sa.Integer(), nullable=True),
        sa.Column("settings_key", sa.String(length=64), nullable=True),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
        sa.Column("figures", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_study_figures_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_study_figures")),
        sa.UniqueConstraint(
            "study_id",
            "include_practice",
            name=op.f("uq_study_figures_study_id_include_practice"),
        ),
    )
    op.create_index(op.f("ix_study_figures_status"), "study_figures", ["status"], unique=False)


def downgrade() -> None:
    op.drop_index(op.f("ix_study_figures_status"), table_name="study_figures")
    op.drop_table("study_figures")
