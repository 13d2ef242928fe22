"""LLM annotators of a study (app/llm/): ``llm_runs`` (a run of an annotator over some
documents, then its calibration), ``llm_jobs`` (one per document of a run: the worker's queue,
with what each document cost) and ``llm_answers`` (the endpoint's answers cached by request).

Revision ID: 0019_llm_annotators
Revises: 0018_report_digest
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0019_llm_annotators"
down_revision = "0018_report_digest"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "llm_runs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("annotator", sa.String(length=100), nullable=False),
        sa.Column("config", sa.JSON(), nullable=False),
        sa.Column("documents", sa.Integer(), nullable=False),
        sa.Column("requested_by", sa.String(length=320), nullable=True),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("calibration", sa.JSON(), nullable=True),
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
            name=op.f("fk_llm_runs_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_runs")),
    )
    with op.batch_alter_table("llm_runs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_llm_runs_status"), ["status"], unique=False)
        batch_op.create_index(batch_op.f("ix_llm_runs_study_id"), ["study_id"], unique=False)

    op.create_table(
        "llm_answers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("model", sa.String(length=200), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("choice", sa.JSON(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_llm_answers_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_answers")),
        sa.UniqueConstraint("key", name=op.f("uq_llm_answers_key")),
    )
    with op.batch_alter_table("llm_answers", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_llm_answers_document_id"), ["document_id"], unique=False
        )

    op.create_table(
        "llm_jobs",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("run_id", sa.Integer(), nullable=False),
        sa.Column("document_id", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("outcome", sa.String(length=20), nullable=True),
        sa.Column("marks", sa.Integer(), nullable=False),
        sa.Column("unlocated", sa.Integer(), nullable=False),
        sa.Column("ambiguous", sa.Integer(), nullable=False),
        sa.Column("refused", sa.Integer(), nullable=False),
        sa.Column("problems", sa.JSON(), nullable=False),
        sa.Column("requests", sa.Integer(), nullable=False),
        sa.Column("cache_hits", sa.Integer(), nullable=False),
        sa.Column("retries", sa.Integer(), nullable=False),
        sa.Column("prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("completion_tokens", sa.Integer(), nullable=False),
        sa.Column("seconds", sa.Float(), nullable=False),
        sa.Column("answer_prompt_tokens", sa.Integer(), nullable=False),
        sa.Column("answer_completion_tokens", sa.Integer(), nullable=False),
        sa.Column("answer_seconds", sa.Float(), nullable=False),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("claimed_by", sa.String(length=200), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["document_id"],
            ["documents.id"],
            name=op.f("fk_llm_jobs_document_id_documents"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["llm_runs.id"],
            name=op.f("fk_llm_jobs_run_id_llm_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_llm_jobs")),
    )
    with op.batch_alter_table("llm_jobs", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_llm_jobs_document_id"), ["document_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_llm_jobs_run_id"), ["run_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_llm_jobs_status"), ["status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("llm_jobs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_llm_jobs_status"))
        batch_op.drop_index(batch_op.f("ix_llm_jobs_run_id"))
        batch_op.drop_index(batch_op.f("ix_llm_jobs_document_id"))

    op.drop_table("llm_jobs")
    with op.batch_alter_table("llm_answers", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_llm_answers_document_id"))

    op.drop_table("llm_answers")
    with op.batch_alter_table("llm_runs", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_llm_runs_study_id"))
        batch_op.drop_index(batch_op.f("ix_llm_runs_status"))

    op.drop_table("llm_runs")
