"""Login and logout. Failed logins are throttled per account and per client, counted in the
database so every process sees them (``app/researchers/throttle.py``); logout ends every copy
of the session cookie."""

from __future__ import annotations

from flask import (
    redirect,
    render_template,
    request,
    url_for,
)

from app.db import begin_write, get_session
from app.documents.text import storable
from app.models import Researcher, utcnow
from app.researchers import accounts as auth
from app.researchers import throttle
from app.web.admin.blueprint import bp, safe_next

THROTTLED = "Too many failed logins for this account or from this address; wait a minute."


@bp.route("/login", methods=["GET", "POST"])
def login():
    error = None
    if request.method == "POST":
        email = request.form.get("email", "")
        password = request.form.get("password", "")
        if not (storable(email) and storable(password)):
            email, password = "", ""  # no database can store it: a plain failure
        client = request.remote_addr or "unknown"
        db = get_session()
        attempt = throttle.attempt(db, email, client)  # counted before the check
        if attempt is None:
            return render_template("admin/login.html", error=THROTTLED), 429
        researcher = auth.authenticate(db, email, password)
        researcher_id = researcher.id if researcher is not None else None
        db.rollback()
        if researcher_id is not None:
            db = begin_write(db)
            throttle.succeeded(db, attempt)
            researcher = db.get(Researcher, researcher_id)
            researcher.last_login_at = utcnow()
            db.commit()
            auth.log_in(researcher)
            return redirect(safe_next(request.args.get("next")))
        error = "Wrong e-mail or password."  # the attempt stays counted as a failure
    return render_template("admin/login.html", error=error), 401 if error else 200


@bp.post("/logout")
def logout():
    researcher = auth.current_researcher()
    if researcher is not None:
        db = begin_write(get_session())
        auth.log_out(db.get(Researcher, researcher.id))
        db.commit()
    else:
        auth.log_out(None)
    return redirect(url_for("admin.login"))
