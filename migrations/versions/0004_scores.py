"""detector versions with their confident thresholds; paired spans across segments

Revision ID: 0004_scores
Revises: 0003_import_jobs
Create Date: 2026-11-23 02:15:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004_scores"
down_revision = "0003_import_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "detector_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("detector", sa.String(length=100), nullable=False),
        sa.Column("version", sa.String(length=100), nullable=False),
        sa.Column("calibration", sa.JSON(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_detector_versions")),
        sa.UniqueConstraint(
            "detector", "version", name=op.f("uq_detector_versions_detector_version")
        ),
    )

    op.add_column("annotations", sa.Column("paired_end_segment", sa.Integer(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("annotations") as batch:
        batch.drop_column("paired_end_segment")
    op.drop_table("detector_versions")
