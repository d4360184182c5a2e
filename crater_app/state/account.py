"""/account: the signed-in user's profile, password change and signed-in browsers (console sessions), with
"sign out" of one browser and "sign out everywhere"."""

from __future__ import annotations

import re

import reflex as rx

from crater_app.domain.errors import CraterError, Unauthenticated
from crater_app.schemas import ConsoleSessionPublic
from crater_app.services import console_sessions, passwords, users
from crater_app.state.base import AppState, api_base, leave_script
from crater_app.state.views import fmt_time

PASSWORD_FIELDS = ("current_password", "new_password", "new_password_again")
# (pattern, name) tried in order: Edge and Opera say "Chrome" too, Chrome says "Safari" too
_BROWSERS = (
    (r"Edg(?:e|A|iOS)?/(\d+)", "Edge"), (r"OPR/(\d+)", "Opera"), (r"Firefox/(\d+)", "Firefox"),
    (r"(?:Chrome|CriOS)/(\d+)", "Chrome"), (r"Version/(\d+)[.\d]* (?:Mobile/\S+ )?Safari/", "Safari"),
    (r"curl/(\d+)", "curl"), (r"python-httpx/(\d+)", "httpx"), (r"python-requests/(\d+)", "requests"),
)
_SYSTEMS = (("Android", "Android"), ("iPhone", "iOS"), ("iPad", "iPadOS"), ("Windows", "Windows"),
            ("Mac OS X", "macOS"), ("CrOS", "ChromeOS"), ("Linux", "Linux"))


def describe_user_agent(user_agent: str) -> str:
    """A short name for a ``User-Agent`` header: ``Chrome 131 · Linux``, ``Firefox 133 · Windows``,
    ``curl 8``; the first 60 characters of it when no browser is recognised; ``""`` for none."""
    browser = next((f"{name} {m.group(1)}" for pattern, name in _BROWSERS
                    if (m := re.search(pattern, user_agent))), "")
    system = next((name for token, name in _SYSTEMS if token in user_agent), "")
    if not browser:
        return user_agent[:60]
    return f"{browser} · {system}" if system else browser


def session_row(session: ConsoleSessionPublic) -> dict[str, str]:
    """A row of the signed-in browsers table (times UTC)."""
    return {
        "id": str(session.id), "browser": describe_user_agent(session.user_agent), "user_agent": session.user_agent,
        "ip": session.ip, "created": fmt_time(session.created_at), "last_seen": fmt_time(session.last_seen_at),
        "ends": fmt_time(session.idle_expires_at), "current": "1" if session.current else "",
    }


class AccountState(AppState):
    """The profile, the password form and the sessions table."""

    profile: dict[str, str] = {}
    has_password: bool = False
    sessions: list[dict[str, str]] = []
    loaded: bool = False
    error: str = ""
    error_field: str = ""
    password_error: str = ""
    password_error_field: str = ""
    #: changes when the password form is to be emptied
    password_key: int = 0
    confirm_everywhere: bool = False

    async def _list(self):
        found, stop = await self.guarded(console_sessions.list_sessions, self._session_secret())
        if found is None:
            return stop
        self.sessions = [session_row(x) for x in found]
        return None

    @rx.event
    async def load(self):
        """on_load: the caller's record, whether it has a password, and its signed-in browsers."""
        self.error = self.error_field = self.password_error = self.password_error_field = ""
        self.confirm_everywhere = False
        me, stop = await self.guarded(users.me)
        if me is None:
            return stop
        self.profile = {"username": me.username, "display_name": me.display_name, "email": me.email,
                        "role": me.role, "project": me.default_project or ""}
        has, stop = await self.guarded(passwords.has_password)
        if has is None:
            return stop
        self.has_password = has
        stop = await self._list()
        self.loaded = True
        return stop

    @rx.event
    async def change_password(self, form: dict):
        """Change the password (current one, new one twice); the other browsers' sessions end."""
        self.password_error = self.password_error_field = ""
        new = str(form.get("new_password", ""))
        if new != str(form.get("new_password_again", "")):
            self.password_error = self.msg("identity.password.mismatch")
            self.password_error_field = "new_password_again"
            return None
        try:
            ended = await self.call(passwords.change_password, str(form.get("current_password", "")), new,
                                    self._session_secret())
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.password_error, self.password_error_field = exc.message_in(self.lang), exc.field or ""
            return None
        self.password_key += 1
        stop = await self._list()
        return stop or rx.toast.success(self.msg("identity.password.changed", ended=ended))

    @rx.event
    async def end_session(self, session_id: str):
        """Sign out one other browser."""
        if not session_id.isdigit() or len(session_id) > 18:
            return None
        self.error = self.error_field = ""
        done, stop = await self.guarded(console_sessions.end_one, int(session_id))
        if done is None:
            return stop
        stop = await self._list()
        return stop or rx.toast.success(self.msg("identity.sessions.ended_one"))

    @rx.event
    def set_confirm_everywhere(self, value: bool) -> None:
        """Open or close the "sign out everywhere" confirmation."""
        self.confirm_everywhere = bool(value)

    @rx.event
    async def sign_out_everywhere(self):
        """End every session of the account (this browser's too) and go to /login."""
        self.confirm_everywhere = False
        done, stop = await self.guarded(console_sessions.end_everywhere)
        if done is None:
            return stop
        self.forget()
        return rx.call_script(leave_script(api_base(), "/login"))
