"""participants' sessions: several documents per visit, one completion code; each assignment
names its session; a consent is stored with the session it opened (never looked up by a
worker ID), so one worker ID may consent in several sessions

Revision ID: 0020_work_sessions
Revises: 0019_llm_annotators
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020_work_sessions"
down_revision = "0019_llm_annotators"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "work_sessions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=200), nullable=False),
        sa.Column("platform", sa.String(length=20), nullable=False),
        sa.Column("documents", sa.Integer(), nullable=False),
        sa.Column("completion_code", sa.String(length=64), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_early_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name="fk_work_sessions_study_id_studies",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_work_sessions"),
    )
    op.create_index("ix_work_sessions_study_worker", "work_sessions", ["study_id", "worker_id"])
    with op.batch_alter_table("assignments") as batch:
        batch.add_column(sa.Column("session_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_assignments_session_id_work_sessions",
            "work_sessions",
            ["session_id"],
            ["id"],
            ondelete="SET NULL",
        )
        batch.create_index("ix_assignments_session_id", ["session_id"])
    with op.batch_alter_table("consents") as batch:
        batch.add_column(sa.Column("session_id", sa.Integer(), nullable=True))
        batch.create_foreign_key(
            "fk_consents_session_id_work_sessions",
            "work_sessions",
            ["session_id"],
            ["id"],
            ondelete="CASCADE",
        )
        batch.drop_constraint("uq_consents_study_id_worker_id_text_hash", type_="unique")
        batch.create_index("ix_consents_study_worker", ["study_id", "worker_id"])


def downgrade() -> None:
    with op.batch_alter_table("consents") as batch:
        batch.drop_index("ix_consents_study_worker")
        batch.create_unique_constraint(
            "uq_consents_study_id_worker_id_text_hash", ["study_id", "worker_id", "text_hash"]
        )
        batch.drop_constraint("fk_consents_session_id_work_sessions", type_="foreignkey")
        batch.drop_column("session_id")
    with op.batch_alter_table("assignments") as batch:
        batch.drop_index("ix_assignments_session_id")
        batch.drop_constraint("fk_assignments_session_id_work_sessions", type_="foreignkey")
        batch.drop_column("session_id")
    op.drop_index("ix_work_sessions_study_worker", table_name="work_sessions")
    op.drop_table("work_sessions")
