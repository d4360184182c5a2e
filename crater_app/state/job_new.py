"""/jobs/new: the submit form. GPU models and counts come from the nodes' real devices; each error is shown beside
the field it names and goes away when that field is changed."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.policy import can_submit_as
from crater_app.domain.resources import CPU, MEMORY
from crater_app.services import job_defaults, jobs, nodes, projects, users
from crater_app.state import views
from crater_app.state.base import AppState
from crater_app.state.field_errors import FieldErrors, FieldMap
from crater_app.state.forms import COMMAND_MODES, JOB_KINDS, FormError, build_spec

#: the form's inputs and the job spec's field paths each shows the errors of (``domain.jobs.validate`` names
#: ``resources.nvidia.com/gpu``, ``tasks[0].command``, ...; cpu and memory before the accelerators)
NEW_JOB_FIELDS: FieldMap = (
    ("name", ("name",)), ("project", ("project",)), ("kind", ("kind",)), ("preemptible", ("preemptible",)),
    ("command", ("command", "tasks")), ("env", ("env",)), ("cpu", ("resources.cpu",)),
    ("memory", ("resources.memory",)), ("gpus", ("resources", "accelerator_model", "gpus")),
    ("max_runtime", ("max_runtime",)), ("priority", ("priority",)),
)


class NewJobState(FieldErrors, AppState):
    """/jobs/new: the submit form. GPU models and counts come from the nodes' real devices."""

    FIELDS = NEW_JOB_FIELDS
    accelerators: list[dict[str, str]] = []
    model: str = ""
    gpus: str = "0"
    command_mode: str = "lines"
    #: a page-level error (the nodes or projects could not be read)
    error: str = ""
    submitting: bool = False
    loaded: bool = False
    #: changes when the form goes back to its defaults, so that its text fields are cleared too
    form_key: int = 0
    #: ``batch`` or ``interactive`` (a session), and whether the job may be preempted for other projects' fair share
    kind: str = "batch"
    preemptible: bool = False
    #: the projects the caller may submit to (role admin/member; every project for platform admins) and the choice
    project_options: list[str] = []
    project: str = ""
    _default_project: str = ""
    #: the ``cpu``/``memory`` a job that names none gets (settings ``default_job_cpu``/``default_job_memory``, the
    #: API's defaults too): the fields start with them; ``""`` when the platform sets none
    default_cpu: str = ""
    default_memory: str = ""

    @rx.var
    def gpu_options(self) -> list[str]:
        """``0 .. n`` where n is the most devices of the chosen model one node has."""
        return [str(n) for n in range(int(self._chosen("max")) + 1)]

    def _chosen(self, key: str, default: str = "0") -> str:
        """``key`` (``free``/``max``/``resource``) of the chosen model's accelerator choice, ``default`` when none."""
        return next((c[key] for c in self.accelerators if c["model"] == self.model), default)

    @rx.var
    def model_free(self) -> str:
        """Free devices of the chosen model right now."""
        return self._chosen("free")

    @rx.var
    def model_max(self) -> str:
        """Devices of the chosen model on the largest node."""
        return self._chosen("max")

    @rx.var
    def has_accelerators(self) -> bool:
        """Whether any node has an accelerator."""
        return bool(self.accelerators)

    @rx.event
    async def load(self):
        """on_load: read the nodes' accelerator models and counts, the platform's cpu/memory defaults (the fields
        start with them) and the projects the user may submit to."""
        self.error = ""
        self._clear_errors()
        self.submitting = False
        found, stop = await self.guarded(nodes.list_nodes)
        if found is None:
            return stop
        self.accelerators = views.accelerator_choices(found)
        defaults, stop = await self.guarded(job_defaults.resource_defaults)
        if defaults is None:
            return stop
        self.default_cpu, self.default_memory = defaults.get(CPU, ""), defaults.get(MEMORY, "")
        mine, stop = await self.guarded(projects.list_projects)
        me, stop_me = await self.guarded(users.me)
        if mine is None or me is None:
            return stop or stop_me
        # Where submitting is allowed (the service's rule, domain.policy); expired projects take no new jobs. The
        # service checks again on submit.
        self.project_options = [p.name for p in mine if not p.expired and can_submit_as(self.role, p.role)]
        self._default_project = me.default_project or ""
        self._reset_form()
        self.loaded = True
        return None

    def _reset_form(self) -> None:
        """The form's defaults: the first accelerator model, one device of it (or none), one argument per line."""
        models = [c["model"] for c in self.accelerators]
        self.model = models[0] if models else ""
        self.gpus = "1" if "1" in self.gpu_options else "0"
        self.command_mode = "lines"
        self.kind, self.preemptible = "batch", False
        options = self.project_options
        self.project = self._default_project if self._default_project in options else (options[0] if options else "")
        self.form_key += 1

    @rx.event
    def set_model(self, model: str) -> None:
        """Choose the accelerator model (the count is capped to what it offers)."""
        self.model = model
        self._forget_field_error("gpus")
        if self.gpus not in self.gpu_options:
            self.gpus = self.gpu_options[-1]

    @rx.event
    def set_gpus(self, count: str) -> None:
        """Choose how many devices (all on one node)."""
        self._forget_field_error("gpus")
        if count in self.gpu_options:
            self.gpus = count

    @rx.event
    def set_command_mode(self, mode: str) -> None:
        """``lines`` (one argument per line) or ``shell`` (split like a shell line, never run by one)."""
        self._forget_field_error("command")
        if mode in COMMAND_MODES:
            self.command_mode = mode

    @rx.event
    def set_kind(self, kind: str) -> None:
        """``batch`` or ``interactive``."""
        self._forget_field_error("kind")
        if kind in JOB_KINDS:
            self.kind = kind

    @rx.event
    def set_preemptible(self, value: bool) -> None:
        """Whether the job may be stopped so that other projects get their deserved share."""
        self._forget_field_error("preemptible")
        self.preemptible = bool(value)

    @rx.event
    def set_project(self, name: str) -> None:
        """The project to submit to (one of :attr:`project_options`)."""
        self._forget_field_error("project")
        if name in self.project_options:
            self.project = name

    @rx.event
    async def submit(self, form: dict):
        """Build the spec from the form, submit it, and open the new job; an error is shown beside its field."""
        self._clear_errors()
        resource = self._chosen("resource", "nvidia.com/gpu")
        try:
            spec = build_spec(
                name=str(form.get("name", "")), command=str(form.get("command", "")), command_mode=self.command_mode,
                env=str(form.get("env", "")), cpu=str(form.get("cpu", "")), memory=str(form.get("memory", "")),
                gpus=self.gpus, model=self.model, resource=resource, max_runtime=str(form.get("max_runtime", "")),
                priority=str(form.get("priority", "")), kind=self.kind, preemptible=self.preemptible,
                project=self.project,
            )
        except FormError as exc:
            self._form_failed(exc)
            return
        self.submitting = True
        yield
        job, stop = await self.submitted(jobs.submit_job, spec)
        self.submitting = False
        if job is None:
            if stop is not None:
                yield stop
            return
        self._reset_form()
        # The next visit shows the form once its on_load has read the nodes and projects again: a form left loaded
        # would show at once and be rebuilt (a new key) under the user's hands when that on_load ends.
        self.loaded = False
        yield rx.redirect(f"/jobs/{job.id}")
