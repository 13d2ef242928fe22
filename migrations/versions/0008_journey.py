"""study status (lifecycle), consents and questionnaire answers (the worker's journey)

Revision ID: 0008_journey
Revises: 0007_adjudication
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_journey"
down_revision = "0007_adjudication"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("studies") as batch:
        batch.add_column(
            sa.Column("status", sa.String(length=20), server_default="open", nullable=False)
        )
    op.create_table(
        "consents",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("worker_id", sa.String(length=200), nullable=False),
        sa.Column("text_hash", sa.String(length=64), nullable=False),
        sa.Column("agreed", sa.Boolean(), nullable=False),
        sa.Column("decided_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["study_id"], ["studies.id"], name="fk_consents_study_id_studies", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_consents"),
        sa.UniqueConstraint(
            "study_id", "worker_id", "text_hash", name="uq_consents_study_id_worker_id_text_hash"
        ),
    )
    op.create_table(
        "questionnaire_answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("assignment_id", sa.Integer(), nullable=False),
        sa.Column("stage", sa.String(length=20), nullable=False),
        sa.Column("question", sa.String(length=100), nullable=False),
        sa.Column("answer", sa.Text(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["assignment_id"],
            ["assignments.id"],
            name="fk_questionnaire_answers_assignment_id_assignments",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_questionnaire_answers"),
        sa.UniqueConstraint(
            "assignment_id",
            "stage",
            "question",
            name="uq_questionnaire_answers_assignment_id_stage_question",
        ),
    )


def downgrade() -> None:
    op.drop_table("questionnaire_answers")
    op.drop_table("consents")
    with op.batch_alter_table("studies") as batch:
        batch.drop_column("status")
