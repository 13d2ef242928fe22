"""practice documents apart from the qualification test (a
document that gave practice feedback must never be graded, or its answers are harvested)

``documents.is_practice``: a gold document of a study with a pass mark that teaches (its
answer key shown segment by segment) and is never graded. Every gold document stored before
stays a graded qualification document (``false``): its key is no longer shown, so a worker
ID can no longer read it and pass with another.

Revision ID: 0012_practice_documents
Revises: 0011_arrival_indexes
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012_practice_documents"
down_revision = "0011_arrival_indexes"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(
            sa.Column("is_practice", sa.Boolean(), nullable=False, server_default=sa.false())
        )


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_column("is_practice")
