"""Projects pages: the list (+ create, platform admins) and one project with its members (one service call
per handler; the services decide who may see and change what)."""

from __future__ import annotations

import reflex as rx

from crater_app.schemas import ProjectQuotaPublic
from crater_app.domain.errors import CraterError, NotFound, Unauthenticated
from crater_app.domain.policy import PROJECT_ROLES
from crater_app.services import console, projects, quotas
from crater_app.state import governance_views as gv
from crater_app.state import quota_views as qv
from crater_app.state.base import AppState
from crater_app.state.field_errors import FieldErrors, FieldMap
from crater_app.state.forms import FormError
from crater_app.state.governance_forms import member_username, project_form

#: the create-project form's inputs (an error naming one of them is shown under it)
PROJECT_FIELDS: FieldMap = tuple((name, (name,)) for name in ("name", "display_name", "description", "expires_at"))
#: the add-member form's inputs
MEMBER_FIELDS: FieldMap = (("username", ("username",)), ("role", ("role",)))


def route_project_name(path: str) -> str | None:
    """The project name in ``/projects/<name>`` (any text; the service validates it), or ``None``."""
    parts = path.rstrip("/").split("/")
    if len(parts) == 3 and parts[1] == "projects" and parts[2] and len(parts[2]) <= 253:
        return parts[2]
    return None


class ProjectsState(FieldErrors, AppState):
    """/projects: the caller's projects (every project for platform admins) and the create form (its errors beside
    its fields: :class:`FieldErrors`)."""

    FIELDS = PROJECT_FIELDS
    rows: list[dict[str, str]] = []
    #: the list could not be read
    error: str = ""
    loaded: bool = False
    creating: bool = False
    form_key: int = 0

    @rx.event
    async def load(self):
        """on_load: list the projects."""
        self.error = ""
        self._clear_errors()
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
        self._clear_errors()
        try:
            fields = project_form(form)
        except FormError as exc:
            self._form_failed(exc)
            return
        self.creating = True
        yield
        created, stop = await self.submitted(projects.create_project, **fields)
        self.creating = False
        if created is None:
            if stop is not None:
                yield stop
            return
        self.form_key += 1  # re-mounts the form: clears the fields
        yield ProjectsState.load
        yield rx.toast.success(self.msg("projects.created", name=created.name))


class ProjectDetailState(FieldErrors, AppState):
    """/projects/[name]: details; members for platform admins and the project's admins, who also manage them (the
    add-member form's errors beside its fields: :class:`FieldErrors`; other errors in ``error``)."""

    FIELDS = MEMBER_FIELDS
    project: dict[str, str] = {}
    members: list[dict[str, str]] = []
    #: whether the member list is shown (platform admins and the project's admins)
    members_visible: bool = False
    can_manage: bool = False
    not_found: bool = False
    loaded: bool = False
    #: an error of reading the project, changing a role in the table or removing a member
    error: str = ""
    new_member_role: str = "member"
    member_form_key: int = 0
    #: the user name waiting for the remove confirmation ("" when the dialog is closed)
    confirm_remove: str = ""
    busy: bool = False
    #: the Quota card: admitted/held job counts, whether the caller edits it (rows: :attr:`quota`)
    quota_admitted: str = "0"
    quota_held: str = "0"
    can_set_quota: bool = False
    #: the "Edit quota" dialog: open, its rows (:func:`quota_views.blank_quota_row`), an error not tied to a row
    quota_open: bool = False
    quota_edit: list[dict[str, str]] = []
    quota_error: str = ""
    #: the "Share" dialog: the member edited ("" when closed), its rows, an error not tied to a row
    share_user: str = ""
    share_edit: list[dict[str, str]] = []
    share_error: str = ""
    saving: bool = False
    _quota_raw: dict = {}
    _shares: dict = {}
    #: the members as read (their shares are written in the console's language by :attr:`members`)
    _members: list[dict[str, str]] = []

    @rx.var
    def quota(self) -> list[dict[str, str]]:
        """The Quota card's rows (:func:`quota_views.quota_rows`) in the console's language."""
        return qv.quota_rows(ProjectQuotaPublic(**self._quota_raw), self.lang) if self._quota_raw else []

    @rx.var
    def members(self) -> list[dict[str, str]]:
        """The members table's rows, each share written in the console's language."""
        return [{**m, "share": qv.share_text(self.lang, self._shares.get(m["username"]) or {})}
                for m in self._members]

    def _name(self) -> str | None:
        return route_project_name(self.router.url.path)

    def _apply(self, view: console.ProjectView) -> None:
        self.project = gv.project_row(view.project)
        self.members_visible = view.project.members is not None
        self._members = [gv.member_row(m) for m in view.project.members or []]
        self._shares = {m.username: dict(m.share) for m in view.project.members or []}
        self.can_manage = view.can_manage
        self.can_set_quota = view.can_set_quota
        quota = view.project.quota
        self._quota_raw = quota.model_dump() if quota is not None else {}
        self.quota_admitted = str(quota.admitted_jobs) if quota is not None else "0"
        self.quota_held = str(quota.held_jobs) if quota is not None else "0"
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
            self.project, self._members, self.members_visible, self.can_manage = {}, [], False, False
            self._quota_raw, self.can_set_quota = {}, False
            self.not_found, self.loaded = True, True
            return None
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            self.loaded = True
            return None
        self._apply(view)
        return None

    @rx.event
    async def load(self):
        """on_load: read the project (a project the caller may not see shows as not found)."""
        self.error = ""
        self._clear_errors()
        self.busy = self.saving = False
        self.confirm_remove = ""
        self.quota_open, self.share_user = False, ""
        if self.project.get("name") != self._name():
            self.project, self._members, self.loaded, self._quota_raw = {}, [], False, {}
        return await self._reload()

    @rx.event
    def set_new_member_role(self, role: str) -> None:
        """The project role of the member to add."""
        self._forget_field_error("role")
        if role in PROJECT_ROLES:
            self.new_member_role = role

    async def _set_member(self, username: str, role: str, form: bool):
        """Give ``username`` ``role``; an error goes beside the add-member form's fields (``form``) or to
        ``error`` (the members table)."""
        name = self._name()
        if name is None:
            return None
        self.busy = True
        call = self.submitted if form else self.guarded
        done, stop = await call(projects.set_member, name, username, role)
        self.busy = False
        if done is None:
            return stop
        reload = await self._reload()
        return reload or rx.toast.success(self.msg("members.saved", username=done.username,
                                                   role=self.msg(f"project.role.{done.role}")))

    @rx.event
    async def add_member(self, form: dict):
        """Add the user named in the form with the chosen role (or change their role when already a member)."""
        self.error = ""
        self._clear_errors()
        try:
            username = member_username(str(form.get("username", "")))
        except FormError as exc:
            self._form_failed(exc)
            return None
        result = await self._set_member(username, self.new_member_role, form=True)
        if not self.field_errors and not self.form_error:
            self.member_form_key += 1
            self.new_member_role = "member"
        return result

    @rx.event
    async def change_role(self, username: str, role: str):
        """Give ``username`` the project role ``role``."""
        self.error = ""
        if role not in PROJECT_ROLES:
            return None
        return await self._set_member(username, role, form=False)

    @rx.event
    def ask_remove(self, username: str) -> None:
        """Open the confirmation for removing ``username``."""
        self.error = ""
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
        self.error = ""
        self.busy = True
        _, stop = await self.guarded(projects.remove_member, name, username)
        self.busy = False
        if self.error or stop is not None:
            return stop
        reload = await self._reload()
        return reload or rx.toast.success(self.msg("members.removed", username=username))

    # --- "Edit quota" (platform admins; the service refuses others) -------------------------------------------

    @rx.event
    def open_quota(self) -> None:
        """Open the "Edit quota" dialog with the stored quota's rows."""
        quota = ProjectQuotaPublic(**self._quota_raw) if self._quota_raw else None
        self.quota_edit = qv.quota_editor_rows(quota)
        self.quota_error = ""
        self.quota_open = True

    @rx.event
    def set_quota_open(self, is_open: bool) -> None:
        """Closing the dialog (Escape, Cancel) drops what was typed."""
        if not is_open:
            self.quota_open = False
            self.quota_error = ""

    @rx.event
    def set_quota_cell(self, index: int, column: str, value: str) -> None:
        """Type into row ``index``, column ``resource``/``guarantee``/``deserved``/``capability``."""
        if 0 <= index < len(self.quota_edit) and column in ("resource", *qv.QUOTA_COLUMNS):
            rows = list(self.quota_edit)
            rows[index] = qv.edited(rows[index], column, value)
            self.quota_edit = rows

    @rx.event
    def add_quota_row(self) -> None:
        """Add an empty row (up to the service's limit on keys)."""
        if len(self.quota_edit) < qv.MAX_ROWS:
            self.quota_edit = [*self.quota_edit, qv.blank_quota_row()]

    @rx.event
    def remove_quota_row(self, index: int) -> None:
        """Remove row ``index`` (its key is then unset in every section)."""
        if 0 <= index < len(self.quota_edit):
            self.quota_edit = [row for i, row in enumerate(self.quota_edit) if i != index]

    def _quota_failed(self, field: str, message: str) -> None:
        self.quota_edit, placed = qv.place_error(self.quota_edit, field, message, qv.QUOTA_COLUMNS)
        self.quota_error = "" if placed else message

    @rx.event
    async def save_quota(self):
        """Send the dialog's rows to ``services.quotas.set_quota``; an error stays in the dialog next to the cell it
        names, with everything typed kept."""
        name = self._name()
        if name is None:
            return None
        self.quota_error = ""
        try:
            body = qv.quota_body(self.quota_edit)
        except FormError as exc:
            self._quota_failed(exc.field, self.msg(exc.key, **exc.params))
            return None
        self.saving = True
        try:
            await self.call(quotas.set_quota, name, body)
        except Unauthenticated:
            self.saving = False
            return self.signed_out()
        except CraterError as exc:
            self.saving = False
            self._quota_failed(exc.field or "", exc.message_in(self.lang))
            return None
        self.saving = False
        self.quota_open = False
        reload = await self._reload()
        return reload or rx.toast.success(self.msg("quota.saved", project=name))

    # --- member shares (platform admins and the project's admins) ---------------------------------------------

    @rx.event
    def open_share(self, username: str) -> None:
        """Open the "Share" dialog for ``username`` with their stored share."""
        self.share_edit = qv.share_editor_rows(self._shares.get(username) or {})
        self.share_error = ""
        self.share_user = username

    @rx.event
    def set_share_open(self, is_open: bool) -> None:
        """Closing the dialog drops what was typed."""
        if not is_open:
            self.share_user = ""
            self.share_error = ""

    @rx.event
    def set_share_cell(self, index: int, column: str, value: str) -> None:
        """Type into row ``index``, column ``resource`` or ``amount``."""
        if 0 <= index < len(self.share_edit) and column in ("resource", "amount"):
            rows = list(self.share_edit)
            rows[index] = qv.edited(rows[index], column, value)
            self.share_edit = rows

    @rx.event
    def add_share_row(self) -> None:
        """Add an empty row."""
        if len(self.share_edit) < qv.MAX_ROWS:
            self.share_edit = [*self.share_edit, qv.blank_share_row()]

    @rx.event
    def remove_share_row(self, index: int) -> None:
        """Remove row ``index``."""
        if 0 <= index < len(self.share_edit):
            self.share_edit = [row for i, row in enumerate(self.share_edit) if i != index]

    def _share_failed(self, field: str, message: str) -> None:
        self.share_edit, placed = qv.place_error(self.share_edit, field, message, ("amount",))
        self.share_error = "" if placed else message

    @rx.event
    async def save_share(self):
        """Set the member's share through ``services.projects.set_member(share=...)`` (no rows: no limit)."""
        name, username = self._name(), self.share_user
        if name is None or not username:
            return None
        self.share_error = ""
        try:
            share = qv.share_body(self.share_edit)
        except FormError as exc:
            self._share_failed(exc.field, self.msg(exc.key, **exc.params))
            return None
        self.saving = True
        try:
            await self.call(projects.set_member, name, username, None, share=share)
        except Unauthenticated:
            self.saving = False
            return self.signed_out()
        except CraterError as exc:
            self.saving = False
            self._share_failed(exc.field or "", exc.message_in(self.lang))
            return None
        self.saving = False
        self.share_user = ""
        reload = await self._reload()
        return reload or rx.toast.success(self.msg("share.saved", username=username))
