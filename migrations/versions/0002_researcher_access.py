"""researcher access: study owners and collaborators, roles, API keys, session versions,
login failures

Existing studies get no owner (only admins see them); the earliest researcher becomes an
admin so an upgraded deployment keeps one account that sees every study (docs/SECURITY.md).

Revision ID: 0002_researcher_access
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002_researcher_access"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("researchers", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("role", sa.String(length=20), server_default="researcher", nullable=False)
        )
        batch_op.add_column(sa.Column("disabled_at", sa.DateTime(timezone=True), nullable=True))
        batch_op.add_column(
            sa.Column("session_version", sa.Integer(), server_default="0", nullable=False)
        )
    op.execute("UPDATE researchers SET role = 'admin' WHERE id = (SELECT MIN(id) FROM researchers)")
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.add_column(sa.Column("owner_id", sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f("ix_studies_owner_id"), ["owner_id"], unique=False)
        batch_op.create_foreign_key(
            batch_op.f("fk_studies_owner_id_researchers"),
            "researchers",
            ["owner_id"],
            ["id"],
            ondelete="RESTRICT",
        )
    op.create_table(
        "study_collaborators",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("study_id", sa.Integer(), nullable=False),
        sa.Column("researcher_id", sa.Integer(), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.ForeignKeyConstraint(
            ["researcher_id"],
            ["researchers.id"],
            name=op.f("fk_study_collaborators_researcher_id_researchers"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["study_id"],
            ["studies.id"],
            name=op.f("fk_study_collaborators_study_id_studies"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_study_collaborators")),
        sa.UniqueConstraint(
            "study_id", "researcher_id", name=op.f("uq_study_collaborators_study_id_researcher_id")
        ),
    )
    with op.batch_alter_table("study_collaborators", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_study_collaborators_researcher_id"), ["researcher_id"], unique=False
        )
    op.create_table(
        "api_keys",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("researcher_id", sa.Integer(), nullable=False),
        sa.Column("prefix", sa.String(length=20), nullable=False),
        sa.Column("secret_hash", sa.String(length=64), nullable=False),
        sa.Column("label", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["researcher_id"],
            ["researchers.id"],
            name=op.f("fk_api_keys_researcher_id_researchers"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_keys")),
        sa.UniqueConstraint("prefix", name=op.f("uq_api_keys_prefix")),
        sa.UniqueConstraint("secret_hash", name=op.f("uq_api_keys_secret_hash")),
    )
    with op.batch_alter_table("api_keys", schema=None) as batch_op:
        batch_op.create_index(
            batch_op.f("ix_api_keys_researcher_id"), ["researcher_id"], unique=False
        )
    op.create_table(
        "login_failures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("email", sa.String(length=320), nullable=False),
        sa.Column("client", sa.String(length=100), nullable=False),
        sa.Column("failed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_failures")),
    )
    with op.batch_alter_table("login_failures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_login_failures_email"), ["email"], unique=False)
        batch_op.create_index(batch_op.f("ix_login_failures_client"), ["client"], unique=False)
        batch_op.create_index(
            batch_op.f("ix_login_failures_failed_at"), ["failed_at"], unique=False
        )


def downgrade() -> None:
    op.drop_table("login_failures")
    op.drop_table("api_keys")
    op.drop_table("study_collaborators")
    with op.batch_alter_table("studies", schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f("fk_studies_owner_id_researchers"), type_="foreignkey")
        batch_op.drop_index(batch_op.f("ix_studies_owner_id"))
        batch_op.drop_column("owner_id")
    with op.batch_alter_table("researchers", schema=None) as batch_op:
        batch_op.drop_column("session_version")
        batch_op.drop_column("disabled_at")
        batch_op.drop_column("role")
