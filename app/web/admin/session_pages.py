"""Login and logout (throttled; the session cookie is the researcher's only credential)."""

from __future__ import annotations

from flask import (
    redirect,
    render_template,
    request,
    url_for,
)

from app.db import get_session
from app.researchers import accounts as auth
from app.web.admin.blueprint import bp, safe_next
from app.web.limits import limiter


@bp.route("/login", methods=["GET", "POST"])
@limiter.limit("10 per minute; 50 per hour", methods=["POST"])
def login():
    error = None
    if request.method == "POST":
        db = get_session()
        researcher = auth.authenticate(
            db, request.form.get("email", ""), request.form.get("password", "")
        )
        if researcher is not None:
            db.commit()
            auth.log_in(researcher)
            return redirect(safe_next(request.args.get("next")))
        error = "Wrong e-mail or password."
    return render_template("admin/login.html", error=error), 401 if error else 200


@bp.post("/logout")
def logout():
    auth.log_out()
    return redirect(url_for("admin.login"))
