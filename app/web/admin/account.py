"""The researcher's own account: change the password, create and revoke API keys.

A new key is shown once, on the page that answers its creation (``no-store``), and never put in
the session cookie or a flash message; only its SHA-256 is stored (``app/researchers/keys.py``).
A researcher sees and revokes only their own keys: any other key's prefix is a 404. A wrong
current password counts as a failed login (``app/researchers/throttle.py``).
"""

from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for

from app.db import begin_write, get_session
from app.documents.text import storable
from app.errors import MarginaliaError
from app.models import ApiKey, Researcher
from app.researchers import accounts as auth
from app.researchers import keys, throttle
from app.web.admin.blueprint import bp
from app.web.admin.session_pages import THROTTLED


def _page(*, new_key: str | None = None, error: str | None = None, status: int = 200):
    me = auth.current_researcher()
    own_keys = keys.list_keys(get_session(), me.email)
    page = render_template(
        "admin/account.html", researcher=me, keys=own_keys, new_key=new_key, error=error
    )
    get_session().rollback()
    return page, status


@bp.get("/account")
@auth.login_required
def account():
    return _page()


@bp.post("/account/keys")
@auth.login_required
def create_key():
    label = request.form.get("label", "").strip()
    if not storable(label):
        return _page(error="The label cannot be stored (control characters).", status=400)
    db = begin_write(get_session())
    try:
        _row, key = keys.create_key(db, auth.current_researcher().email, label)
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return _page(error=f"{str(exc)[:1].upper()}{str(exc)[1:]}.", status=exc.status)
    page, status = _page(new_key=key, status=201)
    return page, status, {"Cache-Control": "no-store"}


@bp.post("/account/keys/<prefix>/revoke")
@auth.login_required
def revoke_key(prefix: str):
    db = begin_write(get_session())
    row = db.query(ApiKey).filter(ApiKey.prefix == prefix).one_or_none()
    if row is None or row.researcher_id != auth.current_researcher().id:
        db.rollback()
        abort(404)
    keys.revoke_key(db, prefix)
    db.commit()
    flash(f"Key {prefix} revoked: scripts using it are refused from now on.", "ok")
    return redirect(url_for("admin.account") + "#keys")


@bp.post("/account/password")
@auth.login_required
def change_password():
    me = auth.current_researcher()
    current = request.form.get("current", "")
    new, again = request.form.get("new", ""), request.form.get("again", "")
    client = request.remote_addr or "unknown"
    db = get_session()
    attempt = throttle.attempt(db, me.email, client)  # counted before the check
    if attempt is None:
        return _page(error=THROTTLED, status=429)
    right = storable(current) and storable(new)
    right = right and auth.authenticate(db, me.email, current) is not None
    db.rollback()
    if not right:  # the attempt stays counted as a failure
        return _page(error="The current password is wrong; nothing changed.", status=400)
    db = begin_write(db)
    throttle.succeeded(db, attempt)
    db.commit()
    if new != again:
        return _page(error="The two new passwords differ; nothing changed.", status=400)
    db = begin_write(db)
    try:
        auth.set_password(db, me.email, new)  # ends every other session
        db.commit()
    except MarginaliaError as exc:
        db.rollback()
        return _page(error=f"{str(exc)[:1].upper()}{str(exc)[1:]}; nothing changed.", status=400)
    auth.log_in(db.get(Researcher, me.id))  # this browser stays logged in
    db.rollback()
    flash("Password changed. Every other session of this account has ended.", "ok")
    return redirect(url_for("admin.account"))
