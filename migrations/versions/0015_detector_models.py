"""detectors learned from a study's curated work

``detector_models``: a model folder's ``head.json`` and model card, stored for the study
that uses it (``marginalia study detector SLUG DIR``); the study points to it in
``studies.settings["detector_model"]``. In the database, so every worker node reads the same model.

Revision ID: 0015_detector_models
Revises: 0014_figure_jobs
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015_detector_models"
down_revision = "0014_figure_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "detector_models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("payload", sa.LargeBinary(), nullable=False),
        sa.Column("card", sa.Text(), nullable=True),
        sa.Column("created_by", sa.String(length=320), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_detector_models_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_detector_models")),
        sa.UniqueConstraint("study_id", "digest", name=op.f("uq_detector_models_study_id_digest")),
    )
    op.create_index(
        op.f("ix_detector_models_study_id"), "detector_models", ["study_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_detector_models_study_id"), table_name="detector_models")
    op.drop_table("detector_models")
