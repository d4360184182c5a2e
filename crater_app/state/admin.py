"""/admin/users: create and list accounts, change their role, status and limits, reset a password (platform
admins; the services enforce it too)."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.errors import CraterError, Forbidden, Unauthenticated
from crater_app.services import passwords, users
from crater_app.state import views
from crater_app.state.base import AppState
from crater_app.state.field_errors import FieldErrors

ROLES = ("user", "admin", "guest")
STATUSES = ("active", "pending", "disabled")
LIMITS = ("max_sessions", "max_accelerators_per_job", "max_runtime")
#: the create form's inputs, and the edit dialog's (``edit.<field>``), by the service's field names
CREATE_FIELDS = tuple((name, (name,)) for name in ("username", "password", "role", "display_name", "email"))
EDIT_FIELDS = tuple((f"edit.{name}", (name,)) for name in ("role", "status", *LIMITS))


def limit_changes(form: dict) -> dict:
    """The limit fields of the edit form as ``update_user`` changes: empty -> ``None`` (the platform default),
    whole numbers -> ``int``, other text (``max_runtime`` such as ``"12h"``) as typed; the service validates."""
    out: dict = {}
    for name in LIMITS:
        text = str(form.get(name, "")).strip()
        out[name] = None if not text else int(text) if text.isascii() and text.isdigit() and len(text) < 12 else text
    return out


class AdminUsersState(FieldErrors, AppState):
    """The users table and the create-user form (errors beside their fields: :class:`FieldErrors`)."""

    FIELDS = CREATE_FIELDS
    users: list[dict[str, str]] = []
    role_choice: str = "user"
    error: str = ""
    forbidden: bool = False
    loaded: bool = False
    form_key: int = 0
    # the edit dialog of one account
    action_error: str = ""
    edit_open: bool = False
    edit_title: str = ""
    edit_username: str = ""
    edit_role: str = "user"
    edit_status: str = "active"
    edit_limits: dict[str, str] = {}
    edit_sign_in: str = ""
    edit_error: str = ""
    # the password reset dialog of one account
    reset_open: bool = False
    reset_username: str = ""
    reset_error: str = ""
    reset_error_field: str = ""
    reset_key: int = 0

    @rx.var
    def pending_notice(self) -> str:
        """"N sign-up(s) waiting for approval" when self sign-ups wait for an admin, else ``""``."""
        count = sum(1 for u in self.users if u.get("status") == "pending")
        return self.msg("admin.pending_count", count=count) if count else ""

    @rx.event
    async def load(self):
        """List the users (a Forbidden answer shows the admins-only notice)."""
        self.error = ""
        try:
            found = await self.call(users.list_users)
        except Unauthenticated:
            return self.signed_out()
        except Forbidden:
            self.users, self.forbidden, self.loaded = [], True, True
            return None
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            return None
        self.users = [views.user_row(u) for u in found]
        self.forbidden = False
        self.loaded = True
        return None

    @rx.event
    def set_role_choice(self, role: str) -> None:
        """The role of the account to create."""
        self._forget_field_error("role")
        if role in ROLES:
            self.role_choice = role

    @rx.event
    async def create(self, form: dict):
        """Create the account, then reload the table."""
        self._clear_errors()
        try:
            created = await self.call(
                users.create_user, str(form.get("username", "")).strip(), str(form.get("password", "")),
                role=self.role_choice, display_name=str(form.get("display_name", "")).strip(),
                email=str(form.get("email", "")).strip(),
            )
        except Unauthenticated:
            return self.signed_out()
        except Forbidden as exc:
            self.forbidden = True
            self.error = exc.message_in(self.lang)
            return None
        except CraterError as exc:
            self._show_error(exc.message_in(self.lang), exc.field)
            return None
        self.form_key += 1  # re-mounts the form: clears the fields
        self.role_choice = "user"
        return [AdminUsersState.load, rx.toast.success(self.msg("admin.created", username=created.username))]

    @rx.event
    async def set_status(self, username: str, status: str):
        """Quick action: activate a pending sign-up or disable an account (revokes its tokens)."""
        self.action_error = ""
        if status not in STATUSES:
            return None
        try:
            await self.call(users.update_user, username, {"status": status})
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.action_error = exc.message_in(self.lang)
            return None
        return [AdminUsersState.load, rx.toast.success(self.msg("admin.edit.saved", username=username))]

    @rx.event
    async def open_edit(self, username: str):
        """Open the edit dialog with the account's current role, status and limits."""
        self.edit_error = ""
        self.field_errors = {k: v for k, v in self.field_errors.items() if not k.startswith("edit.")}
        try:
            user = await self.call(users.get_user, username)
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.action_error = exc.message_in(self.lang)
            return None
        self.edit_title = self.msg("admin.edit.title", username=user.username)
        self.edit_username, self.edit_role, self.edit_status = user.username, user.role, user.status
        self.edit_sign_in = user.sign_in
        self.edit_limits = {
            "max_sessions": "" if user.max_sessions is None else str(user.max_sessions),
            "max_accelerators_per_job": "" if user.max_accelerators_per_job is None else str(user.max_accelerators_per_job),
            "max_runtime": "" if user.max_runtime_s is None else str(user.max_runtime_s),
        }
        self.edit_open = True
        return None

    @rx.event
    def set_edit_open(self, value: bool) -> None:
        """Close (or keep open) the edit dialog."""
        self.edit_open = value

    @rx.event
    def set_edit_role(self, role: str) -> None:
        """The role chosen in the edit dialog."""
        self._forget_field_error("edit.role")
        if role in ROLES:
            self.edit_role = role

    @rx.event
    def set_edit_status(self, status: str) -> None:
        """The status chosen in the edit dialog."""
        self._forget_field_error("edit.status")
        if status in STATUSES:
            self.edit_status = status

    @rx.event
    async def save_edit(self, form: dict):
        """Apply the dialog: one ``update_user`` call with role, status and limits (all or nothing)."""
        self.edit_error = ""
        self.field_errors = {}
        changes = {"role": self.edit_role, "status": self.edit_status, **limit_changes(form)}
        try:
            await self.call(users.update_user, self.edit_username, changes)
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self._show_error(exc.message_in(self.lang), exc.field, EDIT_FIELDS)
            self.edit_error, self.form_error = self.form_error, ""
            return None
        self.edit_open = False
        return [AdminUsersState.load, rx.toast.success(self.msg("admin.edit.saved", username=self.edit_username))]

    @rx.event
    def open_reset(self, username: str) -> None:
        """Open the password reset dialog for ``username`` (from the edit dialog, which closes)."""
        self.edit_open = False
        self.reset_username = username
        self.reset_error = self.reset_error_field = ""
        self.reset_key += 1  # re-mounts the form: empty fields
        self.reset_open = True

    @rx.event
    def set_reset_open(self, value: bool) -> None:
        """Close (or keep open) the password reset dialog."""
        self.reset_open = value

    @rx.event
    async def reset_password(self, form: dict):
        """Set the account's new password (typed twice); its sessions and login tokens end."""
        self.reset_error = self.reset_error_field = ""
        new = str(form.get("new_password", ""))
        if new != str(form.get("new_password_again", "")):
            self.reset_error, self.reset_error_field = self.msg("identity.password.mismatch"), "new_password_again"
            return None
        try:
            ended = await self.call(passwords.reset_password, self.reset_username, new)
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.reset_error, self.reset_error_field = exc.message_in(self.lang), exc.field or ""
            return None
        self.reset_open = False
        return rx.toast.success(self.msg("identity.reset.done", username=self.reset_username, ended=ended))
