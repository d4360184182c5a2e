"""Console sessions against the test database: opened from a one-time code, resolved from the cookie on every
request (any context: tabs, workers, a restart), the Origin rule, idle and absolute expiry on a pinned clock,
sign-out, sign-out everywhere, and the ends a disabled account and a password change or reset bring."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlmodel import select

from crater_app.db.models import ApiToken, ConsoleSession, OperationLog, User
from crater_app.domain import times
from crater_app.domain.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated
from crater_app.services import console_sessions, identity, passwords, sign_in, tokens, users
from crater_app.services.identity import Credentials
from tests.conftest import USER_PASSWORD
from tests.sessions import HOST, ORIGIN, cookie_header, session_secret

T0 = datetime(2026, 3, 1, 8, 0, tzinfo=timezone.utc)
EVIL = "https://evil.example"


@pytest.fixture
def clock():
    """A pinned clock: ``clock.now`` is what ``utcnow()`` answers; ``clock.advance(seconds)`` moves it."""
    class Clock:
        now = T0

        def advance(self, seconds: float) -> None:
            self.now += timedelta(seconds=seconds)

    pinned = Clock()
    times.set_clock(lambda: pinned.now)
    yield pinned
    times.set_clock(None)


def tab(ctx, secret: str, origin: str = ORIGIN, host: str = HOST) -> Credentials:
    """A console tab's credentials (its websocket handshake)."""
    return Credentials(cookie=cookie_header(ctx, secret), origin=origin, host=host, websocket=True)


def http(ctx, secret: str, method: str = "GET", origin: str = "", referer: str = "", host: str = HOST) -> Credentials:
    return Credentials(cookie=cookie_header(ctx, secret), origin=origin, referer=referer, host=host, method=method)


def refused(ctx, credentials: Credentials, code: str) -> None:
    with pytest.raises((Unauthenticated, Forbidden)) as info:
        identity.resolve(ctx, credentials)
    assert info.value.code == code, info.value.message


def session_row(ctx, secret: str) -> ConsoleSession:
    from crater_app.auth.tokens import hash_token

    with ctx.session(read_only=True) as s:
        return s.exec(select(ConsoleSession).where(ConsoleSession.id_hash == hash_token(secret))).one()


def test_a_code_opens_a_session_every_context_resolves(world, make_ctx):
    ctx = world.ctx
    with ctx.session() as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
        code = sign_in.issue_sign_in_code(s, alice.id)
    secret, username, public = console_sessions.start_from_code(ctx, code, "Mozilla/5.0 Firefox/133.0", "10.0.0.7")
    assert username == "alice" and secret.startswith("crs_") and public.current
    row = session_row(ctx, secret)
    assert (row.user_agent, row.ip, row.idle_timeout_s) == ("Mozilla/5.0 Firefox/133.0", "10.0.0.7", 12 * 3600)
    assert row.expires_at - row.created_at == timedelta(days=7) and secret not in row.id_hash
    # Two tabs (same cookie), a second worker and a restarted process (fresh contexts on the same database).
    assert identity.resolve(ctx, tab(ctx, secret)).username == "alice"
    assert identity.resolve(ctx, tab(ctx, secret)).project_roles == world.alice.project_roles
    for other in (make_ctx(data_dir=ctx.settings.data_dir / "worker-2"), make_ctx(data_dir=ctx.settings.data_dir)):
        assert identity.resolve(other, tab(other, secret)).username == "alice"
    with ctx.session(read_only=True) as s:
        login = s.exec(select(OperationLog).where(OperationLog.code == "auth.console_login")).one()
    assert (login.actor, login.action, login.args["method"], login.args["ip"]) == ("alice", "auth:login",
                                                                                   "password", "10.0.0.7")
    # the code was single use; a session secret is no bearer token, nor a code a session
    with pytest.raises(Unauthenticated) as info:
        console_sessions.start_from_code(ctx, code)
    assert info.value.code == "auth.code_used"
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, secret)
    with pytest.raises(Unauthenticated) as info:
        console_sessions.start_from_code(ctx, secret)
    assert info.value.code == "auth.code_unknown"


def test_password_sign_in_code(world):
    code = sign_in.password_sign_in_code(world.ctx, "ALICE", USER_PASSWORD)
    secret, username, _ = console_sessions.start_from_code(world.ctx, code)
    assert username == "alice"
    with pytest.raises(Unauthenticated) as info:
        sign_in.password_sign_in_code(world.ctx, "alice", "wrong-password")
    assert info.value.code == "auth.wrong_credentials"
    with pytest.raises(Unauthenticated):
        identity.authenticate(world.ctx, code), "a sign-in code is no bearer token"
    for bad in (None, "", "x" * 129, 5):
        with pytest.raises(InvalidInput) as info:
            console_sessions.start_from_code(world.ctx, bad)
        assert info.value.field == "code"


def test_sign_in_codes_expire_after_a_minute(world, clock):
    with world.ctx.session() as s:
        alice = s.exec(select(User).where(User.username == "alice")).one()
        code = sign_in.issue_sign_in_code(s, alice.id)
    clock.advance(61)
    with pytest.raises(Unauthenticated) as info:
        console_sessions.start_from_code(world.ctx, code)
    assert info.value.code == "auth.code_used"


def test_no_cookie_or_unknown_cookie(world):
    ctx = world.ctx
    refused(ctx, Credentials(cookie="theme=dark", origin=ORIGIN, host=HOST, websocket=True), "auth.sign_in_required")
    refused(ctx, tab(ctx, "crs_not-a-session"), "auth.session_unknown")
    refused(ctx, Credentials(), "auth.sign_in_required")


@pytest.mark.parametrize(("method", "origin", "referer", "host", "allowed"), [
    ("GET", "", "", HOST, True),  # reads need no origin
    ("HEAD", EVIL, "", HOST, True),
    ("POST", ORIGIN, "", HOST, True),
    ("POST", "http://LOCALHOST:80", "", HOST, True),  # normalised: case and the default port
    ("DELETE", "https://localhost", "", "localhost:443", True),  # TLS ended by a proxy: the host decides
    ("POST", "", f"{ORIGIN}/jobs/new", HOST, True),  # no Origin: the Referer's origin
    ("POST", "", "", HOST, False),  # neither: refused
    ("POST", "null", f"{ORIGIN}/jobs", HOST, False),  # an opaque origin is no origin, whatever the Referer
    ("PUT", EVIL, "", HOST, False),
    ("PATCH", "http://localhost:3001", "", "localhost:3000", False),  # another port is another origin
    ("POST", "http://localhost.evil.example", "", HOST, False),
])
def test_cookie_writes_check_the_origin(world, method, origin, referer, host, allowed):
    ctx = world.ctx
    secret = session_secret(ctx, "alice")
    credentials = http(ctx, secret, method, origin, referer, host)
    if allowed:
        assert identity.resolve(ctx, credentials).username == "alice"
    else:  # a request that names no origin at all is told so, not that it comes from ''
        refused(ctx, credentials, "auth.origin_missing" if not origin and not referer else "auth.origin_refused")


def test_websocket_always_checks_the_origin_and_bearer_never(world):
    ctx = world.ctx
    secret = session_secret(ctx, "alice")
    assert identity.resolve(ctx, tab(ctx, secret)).username == "alice"
    refused(ctx, tab(ctx, secret, origin=EVIL), "auth.origin_refused")
    refused(ctx, tab(ctx, secret, origin=""), "auth.origin_missing")
    bearer = Credentials(authorization=f"Bearer {world.tokens['bob']}", origin=EVIL, method="POST",
                         cookie=cookie_header(ctx, secret))
    assert identity.resolve(ctx, bearer).username == "bob", "a bearer request is not cookie-authenticated"


def test_public_urls_replace_the_host_rule(world):
    ctx = world.ctx
    ctx.settings = ctx.settings.model_copy(update={"public_urls": "https://crater.example.org, http://10.1.2.3:3000"})
    secret = session_secret(ctx, "alice")
    for origin in ("https://crater.example.org", "https://CRATER.example.org:443", "http://10.1.2.3:3000"):
        assert identity.resolve(ctx, tab(ctx, secret, origin=origin, host="internal:3000")).username == "alice"
    refused(ctx, tab(ctx, secret, origin=ORIGIN), "auth.origin_refused")  # its own host is not listed
    refused(ctx, http(ctx, secret, "POST", "http://crater.example.org"), "auth.origin_refused")  # scheme counts


def test_idle_timeout_and_last_seen(world, clock):
    ctx = world.ctx
    secret = session_secret(ctx, "alice")
    clock.advance(30)
    identity.resolve(ctx, tab(ctx, secret))
    assert session_row(ctx, secret).last_seen_at == T0, "written at most once a minute"
    clock.advance(31)
    identity.resolve(ctx, tab(ctx, secret))
    assert session_row(ctx, secret).last_seen_at == T0 + timedelta(seconds=61)
    clock.advance(12 * 3600 - 1)
    assert identity.resolve(ctx, tab(ctx, secret)).username == "alice", "used just in time: the idle clock restarts"
    clock.advance(12 * 3600)
    refused(ctx, tab(ctx, secret), "auth.session_idle")
    with pytest.raises(Unauthenticated) as info:
        identity.resolve(ctx, tab(ctx, secret))
    assert info.value.message == ("This browser's sign-in ended after 12h without use; sign in again.")
    assert info.value.message_in("zh-CN") == "此浏览器的登录在 12小时 未使用后已结束，请重新登录。"


def test_absolute_lifetime(world, clock):
    ctx = world.ctx
    ctx.settings = ctx.settings.model_copy(update={"session_lifetime_s": 3 * 86400, "session_idle_timeout_s": 3600})
    secret = session_secret(ctx, "alice")
    for _ in range(3 * 24):  # used every hour, never idle: 72 x 3,599 s is 72 s short of three days
        clock.advance(3599)
        identity.resolve(ctx, tab(ctx, secret))
    clock.advance(71)
    assert identity.resolve(ctx, tab(ctx, secret)).username == "alice"
    clock.advance(1)
    refused(ctx, tab(ctx, secret), "auth.session_expired")


def test_sign_out_ends_the_browser_session_for_every_tab(world, make_ctx):
    ctx = world.ctx
    secret = session_secret(ctx, "alice")
    other = session_secret(ctx, "alice", "another browser")
    worker = make_ctx(data_dir=ctx.settings.data_dir / "worker-2")
    assert identity.resolve(worker, tab(worker, secret)).username == "alice"
    assert console_sessions.end(ctx, secret) is True
    assert console_sessions.end(ctx, secret) is False and console_sessions.end(ctx, None) is False
    refused(ctx, tab(ctx, secret), "auth.session_ended")
    refused(worker, tab(worker, secret), "auth.session_ended")  # at once in another process: the row decides
    assert identity.resolve(ctx, tab(ctx, other)).username == "alice", "the other browser stays signed in"
    with ctx.session(read_only=True) as s:
        assert s.exec(select(OperationLog).where(OperationLog.code == "auth.console_logout")).one().actor == "alice"


def test_sign_out_everywhere(world):
    ctx = world.ctx
    secrets = [session_secret(ctx, "alice", f"browser {i}") for i in range(3)]
    bob = session_secret(ctx, "bob")
    personal = tokens.create_token(ctx, world.alice, "ci").access_token
    listed = console_sessions.list_sessions(ctx, world.alice, secrets[1])
    assert len(listed) == 3 and [s.current for s in listed].count(True) == 1
    assert next(s for s in listed if s.current).user_agent == "browser 1"
    ended = console_sessions.end_everywhere(ctx, world.alice)
    assert ended == 4, "three console sessions and the login token of populate()"
    for secret in secrets:
        refused(ctx, tab(ctx, secret), "auth.session_ended")
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, world.tokens["alice"])
    assert identity.authenticate(ctx, personal).username == "alice", "personal API tokens stay"
    assert identity.resolve(ctx, tab(ctx, bob)).username == "bob"
    assert console_sessions.list_sessions(ctx, world.alice) == []


def test_end_one_session(world):
    ctx = world.ctx
    mine, other = session_secret(ctx, "alice"), session_secret(ctx, "alice", "phone")
    bobs = session_secret(ctx, "bob")
    other_id, bob_id = session_row(ctx, other).id, session_row(ctx, bobs).id
    with pytest.raises(NotFound) as info:
        console_sessions.end_one(ctx, world.alice, bob_id)
    assert (info.value.code, info.value.field) == ("auth.session_not_found", "id")
    identity.resolve(ctx, tab(ctx, bobs))
    assert console_sessions.end_one(ctx, world.alice, other_id).user_agent == "phone"
    assert console_sessions.end_one(ctx, world.alice, other_id).id == other_id  # twice: no change
    refused(ctx, tab(ctx, other), "auth.session_ended")
    assert identity.resolve(ctx, tab(ctx, mine)).username == "alice"


def test_disabling_an_account_ends_its_sessions(world, make_ctx):
    ctx = world.ctx
    secret = session_secret(ctx, "bob")
    worker = make_ctx(data_dir=ctx.settings.data_dir / "worker-2")
    identity.resolve(worker, tab(worker, secret))
    users.update_user(ctx, world.admin, "bob", {"status": "disabled"})
    refused(ctx, tab(ctx, secret), "auth.session_ended")
    refused(worker, tab(worker, secret), "auth.session_ended")
    with pytest.raises(sign_in.AccountNotActive):
        sign_in.password_sign_in_code(ctx, "bob", USER_PASSWORD)
    with ctx.session(read_only=True) as s:
        row = s.exec(select(OperationLog).where(OperationLog.code == "account.disabled")).one()
    assert row.args == {"changes": ["status: active -> disabled"], "ended": 2}  # the session and the login token


def test_a_session_of_an_account_disabled_behind_its_back(world):
    """A status changed without update_user (say by hand in the database) still stops the session."""
    ctx = world.ctx
    secret = session_secret(ctx, "bob")
    with ctx.session() as s:
        bob = s.exec(select(User).where(User.username == "bob")).one()
        bob.status = "pending"
        s.add(bob)
    with pytest.raises(sign_in.AccountNotActive) as info:
        identity.resolve(ctx, tab(ctx, secret))
    assert info.value.code == "auth.account_pending"


def test_changing_ones_password_ends_the_other_sessions(world):
    ctx = world.ctx
    here, elsewhere = session_secret(ctx, "alice"), session_secret(ctx, "alice", "old laptop")
    personal = tokens.create_token(ctx, world.alice, "ci").access_token
    with pytest.raises(InvalidInput) as info:
        passwords.change_password(ctx, world.alice, "wrong-password", "new-password-1", here)
    assert (info.value.code, info.value.field, info.value.http_status) == (
        "auth.current_password_wrong", "current_password", 422)
    with pytest.raises(InvalidInput) as info:
        passwords.change_password(ctx, world.alice, USER_PASSWORD, "short", here)
    assert (info.value.code, info.value.field) == ("auth.password_rule", "new_password")
    with pytest.raises(InvalidInput) as info:
        passwords.change_password(ctx, world.alice, USER_PASSWORD, USER_PASSWORD, here)
    assert info.value.code == "auth.password_unchanged"
    assert identity.resolve(ctx, tab(ctx, elsewhere)).username == "alice", "nothing changed so far"

    assert passwords.change_password(ctx, world.alice, USER_PASSWORD, "new-password-1", here) == 2
    assert identity.resolve(ctx, tab(ctx, here)).username == "alice"
    refused(ctx, tab(ctx, elsewhere), "auth.session_ended")
    with pytest.raises(Unauthenticated):
        identity.authenticate(ctx, world.tokens["alice"])
    assert identity.authenticate(ctx, personal).username == "alice"
    with pytest.raises(Unauthenticated):
        sign_in.login(ctx, "alice", USER_PASSWORD)
    assert sign_in.login(ctx, "alice", "new-password-1").access_token


@pytest.mark.parametrize(("current", "code"), [
    (None, "auth.current_password_required"), ("", "auth.current_password_required"),
    (12345678, "auth.current_password_type"), (["x"], "auth.current_password_type"),
    ("wrong-password", "auth.current_password_wrong"),
])
def test_a_missing_current_password_is_not_a_wrong_one(world, current, code):
    with pytest.raises(InvalidInput) as info:
        passwords.change_password(world.ctx, world.alice, current, "new-password-1")
    assert (info.value.code, info.value.field) == (code, "current_password")
    assert sign_in.login(world.ctx, "alice", USER_PASSWORD).access_token, "nothing changed"


@pytest.mark.parametrize("blank", [" " * 8, "\t" * 8, " \n" * 6, "\u3000" * 8])  # U+3000: the CJK full-width space
def test_a_password_of_whitespace_only_is_refused_everywhere(world, blank):
    """Sign-up, an admin's new account, a change and a reset all refuse it, with the rule in the message."""
    ctx = world.ctx
    ctx.settings = ctx.settings.model_copy(update={"signup_enabled": True})
    calls = (
        ("password", lambda: users.signup(ctx, "eve", blank)),
        ("password", lambda: users.create_user(ctx, world.admin, "eve", blank)),
        ("new_password", lambda: passwords.change_password(ctx, world.alice, USER_PASSWORD, blank)),
        ("new_password", lambda: passwords.reset_password(ctx, world.admin, "bob", blank)),
    )
    for field, call in calls:
        with pytest.raises(InvalidInput) as info:
            call()
        assert (info.value.code, info.value.field) == ("auth.password_blank", field)
        assert "8 to 1024" in info.value.message and "8 到 1024" in info.value.message_in("zh-CN")
    assert sign_in.login(ctx, "bob", USER_PASSWORD).access_token
    assert "eve" not in {u.username for u in users.list_users(ctx, world.admin)}
    assert users.create_user(ctx, world.admin, "eve", "  pass phrase  ").username == "eve", "spaces inside are fine"


def test_admin_resets_a_password(world):
    ctx = world.ctx
    secret = session_secret(ctx, "bob")
    for actor, name, error, code in ((world.alice, "bob", Forbidden, "account.admins_only"),
                                     (world.admin, "admin", Forbidden, "auth.reset_own"),
                                     (world.admin, "nobody", NotFound, "account.not_found")):
        with pytest.raises(error) as info:
            passwords.reset_password(ctx, actor, name, "new-password-1")
        assert info.value.code == code
    with pytest.raises(InvalidInput) as info:
        passwords.reset_password(ctx, world.admin, "bob", "short")
    assert info.value.field == "new_password"
    assert identity.resolve(ctx, tab(ctx, secret)).username == "bob"

    assert passwords.reset_password(ctx, world.admin, "Bob", "new-password-1") == 2
    refused(ctx, tab(ctx, secret), "auth.session_ended")
    assert sign_in.login(ctx, "bob", "new-password-1").access_token
    with ctx.session(read_only=True) as s:
        row = s.exec(select(OperationLog).where(OperationLog.code == "auth.password_reset")).one()
    assert (row.actor, row.target, row.args) == ("admin", "bob", {"ended": 2})


def test_single_sign_on_accounts_have_no_password(world):
    ctx = world.ctx
    with ctx.session() as s:
        sso = User(username="zhang", username_key="zhang", password_hash=None, role="user", status="active",
                   default_project_id=world.alice.default_project_id, oidc_issuer="https://idp", oidc_subject="1")
        s.add(sso)
        s.flush()
        sso_id = sso.id
    actor = world.alice.__class__(sso_id, "zhang", "user")
    assert not passwords.has_password(ctx, actor) and passwords.has_password(ctx, world.alice)
    with pytest.raises(Conflict) as info:
        passwords.change_password(ctx, actor, "anything", "new-password-1")
    assert info.value.code == "auth.password_none"
    with pytest.raises(Conflict):
        passwords.reset_password(ctx, world.admin, "zhang", "new-password-1")


def test_ended_sessions_are_swept(world, clock):
    ctx = world.ctx
    old = session_secret(ctx, "alice")
    console_sessions.end(ctx, old)
    clock.advance(8 * 86400)
    session_secret(ctx, "alice")
    with ctx.session(read_only=True) as s:
        left = s.exec(select(ConsoleSession).join(User).where(User.username == "alice")).all()
    assert len(left) == 1, "the session ended 8 days ago was deleted when the next one opened"


def test_unusable_settings_are_refused_at_start(world):
    settings = world.ctx.settings
    console_sessions.check_settings(settings)
    for update, variable in (({"public_urls": "crater.example.org"}, "CRATER_PUBLIC_URLS"),
                             ({"public_urls": "https://ok.example, ftp://x"}, "CRATER_PUBLIC_URLS"),
                             ({"session_cookie_name": "crater session"}, "CRATER_SESSION_COOKIE_NAME"),
                             ({"session_idle_timeout_s": 90000, "session_lifetime_s": 3600},
                              "CRATER_SESSION_IDLE_TIMEOUT_S")):
        with pytest.raises(ValueError, match=variable):
            console_sessions.check_settings(settings.model_copy(update=update))


def test_login_tokens_are_not_console_sessions(world):
    """A ``/auth/token`` token sent as the cookie value is refused (the tables differ)."""
    refused(world.ctx, tab(world.ctx, world.tokens["alice"]), "auth.session_unknown")
    with world.ctx.session(read_only=True) as s:
        kinds = {t.kind for t in s.exec(select(ApiToken))}
    assert kinds == {"session"}
