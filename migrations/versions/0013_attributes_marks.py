"""annotation attributes and multi-label marks

``annotations.attributes`` and ``adjudicated_errors.attributes``: the values a category's
declared attributes took (JSON object, NULL when none). ``annotations.mark``: in a taxonomy
with ``multi_label: true`` one mark with several categories is one row per category; the
rows after the first name the first row's id here (NULL: the row is its own mark).

Revision ID: 0013_attributes_marks
Revises: 0012_practice_documents
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013_attributes_marks"
down_revision = "0012_practice_documents"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("annotations") as batch:
        batch.add_column(sa.Column("attributes", sa.JSON(), nullable=True))
        batch.add_column(sa.Column("mark", sa.Integer(), nullable=True))
    with op.batch_alter_table("adjudicated_errors") as batch:
        batch.add_column(sa.Column("attributes", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("adjudicated_errors") as batch:
        batch.drop_column("attributes")
    with op.batch_alter_table("annotations") as batch:
        batch.drop_column("mark")
        batch.drop_column("attributes")
