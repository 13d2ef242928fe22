"""document figures: each document's part of its study's slow figures (its γ and unitizing α,
the observed disorders of its alignments), cached per the document's counted-work state, so a
submission recomputes one document's figures instead of the study's

Revision ID: 0021_document_figures
Revises: 0020_work_sessions
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0021_document_figures"
down_revision = "0020_work_sessions"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "document_figures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("parts", sa.JSON(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_document_figures_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_document_figures_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_document_figures")),
        sa.UniqueConstraint("document_id", name=op.f("uq_document_figures_document_id")),
    )
    op.create_index(
        op.f("ix_document_figures_study_id"), "document_figures", ["study_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_document_figures_study_id"), table_name="document_figures")
    op.drop_table("document_figures")
