"""the adjudicated layer and per-document review status

Revision ID: 0007_adjudication
Revises: 0006_suggestion_reason
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_adjudication"
down_revision = "0006_suggestion_reason"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "adjudicated_errors",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("candidate", sa.String(length=64), nullable=True),
        sa.Column("decision", sa.String(length=20), nullable=False),
        sa.Column("origin", sa.String(length=20), nullable=False),
        sa.Column("segment", sa.Integer(), nullable=False),
        sa.Column("start_offset", sa.Integer(), nullable=False),
        sa.Column("end_offset", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("category", sa.String(length=100), nullable=False),
        sa.Column("paired_segment", sa.Integer(), nullable=True),
        sa.Column("paired_start", sa.Integer(), nullable=True),
        sa.Column("paired_end", sa.Integer(), nullable=True),
        sa.Column("paired_text", sa.Text(), nullable=True),
        sa.Column("paired_end_segment", sa.Integer(), nullable=True),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("decided_by", sa.String(length=320), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_adjudicated_errors_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_adjudicated_errors")),
        sa.UniqueConstraint(
            "document_id", "candidate", name=op.f("uq_adjudicated_errors_document_id_candidate")
        ),
    )
    op.create_index(
        op.f("ix_adjudicated_errors_document_id"),
        "adjudicated_errors",
        ["document_id"],
        unique=False,
    )
    op.create_table(
        "document_reviews",
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("updated_by", sa.String(length=320), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_document_reviews_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("document_id", name=op.f("pk_document_reviews")),
    )


def downgrade() -> None:
    op.drop_table("document_reviews")
    op.drop_index(op.f("ix_adjudicated_errors_document_id"), table_name="adjudicated_errors")
    op.drop_table("adjudicated_errors")
