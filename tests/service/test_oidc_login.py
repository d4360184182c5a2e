"""OIDC sign-in against a real OpenID provider on 127.0.0.1 (tests/oidc_provider.py): accounts, group mapping,
and every refusal (state, replayed code, expired/tampered/foreign ID token, IdP error, disabled account)."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.auth.oidc import OidcError
from crater_app.db.models import ApiToken, OperationLog, Project, ProjectMember, User
from crater_app.domain.errors import Unauthenticated
from crater_app.services import console_sessions, identity, oidc_login, projects, users
from tests.sessions import tab_credentials
from tests.oidc_provider import oidc_settings, provider  # noqa: F401 - fixture

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


@pytest.fixture
def sso(world, provider):  # noqa: F811
    ctx = world.ctx
    ctx.settings = oidc_settings(ctx.settings, provider)
    projects.create_project(ctx, world.admin, "ml", "ML")
    projects.create_project(ctx, world.admin, "vision", "Vision")
    return world


def authorize(url: str) -> dict[str, str]:
    """Follow the browser's way to the provider; return the query Crater's callback would get."""
    r = httpx.get(url, follow_redirects=False, timeout=10)
    assert r.status_code == 302, r.text
    location = r.headers["location"]
    assert location.startswith("http://testserver/api/v1/auth/oidc/callback?"), location
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def rows(ctx, model, *where) -> int:
    with ctx.session(read_only=True) as s:
        return s.exec(select(func.count()).select_from(model).where(*where)).one()


def snapshot(ctx) -> dict:
    return {"users": rows(ctx, User), "tokens": rows(ctx, ApiToken), "members": rows(ctx, ProjectMember)}


def refused(ctx, sealed, params) -> OidcError:
    """Complete a sign-in that must fail; assert it changed no user, token or membership; return the error."""
    before = snapshot(ctx)
    with pytest.raises(OidcError) as exc:
        oidc_login.complete(ctx, sealed, params)
    assert snapshot(ctx) == before
    return exc.value


def project_id(ctx, name: str) -> int:
    with ctx.session(read_only=True) as s:
        return s.exec(select(Project.id).where(Project.name == name)).one()


def last_log(ctx) -> OperationLog:
    with ctx.session(read_only=True) as s:
        return s.exec(select(OperationLog).order_by(OperationLog.id.desc())).first()


def test_first_login_creates_active_user_with_mapped_projects(sso, provider):  # noqa: F811
    ctx = sso.ctx
    provider.user.groups = ["ml-team", "vision", "ghost", "unmapped"]
    url, sealed = oidc_login.start(ctx, next_path="/jobs?phase=Running")
    query = parse_qs(urlsplit(url).query)
    assert query["code_challenge_method"] == ["S256"] and query["response_type"] == ["code"]
    assert query["nonce"][0] and query["state"][0] and query["client_id"] == ["crater"]
    done = oidc_login.complete(ctx, sealed, authorize(url))
    assert done.username == "Zhang.San" and done.next_path == "/jobs?phase=Running"  # the claim, kept as it is
    with ctx.session(read_only=True) as s:
        user = s.exec(select(User).where(User.username == "Zhang.San")).one()
        assert (user.status, user.role, user.email, user.display_name) == ("active", "user", "zhang.san@example.org",
                                                                            "Zhang San")
        assert (user.oidc_issuer, user.oidc_subject, user.password_hash) == (provider.issuer, "u-1001", None)
    secret, username, _ = console_sessions.start_from_code(ctx, done.code, method="oidc")
    actor = identity.resolve(ctx, tab_credentials(ctx, secret))
    roles = {project_id(ctx, "ml"): "member", project_id(ctx, "vision"): "viewer"}
    assert username == "Zhang.San" and {p: r for p, r in actor.project_roles.items() if p in roles} == roles
    log = last_log(ctx)
    assert (log.action, log.code, log.args["method"]) == ("auth:login", "auth.console_login", "oidc")
    with ctx.session(read_only=True) as s:
        oidc_row = s.exec(select(OperationLog).where(OperationLog.action == "auth:oidc")).one()
    assert oidc_row.result == "ok" and oidc_row.code == "auth.oidc_signed_in_new"
    assert sorted(oidc_row.args["groups"]) == ["ml: none -> member", "no-such-project: ? (ghost)",
                                               "vision: none -> viewer"]
    assert "no-such-project" in oidc_row.details
    assert (oidc_row.actor, oidc_row.actor_role) == ("Zhang.San", "user")
    # the one-time code is single use and never a bearer token
    with pytest.raises(Unauthenticated) as exc:
        console_sessions.start_from_code(ctx, done.code)
    assert exc.value.code == "auth.code_used" and "already used" in exc.value.message
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, done.code)


def test_later_login_same_account_groups_follow_the_provider(sso, provider):  # noqa: F811
    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    first = oidc_login.complete(ctx, sealed, authorize(url))
    provider.user.groups = ["ml-leads", "ml-team"]  # strongest role wins; 'vision' not held
    provider.user.email = "new@example.org"
    url, sealed = oidc_login.start(ctx)
    second = oidc_login.complete(ctx, sealed, authorize(url))
    assert second.username == first.username
    ml = project_id(ctx, "ml")
    with ctx.session(read_only=True) as s:
        user = s.exec(select(User).where(User.username == first.username)).one()
        members = {m.project_id: m.role for m in s.exec(select(ProjectMember).where(ProjectMember.user_id == user.id))}
    assert members[ml] == "admin" and user.email == "new@example.org"
    provider.user.groups = []  # left every group: memberships in mapped projects go, 'default' stays
    url, sealed = oidc_login.start(ctx)
    oidc_login.complete(ctx, sealed, authorize(url))
    with ctx.session(read_only=True) as s:
        members = {m.project_id for m in s.exec(select(ProjectMember).where(ProjectMember.user_id == user.id))}
    assert members == {user.default_project_id}


def test_claims_no_column_can_store_are_dropped(sso, provider):  # noqa: F811
    """A name or e-mail claim with a NUL (PostgreSQL text refuses it) signs in without them, not with a 500."""
    ctx = sso.ctx
    provider.user.name = "Zhang\x00San"
    provider.user.email = "zhang\x00san@example.org"
    url, sealed = oidc_login.start(ctx)
    done = oidc_login.complete(ctx, sealed, authorize(url))
    with ctx.session(read_only=True) as s:
        user = s.exec(select(User).where(User.username == done.username)).one()
    assert (user.display_name, user.email) == ("", "")


def test_username_collision_gets_a_suffix_and_never_links_local_account(sso, provider):  # noqa: F811
    ctx = sso.ctx
    provider.user.preferred_username = "Alice"  # a local account's name, by key
    url, sealed = oidc_login.start(ctx)
    done = oidc_login.complete(ctx, sealed, authorize(url))
    assert done.username == "Alice-2"
    with ctx.session(read_only=True) as s:
        local = s.exec(select(User).where(User.username == "alice")).one()
    assert local.oidc_subject is None, "never linked"


def test_a_name_that_looks_like_an_account_gets_a_suffix_too(sso, provider):  # noqa: F811
    """'аlice' with a Cyrillic а cannot be told from the local 'alice': the new account is 'аlice-2'."""
    ctx = sso.ctx
    provider.user.preferred_username = "\u0430lice"
    url, sealed = oidc_login.start(ctx)
    assert oidc_login.complete(ctx, sealed, authorize(url)).username == "\u0430lice-2"


@pytest.mark.parametrize(("claim", "email", "username"), [
    ("\u5f20\u4e09", "z@example.org", "\u5f20\u4e09"),  # 张三: a name people have, kept
    ("zhang.san@corp.example", "x@example.org", "zhang.san@corp.example"),
    ("Zhang San", "x@example.org", "Zhang-San"),  # not a name: derived
    ("", "zhang.san@example.org", "zhang.san@example.org"),  # no user name claim: the e-mail
    ("***", "", "user"),
    ("system", "", "user"),
])
def test_user_name_from_the_claims(sso, provider, claim, email, username):  # noqa: F811
    ctx = sso.ctx
    provider.user.preferred_username = claim
    provider.user.email = email
    url, sealed = oidc_login.start(ctx)
    assert oidc_login.complete(ctx, sealed, authorize(url)).username == username


@pytest.mark.parametrize("case", ["wrong_state", "no_cookie", "tampered_cookie", "idp_error", "replayed_code",
                                  "expired_token", "wrong_audience", "bad_signature", "wrong_issuer"])
def test_refusals_write_only_an_error_log_row(sso, provider, case):  # noqa: F811
    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    if case == "replayed_code":
        params = authorize(url)
        oidc_login.complete(ctx, sealed, params)
        url2, sealed = oidc_login.start(ctx)  # a fresh browser sign-in, replaying the old code with its own state
        params = {"code": params["code"], "state": parse_qs(urlsplit(url2).query)["state"][0]}
    else:
        provider.deny = case == "idp_error"
        provider.expired = case == "expired_token"
        provider.audience = "someone-else" if case == "wrong_audience" else None
        provider.tamper = case == "bad_signature"
        provider.issuer_claim = "https://evil.example" if case == "wrong_issuer" else None
        params = authorize(url)
    if case == "wrong_state":
        params["state"] = "not-the-state"
    if case == "no_cookie":
        sealed = None
    if case == "tampered_cookie":
        sealed = sealed[:-3] + ("AAA" if not sealed.endswith("AAA") else "BBB")
    error = refused(ctx, sealed, params)
    expected = {"wrong_state": ("state", "state mismatch"), "no_cookie": ("state", "cookie is missing"),
                "tampered_cookie": ("state", "not valid"), "idp_error": ("idp", "access_denied"),
                "replayed_code": ("exchange", "invalid_grant"), "expired_token": ("id_token", "expired"),
                "wrong_audience": ("id_token", "not meant for this client"),
                "bad_signature": ("id_token", "signature"), "wrong_issuer": ("id_token", "not issued by")}[case]
    assert error.reason == expected[0] and expected[1] in error.message, error.message
    assert error.http_status == 401
    log = last_log(ctx)
    assert (log.action, log.result) == ("auth:oidc", "error") and expected[0] in log.details


def test_pkce_verifier_is_sent_and_enforced(sso, provider):  # noqa: F811
    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    params = authorize(url)
    challenge = provider.authorize_requests[-1]["code_challenge"]
    provider.codes[params["code"]].code_challenge = challenge[::-1]  # the provider now expects another verifier
    with pytest.raises(OidcError) as exc:
        oidc_login.complete(ctx, sealed, params)
    assert exc.value.reason == "exchange" and "invalid_grant" in exc.value.message
    url, sealed = oidc_login.start(ctx)
    oidc_login.complete(ctx, sealed, authorize(url))
    from authlib.oauth2.rfc7636 import create_s256_code_challenge

    sent = provider.token_requests[-1]
    assert create_s256_code_challenge(sent["code_verifier"]) == provider.authorize_requests[-1]["code_challenge"]


def test_provider_key_rotation_refetches_jwks(sso, provider, monkeypatch):  # noqa: F811
    from joserfc.jwk import RSAKey

    from crater_app.auth import oidc_provider

    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    oidc_login.complete(ctx, sealed, authorize(url))  # JWKS now cached
    provider.key = RSAKey.generate_key(2048, parameters={"kid": "test-key-2", "use": "sig", "alg": "RS256"})
    url, sealed = oidc_login.start(ctx)
    with pytest.raises(OidcError) as exc:  # refetched less than 30 s ago: the unknown key id is refused
        oidc_login.complete(ctx, sealed, authorize(url))
    assert exc.value.reason == "id_token" and "InvalidKeyIdError" in exc.value.message
    monkeypatch.setattr(oidc_provider, "JWKS_MIN_REFETCH_S", 0.0)  # ...and later the rotated key is fetched and accepted
    url, sealed = oidc_login.start(ctx)
    assert oidc_login.complete(ctx, sealed, authorize(url)).username == "Zhang.San"


def test_claims_from_userinfo_when_not_in_id_token(sso, provider):  # noqa: F811
    ctx = sso.ctx
    provider.claims_in_id_token = False
    url, sealed = oidc_login.start(ctx)
    done = oidc_login.complete(ctx, sealed, authorize(url))
    assert done.username == "Zhang.San" and provider.userinfo_requests == 1
    with ctx.session(read_only=True) as s:
        user = s.exec(select(User).where(User.username == "Zhang.San")).one()
        ml = s.exec(select(ProjectMember).where(ProjectMember.user_id == user.id,
                                                ProjectMember.project_id == project_id(ctx, "ml"))).one()
    assert user.email == "zhang.san@example.org" and ml.role == "member"
    provider.claims_in_id_token = True  # everything in the ID token: UserInfo is not asked
    url, sealed = oidc_login.start(ctx)
    oidc_login.complete(ctx, sealed, authorize(url))
    assert provider.userinfo_requests == 1


def test_userinfo_about_someone_else_is_refused(sso, provider):  # noqa: F811
    ctx = sso.ctx
    provider.claims_in_id_token = False
    provider.userinfo_sub = "u-9999"
    url, sealed = oidc_login.start(ctx)
    error = refused(ctx, sealed, authorize(url))
    assert error.reason == "claims" and "sub differs" in error.message


@pytest.mark.both_databases
def test_concurrent_first_sign_ins_make_one_account(sso, provider):  # noqa: F811
    """Eight sign-ins of the same new person at once (eight browser tabs): one account, eight codes."""
    from concurrent.futures import ThreadPoolExecutor

    ctx = sso.ctx
    started = [oidc_login.start(ctx) for _ in range(8)]
    answers = [(sealed, authorize(url)) for url, sealed in started]
    with ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda a: oidc_login.complete(ctx, *a), answers))
    assert {d.username for d in done} == {"Zhang.San"} and len({d.code for d in done}) == 8
    assert rows(ctx, User, User.oidc_subject == "u-1001") == 1


def test_callback_from_another_issuer_is_refused(sso, provider):  # noqa: F811
    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    params = authorize(url) | {"iss": "https://other-idp.example"}
    with pytest.raises(OidcError) as exc:
        oidc_login.complete(ctx, sealed, params)
    assert exc.value.reason == "idp" and "other-idp" in exc.value.message
    url, sealed = oidc_login.start(ctx)
    assert oidc_login.complete(ctx, sealed, authorize(url) | {"iss": provider.issuer}).username == "Zhang.San"


def test_same_state_cannot_complete_twice(sso, provider):  # noqa: F811
    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    params = authorize(url)
    oidc_login.complete(ctx, sealed, params)
    with pytest.raises(OidcError) as exc:
        oidc_login.complete(ctx, sealed, params)
    assert exc.value.reason == "state" and "already completed" in exc.value.message


def test_disabled_account_is_refused(sso, provider):  # noqa: F811
    ctx = sso.ctx
    url, sealed = oidc_login.start(ctx)
    done = oidc_login.complete(ctx, sealed, authorize(url))
    users.update_user(ctx, sso.admin, done.username, {"status": "disabled"})
    url, sealed = oidc_login.start(ctx)
    error = refused(ctx, sealed, authorize(url))
    assert error.reason == "account" and error.code == "auth.account_disabled" and "disabled" in error.message


def test_off_and_bad_configuration(world, provider):  # noqa: F811
    ctx = world.ctx
    with pytest.raises(OidcError) as exc:
        oidc_login.start(ctx)
    assert exc.value.reason == "disabled"
    ctx.settings = oidc_settings(ctx.settings, provider, oidc_issuer=provider.issuer + "/other",
                                 oidc_discovery_url=provider.issuer + "/.well-known/openid-configuration")
    with pytest.raises(OidcError) as exc:
        oidc_login.start(ctx)
    assert exc.value.reason == "config" and "issuer" in exc.value.message
    ctx.settings = oidc_settings(ctx.settings, provider, oidc_group_mapping='{"g": {"role": "member"}}')
    url, sealed = oidc_login.start(ctx)
    with pytest.raises(OidcError) as exc:
        oidc_login.complete(ctx, sealed, authorize(url))
    assert exc.value.reason == "config" and "GROUP_MAPPING" in exc.value.message


def test_open_redirect_next_is_dropped(sso, provider):  # noqa: F811
    ctx = sso.ctx
    for bad in ("https://evil.example/", "//evil.example", "/\\evil", 5):
        url, sealed = oidc_login.start(ctx, next_path=bad)
        assert oidc_login.complete(ctx, sealed, authorize(url)).next_path == ""
