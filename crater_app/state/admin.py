"""/admin/users: create and list accounts (platform admins; the service enforces it too)."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.errors import CraterError, Forbidden, Unauthenticated
from crater_app.services import users
from crater_app.state import views
from crater_app.state.base import AppState

ROLES = ("user", "admin", "guest")


class AdminUsersState(AppState):
    """The users table and the create-user form."""

    users: list[dict[str, str]] = []
    role_choice: str = "user"
    error: str = ""
    error_field: str = ""
    forbidden: bool = False
    loaded: bool = False
    form_key: int = 0

    @rx.event
    async def load(self):
        """List the users (a Forbidden answer shows the admins-only notice)."""
        self.error = self.error_field = ""
        try:
            found = await self.call(users.list_users)
        except Unauthenticated:
            return self.signed_out()
        except Forbidden:
            self.users, self.forbidden, self.loaded = [], True, True
            return None
        except CraterError as exc:
            self.error = exc.message
            return None
        self.users = [views.user_row(u) for u in found]
        self.forbidden = False
        self.loaded = True
        return None

    @rx.event
    def set_role_choice(self, role: str) -> None:
        """The role of the account to create."""
        if role in ROLES:
            self.role_choice = role

    @rx.event
    async def create(self, form: dict):
        """Create the account, then reload the table."""
        self.error = self.error_field = ""
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
            self.error = exc.message
            return None
        except CraterError as exc:
            self.error, self.error_field = exc.message, exc.field or ""
            return None
        self.form_key += 1  # re-mounts the form: clears the fields
        self.role_choice = "user"
        return [AdminUsersState.load, rx.toast.success(self.msg("admin.created", username=created.username))]
