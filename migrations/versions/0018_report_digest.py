"""the served report's digest: what the dashboard shows of a study's stored report
(the per-document and per-pair lists cut to the rows it draws), stored beside the whole report
so a big study's dashboard reads kilobytes, not the whole report

Revision ID: 0018_report_digest
Revises: 0017_detector_trainings
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018_report_digest"
down_revision = "0017_detector_trainings"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("figure_jobs") as batch:
        batch.add_column(sa.Column("digest", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("figure_jobs") as batch:
        batch.drop_column("digest")
