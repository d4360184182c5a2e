"""Authorization matrix: every ``/api/v1`` route x every kind of caller, with the expected status class.

Callers (built through the services): ``anonymous`` (no token, no cookie), ``guest`` (platform guest, no role in ``proj``),
``viewer`` (viewer of ``proj``), ``other`` (member of project ``other`` only), ``member`` (member of ``proj``,
owns the target job and token), ``padmin`` (admin of ``proj``), ``admin`` (platform admin).

A redirect (3xx) counts as allowed (``OK``): the OIDC routes answer browsers with redirects. OIDC is pointed at
the real test provider (tests/oidc_provider.py) and self sign-up is on, so that the routes open to anonymous
callers (sign-in, sign-up) show ``OK`` in the anonymous column.

``TABLE`` must name exactly the routes the app has: a new route without a row fails
``test_table_covers_every_route``. Each cell runs against its own fresh target where the request changes
state (a new job to cancel, a new user to add, a new token to revoke), and a refused request writes nothing
(the operation log does not grow).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable
from urllib.parse import urlsplit

import httpx
import pytest
from fastapi.routing import APIRoute
from sqlalchemy import func
from sqlmodel import select

from crater_app.api.app import API_PREFIX, build_api
from crater_app.db.models import Job, OperationLog
from crater_app.services import approvals, console_sessions, identity, jobs, projects, sign_in, tokens, users
from tests.conftest import USER_PASSWORD
from tests.sessions import session_secret
from tests.oidc_provider import oidc_settings, provider  # noqa: F401 - fixture

ACTORS = ("anonymous", "guest", "viewer", "other", "member", "padmin", "admin")
LOGIN = {"anonymous": None, "guest": "gus", "viewer": "vera", "other": "bob", "member": "alice", "padmin": "pat",
         "admin": "admin"}
OK = "2xx"


@dataclass
class Matrix:
    """The world of the matrix: the API client, the service context, the caller tokens, and fresh targets."""

    api: object
    job_id: int = 0
    approval_id: int = 0
    counter: itertools.count = field(default_factory=itertools.count)

    @property
    def ctx(self):
        return self.api.world.ctx

    def actor(self, login: str):
        return identity.authenticate(self.ctx, self.api.world.tokens[login])

    def fresh_name(self, prefix: str) -> str:
        return f"{prefix}-{next(self.counter)}"

    def fresh_job(self) -> int:
        return jobs.submit_job(self.ctx, self.actor("alice"), {"name": self.fresh_name("job"), "project": "proj",
                                                               "command": ["true"]}).id

    def with_manifest(self) -> str:
        """The manifest path of the target job, its backend keeping an object for it (as the Kubernetes one does)."""
        with self.ctx.session(read_only=True) as s:
            uid = s.get(Job, self.job_id).uid
        self.ctx.backend.keep_manifests(uid, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": uid}}])
        return f"{P}/jobs/{self.job_id}/manifest"

    def fresh_user(self) -> str:
        name = self.fresh_name("user")
        users.create_user(self.ctx, self.api.world.admin, name, USER_PASSWORD)
        return name

    def fresh_member(self) -> str:
        name = self.fresh_user()  # also a member of 'default', its default project
        projects.set_member(self.ctx, self.api.world.admin, "proj", name, "member")
        return name

    def fresh_token(self) -> int:
        return tokens.create_token(self.ctx, self.actor("alice"), self.fresh_name("token")).id

    def fresh_approval(self) -> int:
        """A pending reclaim-lock request by alice (member of ``proj``) for a fresh job of hers."""
        return approvals.create_request(self.ctx, self.actor("alice"), "reclaim_lock", "a long run",
                                        job_id=self.fresh_job()).id

    def fresh_login(self, who: str) -> dict[str, str]:
        """The ``Authorization`` header of a new account of ``who``'s platform role (none for ``anonymous``): for the
        cells whose request ends the caller's sign-ins (a password change, sign out everywhere)."""
        if LOGIN[who] is None:
            return {}
        name = self.fresh_name("self")
        role = {"guest": "guest", "admin": "admin"}.get(who, "user")
        users.create_user(self.ctx, self.api.world.admin, name, USER_PASSWORD, role)
        return {"Authorization": f"Bearer {sign_in.login(self.ctx, name, USER_PASSWORD).access_token}"}

    def fresh_session(self) -> int:
        """The id of a new console session of alice (the ``member``)."""
        secret = session_secret(self.ctx, "alice")
        return next(x.id for x in console_sessions.list_sessions(self.ctx, self.actor("alice"), secret) if x.current)

    def fresh_code(self) -> str:
        """A one-time sign-in code of alice."""
        return sign_in.password_sign_in_code(self.ctx, "alice", USER_PASSWORD)

    def oidc_callback(self) -> tuple[str, None, dict]:
        """A provider's genuine answer to a sign-in started now: the callback path and the browser's cookie."""
        start = self.api.client.get(f"{P}/auth/oidc/login", follow_redirects=False)
        cookie = start.cookies.get("crater_oidc") or start.headers["set-cookie"].split(";")[0].split("=", 1)[1]
        self.api.client.cookies.clear()
        answer = httpx.get(start.headers["location"], follow_redirects=False, timeout=10)
        back = urlsplit(answer.headers["location"])
        return f"{back.path}?{back.query}", None, {"Cookie": f"crater_oidc={cookie}"}


# A request: (path, json body or None[, extra headers]) built for the calling actor's cell.
Build = Callable[[Matrix, str], tuple]


def fixed(path: str, body: object = None) -> Build:
    return lambda m, who: (path, body)


P = API_PREFIX
#                                                                anonymous guest viewer other member padmin admin
TABLE: dict[tuple[str, str], tuple[Build, tuple]] = {
    ("POST", f"{P}/auth/token"): (fixed(f"{P}/auth/token", {"username": "alice", "password": USER_PASSWORD}),
                                  (OK, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/me"): (fixed(f"{P}/me"), (401, OK, OK, OK, OK, OK, OK)),
    ("POST", f"{P}/users"): (lambda m, who: (f"{P}/users", {"username": m.fresh_name("new"), "password": USER_PASSWORD}),
                             (401, 403, 403, 403, 403, 403, OK)),
    ("GET", f"{P}/users"): (fixed(f"{P}/users"), (401, 403, 403, 403, 403, 403, OK)),
    # Outsiders (the guest and the member of another project) learn nothing about 'proj': 404 as for no project.
    ("POST", f"{P}/jobs"): (fixed(f"{P}/jobs", {"name": "m", "project": "proj", "command": ["true"]}),
                            (401, 404, 403, 404, OK, OK, OK)),
    ("GET", f"{P}/jobs"): (fixed(f"{P}/jobs"), (401, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/jobs/{{id}}"): (lambda m, who: (f"{P}/jobs/{m.job_id}", None),
                                      (401, 404, OK, 404, OK, OK, OK)),
    ("DELETE", f"{P}/jobs/{{id}}"): (lambda m, who: (f"{P}/jobs/{m.fresh_job()}", None),
                                         (401, 404, 403, 404, OK, OK, OK)),
    ("POST", f"{P}/jobs/{{id}}/resubmit"): (lambda m, who: (f"{P}/jobs/{m.job_id}/resubmit", None),
                                                (401, 404, 403, 404, OK, OK, OK)),
    ("GET", f"{P}/jobs/{{id}}/logs"): (lambda m, who: (f"{P}/jobs/{m.job_id}/logs", None),
                                           (401, 404, OK, 404, OK, OK, OK)),
    ("GET", f"{P}/jobs/{{id}}/events"): (lambda m, who: (f"{P}/jobs/{m.job_id}/events", None),
                                             (401, 404, OK, 404, OK, OK, OK)),
    ("GET", f"{P}/jobs/{{id}}/replicas"): (lambda m, who: (f"{P}/jobs/{m.job_id}/replicas", None),
                                               (401, 404, OK, 404, OK, OK, OK)),
    ("GET", f"{P}/jobs/{{id}}/manifest"): (lambda m, who: (m.with_manifest(), None),
                                               (401, 404, OK, 404, OK, OK, OK)),
    ("GET", f"{P}/nodes"): (fixed(f"{P}/nodes"), (401, OK, OK, OK, OK, OK, OK)),
    ("POST", f"{P}/projects"): (lambda m, who: (f"{P}/projects", {"name": m.fresh_name("p")}),
                                (401, 403, 403, 403, 403, 403, OK)),
    ("GET", f"{P}/projects"): (fixed(f"{P}/projects"), (401, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/projects/{{name}}"): (fixed(f"{P}/projects/proj"), (401, 404, OK, 404, OK, OK, OK)),
    ("PUT", f"{P}/projects/{{name}}/members/{{username}}"): (
        lambda m, who: (f"{P}/projects/proj/members/{m.fresh_user()}", {"role": "member"}),
        (401, 404, 403, 404, 403, OK, OK)),
    ("PUT", f"{P}/projects/{{name}}/quota"): (fixed(f"{P}/projects/proj/quota", {"capability": {"nvidia.com/gpu": 8}}),
                                              (401, 404, 403, 404, 403, 403, OK)),
    ("GET", f"{P}/projects/{{name}}/quota"): (fixed(f"{P}/projects/proj/quota"), (401, 404, OK, 404, OK, OK, OK)),
    ("DELETE", f"{P}/projects/{{name}}/members/{{username}}"): (
        lambda m, who: (f"{P}/projects/proj/members/{m.fresh_member()}", None),
        (401, 404, 403, 404, 403, OK, OK)),
    ("POST", f"{P}/tokens"): (lambda m, who: (f"{P}/tokens", {"name": m.fresh_name("t")}),
                              (401, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/tokens"): (fixed(f"{P}/tokens"), (401, OK, OK, OK, OK, OK, OK)),
    ("DELETE", f"{P}/tokens/{{id}}"): (lambda m, who: (f"{P}/tokens/{m.fresh_token()}", None),
                                             (401, 404, 404, 404, OK, 404, OK)),
    ("GET", f"{P}/operation-logs"): (fixed(f"{P}/operation-logs"), (401, 403, 403, 403, 403, 403, OK)),
    # Approvals: alice (member) asks about her own jobs; project admins decide their project's requests.
    ("POST", f"{P}/approvals"): (
        lambda m, who: (f"{P}/approvals", {"kind": "reclaim_lock", "reason": "a long run", "job_id": m.fresh_job()}),
        (401, 404, 403, 404, OK, OK, OK)),
    ("GET", f"{P}/approvals"): (fixed(f"{P}/approvals"), (401, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/approvals/{{id}}"): (lambda m, who: (f"{P}/approvals/{m.approval_id}", None),
                                                (401, 404, 404, 404, OK, OK, OK)),
    ("POST", f"{P}/approvals/{{id}}/approve"): (
        lambda m, who: (f"{P}/approvals/{m.fresh_approval()}/approve", {"note": "ok"}),
        (401, 404, 404, 404, 403, OK, OK)),
    ("POST", f"{P}/approvals/{{id}}/reject"): (
        lambda m, who: (f"{P}/approvals/{m.fresh_approval()}/reject", {"note": "no"}),
        (401, 404, 404, 404, 403, OK, OK)),
    ("GET", f"{P}/notifications"): (fixed(f"{P}/notifications"), (401, OK, OK, OK, OK, OK, OK)),
    ("POST", f"{P}/notifications/read"): (fixed(f"{P}/notifications/read", {}), (401, OK, OK, OK, OK, OK, OK)),
    # Usage and billing: everyone signed in reads usage (own / their projects' / all) and their balance.
    ("GET", f"{P}/usage"): (fixed(f"{P}/usage?group_by=user"), (401, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/billing/prices"): (fixed(f"{P}/billing/prices"), (401, OK, OK, OK, OK, OK, OK)),
    ("PUT", f"{P}/billing/prices"): (fixed(f"{P}/billing/prices", [{"resource": "nvidia.com/gpu", "points_per_hour": 10}]),
                                     (401, 403, 403, 403, 403, 403, OK)),
    ("GET", f"{P}/billing/balance"): (fixed(f"{P}/billing/balance"), (401, OK, OK, OK, OK, OK, OK)),
    ("POST", f"{P}/billing/grants"): (fixed(f"{P}/billing/grants", {"username": "alice", "points": 5, "note": "m"}),
                                      (401, 403, 403, 403, 403, 403, OK)),
    ("PUT", f"{P}/projects/{{name}}/billing"): (fixed(f"{P}/projects/proj/billing", {"member_allowance_points": 50}),
                                                (401, 404, 403, 404, 403, 403, OK)),
    # Sign-in with OIDC and self sign-up are open to everyone, signed in or not (the token is not looked at).
    ("GET", f"{P}/auth/oidc/login"): (fixed(f"{P}/auth/oidc/login"), (OK, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/auth/oidc/callback"): (lambda m, who: m.oidc_callback(), (OK, OK, OK, OK, OK, OK, OK)),
    ("POST", f"{P}/auth/signup"): (lambda m, who: (f"{P}/auth/signup", {"username": m.fresh_name("signup"),
                                                                        "password": USER_PASSWORD}),
                                   (OK, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/users/{{username}}"): (fixed(f"{P}/users/alice"), (401, 403, 403, 403, 403, 403, OK)),
    ("PATCH", f"{P}/users/{{username}}"): (lambda m, who: (f"{P}/users/{m.fresh_user()}", {"max_sessions": 2}),
                                           (401, 403, 403, 403, 403, 403, OK)),
    # Console sessions: the cookie's round trips are open to every browser of this site (the code or the cookie
    # decides, never the token); a session is its owner's; a password is one's own, or reset by a platform admin.
    ("POST", f"{P}/auth/session"): (lambda m, who: (f"{P}/auth/session", {"code": m.fresh_code()}, SAME_SITE),
                                    (OK, OK, OK, OK, OK, OK, OK)),
    ("DELETE", f"{P}/auth/session"): (lambda m, who: (f"{P}/auth/session", None, SAME_SITE),
                                      (OK, OK, OK, OK, OK, OK, OK)),
    ("GET", f"{P}/auth/sessions"): (fixed(f"{P}/auth/sessions"), (401, OK, OK, OK, OK, OK, OK)),
    ("DELETE", f"{P}/auth/sessions"): (lambda m, who: (f"{P}/auth/sessions", None, m.fresh_login(who)),
                                       (401, OK, OK, OK, OK, OK, OK)),
    ("DELETE", f"{P}/auth/sessions/{{id}}"): (
        lambda m, who: (f"{P}/auth/sessions/{m.fresh_session()}", None), (401, 404, 404, 404, OK, 404, 404)),
    ("POST", f"{P}/me/password"): (
        lambda m, who: (f"{P}/me/password", {"current_password": USER_PASSWORD, "new_password": "changed-password-1"},
                        m.fresh_login(who)), (401, OK, OK, OK, OK, OK, OK)),
    ("PUT", f"{P}/users/{{username}}/password"): (
        lambda m, who: (f"{P}/users/{m.fresh_user()}/password", {"new_password": "changed-password-1"}),
        (401, 403, 403, 403, 403, 403, OK)),
}
#: the Origin of a browser on the test client's own site (cookie writes must come from it)
SAME_SITE = {"Origin": "http://testserver"}


def api_routes() -> set[tuple[str, str]]:
    """(method, path) of every API route of the app: ``/api/v1`` paths, without OpenAPI/docs and the catch-all."""
    app = build_api(lambda: None)
    found = set()
    for route in app.routes:
        path = getattr(route, "path", "")
        if not path.startswith(API_PREFIX) or not isinstance(route, APIRoute):  # docs/openapi are plain Routes
            continue
        if path == f"{API_PREFIX}/{{path:path}}":  # the JSON 404 for unknown paths
            continue
        found |= {(method, path) for method in route.methods if method != "HEAD"}
    return found


def test_table_covers_every_route():
    routes = api_routes()
    missing = sorted(routes - set(TABLE))
    stale = sorted(set(TABLE) - routes)
    assert not missing, f"routes without a row in the authorization matrix: {missing}"
    assert not stale, f"rows for routes that do not exist: {stale}"
    for key, (_, expected) in TABLE.items():
        assert len(expected) == len(ACTORS), key


@pytest.fixture
def matrix(api, provider) -> Matrix:  # noqa: F811
    ctx, admin = api.world.ctx, api.world.admin
    ctx.settings = oidc_settings(ctx.settings, provider, signup_enabled=True)
    for name in ("pat", "vera"):
        users.create_user(ctx, admin, name, USER_PASSWORD)
        api.world.tokens[name] = sign_in.login(ctx, name, USER_PASSWORD).access_token
    projects.create_project(ctx, admin, "proj", "Project under test")
    projects.create_project(ctx, admin, "other", "Someone else's project")
    for project, username, role in (("proj", "alice", "member"), ("proj", "pat", "admin"), ("proj", "vera", "viewer"),
                                    ("other", "bob", "member")):
        projects.set_member(ctx, admin, project, username, role)
    m = Matrix(api)
    m.job_id = m.fresh_job()
    m.approval_id = m.fresh_approval()
    return m


def _oplog_rows(ctx) -> int:
    with ctx.session(read_only=True) as s:
        return s.exec(select(func.count()).select_from(OperationLog)).one()


def test_authorization_matrix(matrix):
    client = matrix.api.client
    wrong = []
    for (method, route), (build, expected) in TABLE.items():
        for who, want in zip(ACTORS, expected):
            path, body, *extra = build(matrix, who)
            login = LOGIN[who]
            headers = {"Authorization": f"Bearer {matrix.api.world.tokens[login]}"} if login else {}
            headers.update(extra[0] if extra else {})
            before = _oplog_rows(matrix.ctx)
            client.cookies.clear()  # a cookie an earlier answer set (a sign-in) would make 'anonymous' someone
            r = client.request(method, path, headers=headers, json=body, follow_redirects=False)
            got_class = OK if 200 <= r.status_code < 400 else r.status_code
            if got_class != want:
                wrong.append(f"{method} {route} as {who}: expected {want}, got {r.status_code} {r.text[:160]}")
            elif want != OK:
                assert r.json()["error"]["kind"] in {"unauthenticated", "forbidden", "not_found"}, r.text
                if _oplog_rows(matrix.ctx) != before:
                    wrong.append(f"{method} {route} as {who}: refused ({r.status_code}) but wrote an operation-log row")
    assert not wrong, "authorization matrix mismatches:\n" + "\n".join(wrong)
