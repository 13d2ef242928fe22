"""figure jobs: a study's slow figures (γ, unitizing α, MACE, Dawid-Skene) computed by the
worker and cached per counted-work state, and the consensus units they produce (MACE's posterior per
marked sentence unit: the ``consensus`` export layer)

Revision ID: 0014_figure_jobs
Revises: 0013_attributes_marks
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014_figure_jobs"
down_revision = "0013_attributes_marks"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "figure_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("include_practice", sa.Boolean(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("result", sa.JSON(), nullable=True),
        sa.Column("result_key", sa.String(length=64), nullable=True),
        sa.Column("seconds", sa.Float(), nullable=True),
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
            name=op.f("fk_figure_jobs_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_figure_jobs")),
        sa.UniqueConstraint(
            "study_id", "include_practice", name=op.f("uq_figure_jobs_study_id_include_practice")
        ),
    )
    op.create_index(op.f("ix_figure_jobs_study_id"), "figure_jobs", ["study_id"], unique=False)
    op.create_index(op.f("ix_figure_jobs_status"), "figure_jobs", ["status"], unique=False)
    op.create_table(
        "consensus_units",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False),
        sa.Column("start", sa.Integer(), nullable=False),
        sa.Column("end", sa.Integer(), nullable=False),
        sa.Column("category", sa.String(length=100), nullable=False),
        sa.Column("posterior", sa.Float(), nullable=False),
        sa.Column("marked", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_consensus_units_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_consensus_units_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_consensus_units")),
    )
    op.create_index(
        op.f("ix_consensus_units_study_id"), "consensus_units", ["study_id"], unique=False
    )
    op.create_index(
        op.f("ix_consensus_units_document_id"), "consensus_units", ["document_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_consensus_units_document_id"), table_name="consensus_units")
    op.drop_index(op.f("ix_consensus_units_study_id"), table_name="consensus_units")
    op.drop_table("consensus_units")
    op.drop_index(op.f("ix_figure_jobs_status"), table_name="figure_jobs")
    op.drop_index(op.f("ix_figure_jobs_study_id"), table_name="figure_jobs")
    op.drop_table("figure_jobs")
