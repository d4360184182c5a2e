"""Projects pages: the list (+ create, platform admins) and one project with its members (one service call
per handler; the services decide who may see and change what)."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.errors import CraterError, NotFound, Unauthenticated
from crater_app.domain.policy import PROJECT_ROLES
from crater_app.services import console, projects
from crater_app.state import governance_views as gv
from crater_app.state.base import AppState
from crater_app.state.forms import FormError
from crater_app.state.governance_forms import member_username, project_form

#: the create-project form's fields (an error naming one of them is shown under it)
PROJECT_FIELDS = ("name", "display_name", "description", "expires_at")


def route_project_name(path: str) -> str | None:
    """The project name in ``/projects/<name>`` (any text; the service validates it), or ``None``."""
    parts = path.rstrip("/").split("/")
    if len(parts) == 3 and parts[1] == "projects" and parts[2] and len(parts[2]) <= 253:
        return parts[2]
    return None


class ProjectsState(AppState):
    """/projects: the caller's projects (every project for platform admins) and the create form."""

    rows: list[dict[str, str]] = []
    error: str = ""
    error_field: str = ""
    loaded: bool = False
    creating: bool = False
    form_key: int = 0

    @rx.var
    def form_error(self) -> str:
        """An error not tied to one of the form's fields (shown below the form)."""
        return self.error if self.error_field not in PROJECT_FIELDS else ""

    @rx.event
    async def load(self):
        """on_load: list the projects."""
        self.error = self.error_field = ""
        self.creating = False
        found, stop = await self.guarded(projects.list_projects)
        if found is None:
            self.loaded = True
            return stop
        self.rows = [gv.project_row(p) for p in found]
        self.loaded = True
        return None

    @rx.event
    async def create(self, form: dict):
        """Check the form, create the project (platform admins; the service refuses others), reload the list."""
        self.error = self.error_field = ""
        try:
            fields = project_form(form)
        except FormError as exc:
            self.error, self.error_field = self.msg(exc.key, **exc.params), exc.field
            return
        self.creating = True
        yield
        created, stop = await self.guarded(projects.create_project, **fields)
        self.creating = False
        if created is None:
            if stop is not None:
                yield stop
            return
        self.form_key += 1  # re-mounts the form: clears the fields
        yield ProjectsState.load
        yield rx.toast.success(self.msg("projects.created", name=created.name))


class ProjectDetailState(AppState):
    """/projects/[name]: details; members for platform admins and the project's admins, who also manage them."""

    project: dict[str, str] = {}
    members: list[dict[str, str]] = []
    #: whether the member list is shown (platform admins and the project's admins)
    members_visible: bool = False
    can_manage: bool = False
    not_found: bool = False
    loaded: bool = False
    error: str = ""
    error_field: str = ""
    new_member_role: str = "member"
    member_form_key: int = 0
    #: the user name waiting for the remove confirmation ("" when the dialog is closed)
    confirm_remove: str = ""
    busy: bool = False

    def _name(self) -> str | None:
        return route_project_name(self.router.url.path)

    def _apply(self, view: console.ProjectView) -> None:
        self.project = gv.project_row(view.project)
        self.members_visible = view.project.members is not None
        self.members = [gv.member_row(m) for m in view.project.members or []]
        self.can_manage = view.can_manage
        self.not_found = False
        self.loaded = True

    async def _reload(self):
        name = self._name()
        if name is None:
            self.not_found, self.loaded = True, True
            return None
        try:
            view = await self.call(console.project_view, name)
        except Unauthenticated:
            return self.signed_out()
        except NotFound:
            self.project, self.members, self.members_visible, self.can_manage = {}, [], False, False
            self.not_found, self.loaded = True, True
            return None
        except CraterError as exc:
            self.error = exc.message
            self.loaded = True
            return None
        self._apply(view)
        return None

    @rx.event
    async def load(self):
        """on_load: read the project (a project the caller may not see shows as not found)."""
        self.error = self.error_field = ""
        self.busy = False
        self.confirm_remove = ""
        if self.project.get("name") != self._name():
            self.project, self.members, self.loaded = {}, [], False
        return await self._reload()

    @rx.event
    def set_new_member_role(self, role: str) -> None:
        """The project role of the member to add."""
        if role in PROJECT_ROLES:
            self.new_member_role = role

    async def _set_member(self, username: str, role: str):
        name = self._name()
        if name is None:
            return None
        self.busy = True
        done, stop = await self.guarded(projects.set_member, name, username, role)
        self.busy = False
        if done is None:
            return stop
        reload = await self._reload()
        return reload or rx.toast.success(self.msg("members.saved", username=done.username,
                                                   role=self.msg(f"project.role.{done.role}")))

    @rx.event
    async def add_member(self, form: dict):
        """Add the user named in the form with the chosen role (or change their role when already a member)."""
        self.error = self.error_field = ""
        try:
            username = member_username(str(form.get("username", "")))
        except FormError as exc:
            self.error, self.error_field = self.msg(exc.key, **exc.params), exc.field
            return None
        result = await self._set_member(username, self.new_member_role)
        if not self.error:
            self.member_form_key += 1
            self.new_member_role = "member"
        return result

    @rx.event
    async def change_role(self, username: str, role: str):
        """Give ``username`` the project role ``role``."""
        self.error = self.error_field = ""
        if role not in PROJECT_ROLES:
            return None
        return await self._set_member(username, role)

    @rx.event
    def ask_remove(self, username: str) -> None:
        """Open the confirmation for removing ``username``."""
        self.error = self.error_field = ""
        self.confirm_remove = username

    @rx.event
    def set_confirm_open(self, is_open: bool) -> None:
        """Closing the dialog (Escape, Back) forgets the pending removal."""
        if not is_open:
            self.confirm_remove = ""

    @rx.event
    async def remove(self):
        """Remove the member waiting for confirmation."""
        username, self.confirm_remove = self.confirm_remove, ""
        name = self._name()
        if not username or name is None:
            return None
        self.error = self.error_field = ""
        self.busy = True
        _, stop = await self.guarded(projects.remove_member, name, username)
        self.busy = False
        if self.error or stop is not None:
            return stop
        reload = await self._reload()
        return reload or rx.toast.success(self.msg("members.removed", username=username))
