"""/jobs/new: the submit form for jobs of every kind (batch, PyTorch DDP, MPI, interactive), with its "Edit as YAML"
mode. GPU models and per-replica counts come from the nodes' real devices; each error is shown beside the field it
names (the spec paths of :func:`crater_app.state.forms.job_fields`) and goes away when that field is changed; in
YAML mode the error's path and message are shown above the text."""

from __future__ import annotations

import reflex as rx

from crater_app.api import body, yaml_loader
from crater_app.domain.errors import CraterError, TooLarge, Unauthenticated
from crater_app.domain.job_kinds import RESTART_POLICIES
from crater_app.domain.manifests import refuse_manifests
from crater_app.domain.policy import can_submit_as
from crater_app.domain.resources import CPU, MEMORY
from crater_app.services import job_defaults, jobs, nodes, projects, users
from crater_app.state import views
from crater_app.state.base import AppState
from crater_app.state.field_errors import FieldErrors, FieldMap
from crater_app.state.forms import ADVANCED_FIELDS, COMMAND_MODES, JOB_KINDS, FormError, build_spec, job_fields

#: the form's inputs and the job spec's field paths each shows the errors of, for a batch job (``domain.jobs``
#: names ``resources.nvidia.com/gpu``, ``tasks[0].command``, ...; cpu and memory before the accelerators); the
#: other kinds': :func:`~crater_app.state.forms.job_fields`
NEW_JOB_FIELDS: FieldMap = job_fields("batch")
#: the text inputs whose value the form keeps as the user leaves them (:meth:`NewJobState.keep_value`), for the YAML
#: editor, which renders the spec before the form is submitted
TEXT_INPUTS = ("name", "priority", "command", "worker_command", "env", "cpu", "memory", "max_runtime", "shm_size",
               "min_available", "max_retry", "node_selector")
#: the most characters one kept input may have (a request body's limit, :data:`crater_app.api.body.MAX_BODY_BYTES`)
MAX_INPUT_CHARS = body.MAX_BODY_BYTES


class NewJobState(FieldErrors, AppState):
    """/jobs/new: the submit form for every kind (see the module), and its "Edit as YAML" mode. GPU models and the
    per-replica counts come from the nodes' real devices (at most what the largest node has of the chosen model)."""

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
    #: one of :data:`~crater_app.state.forms.JOB_KINDS`, and whether the job may be preempted for other projects' fair
    #: share
    kind: str = "batch"
    preemptible: bool = False
    #: the batch gang's replicas or the pytorch/mpi workers, as typed (the live GPU total reads it)
    replicas: str = "1"
    #: ``fail`` / ``restart`` / ``ignore`` (Volcano's policies), and whether the advanced options are shown
    restart_policy: str = "fail"
    show_advanced: bool = False
    #: the "Edit as YAML" mode: its text (rendered from the form), a key that changes when it is rendered again, and
    #: the last error (its spec path, and the message in the console's language)
    yaml_mode: bool = False
    yaml_text: str = ""
    yaml_key: int = 0
    yaml_error: str = ""
    yaml_error_path: str = ""
    #: the text inputs' values as the user left them (see :data:`TEXT_INPUTS`)
    _values: dict[str, str] = {}
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

    def _workers(self) -> int:
        """The replicas field as a number (0 when it is not one: the form says so on submit)."""
        text = self.replicas.strip()
        return int(text) if text.isascii() and text.isdigit() and len(text) <= 6 else 0

    @rx.var
    def replica_total(self) -> str:
        """Replicas of the whole job: the batch gang's, 1 + the workers (pytorch, mpi), 1 (interactive)."""
        if self.kind == "batch":
            return str(self._workers())
        return str(1 + self._workers()) if self.kind in ("pytorch", "mpi") else "1"

    @rx.var
    def gpu_replicas(self) -> str:
        """Replicas that get the chosen GPUs: every one, except an MPI launcher (it only starts ``mpirun``)."""
        return str(self._workers()) if self.kind == "mpi" else self.replica_total

    @rx.var
    def gpu_total(self) -> str:
        """GPUs of the whole job: :attr:`gpu_replicas` × the GPUs per replica."""
        return str(int(self.gpu_replicas) * int(self.gpus or "0"))

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
        self.kind, self.preemptible, self.replicas, self.restart_policy = "batch", False, "1", "fail"
        self.show_advanced = self.yaml_mode = False
        self.yaml_text = self.yaml_error = self.yaml_error_path = ""
        self._values = {}
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
        """One of :data:`~crater_app.state.forms.JOB_KINDS` (the replicas field keeps its number)."""
        self._forget_field_error("kind")
        if kind in JOB_KINDS:
            self.kind = kind

    @rx.event
    def set_replicas(self, value: str) -> None:
        """The batch gang's replicas or the workers, as typed (at most 9 characters)."""
        self._forget_field_error("replicas")
        self.replicas = str(value)[:9]

    @rx.event
    def set_restart_policy(self, policy: str) -> None:
        """What a failed or evicted replica does to the job: one of ``RESTART_POLICIES``."""
        self._forget_field_error("restart_policy")
        if policy in RESTART_POLICIES:
            self.restart_policy = policy

    @rx.event
    def toggle_advanced(self) -> None:
        """Show or hide the advanced options."""
        self.show_advanced = not self.show_advanced

    @rx.event
    def keep_value(self, name: str, value: str) -> None:
        """The user left text input ``name`` (one of :data:`TEXT_INPUTS`) holding ``value``: kept for the YAML
        editor."""
        if name in TEXT_INPUTS and isinstance(value, str) and len(value) <= MAX_INPUT_CHARS:
            self._values = {**self._values, name: value}

    def _show_error(self, message: str, path: str | None, fields: FieldMap | None = None) -> None:
        """As ``FieldErrors._show_error``, with the inputs of the chosen kind's spec paths
        (:func:`~crater_app.state.forms.job_fields`); an error on an advanced option opens them."""
        super()._show_error(message, path, job_fields(self.kind) if fields is None else fields)
        if any(name in self.field_errors for name in ADVANCED_FIELDS):
            self.show_advanced = True

    def _spec(self, values: dict, draft: bool = False) -> dict:
        """The spec of the form: its text inputs ``values`` and the choices held here (see
        :func:`~crater_app.state.forms.build_spec`). Raises FormError."""
        def text(name: str, default: str = "") -> str:
            return str(values.get(name, default))

        return build_spec(
            name=text("name"), command=text("command"), command_mode=self.command_mode, env=text("env"),
            cpu=text("cpu", self.default_cpu), memory=text("memory", self.default_memory), gpus=self.gpus,
            model=self.model, resource=self._chosen("resource", "nvidia.com/gpu"),
            max_runtime=text("max_runtime"), priority=text("priority", "0"), kind=self.kind,
            preemptible=self.preemptible, project=self.project, replicas=self.replicas,
            worker_command=text("worker_command"), shm_size=text("shm_size"), min_available=text("min_available"),
            restart_policy=self.restart_policy, max_retry=text("max_retry"), node_selector=text("node_selector"),
            draft=draft,
        )

    @rx.event
    def open_yaml(self) -> None:
        """"Edit as YAML": the spec the form would submit, rendered as YAML into the editor (an empty command is
        left for the editor to fill); a field that cannot be read shows its error and the form stays."""
        self._clear_errors()
        try:
            spec = self._spec(self._values, draft=True)
        except FormError as exc:
            self._form_failed(exc)
            return
        self.yaml_text = yaml_loader.dump(spec)
        self.yaml_key += 1
        self.yaml_error = self.yaml_error_path = ""
        self.yaml_mode = True

    @rx.event
    def close_yaml(self) -> None:
        """Back to the form (as it was; edits of the YAML are not copied into it)."""
        self.yaml_mode = False
        self.yaml_error = self.yaml_error_path = ""

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
        try:
            spec = self._spec({name: str(form.get(name, "")) for name in TEXT_INPUTS})
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
        yield self._submitted_job(job.id)

    def _submitted_job(self, job_id: int):
        """After a submit: the form back to its defaults, and to the new job's page."""
        self._reset_form()
        # The next visit shows the form once its on_load has read the nodes and projects again: a form left loaded
        # would show at once and be rebuilt (a new key) under the user's hands when that on_load ends.
        self.loaded = False
        return rx.redirect(f"/jobs/{job_id}")

    @rx.event
    async def submit_yaml(self, form: dict):
        """Submit the editor's text as it is: read as the API reads a YAML body (:func:`crater_app.api.body.
        decode_text`, a Kubernetes manifest refused with what it is) and given to the same service call as the
        form's spec. An error's spec path and message are shown above the text."""
        text = str(form.get("spec_yaml", ""))
        self.yaml_text, self.yaml_error, self.yaml_error_path = text, "", ""
        self.submitting = True
        yield
        try:
            if len(text.encode("utf-8", "surrogatepass")) > body.MAX_BODY_BYTES:
                raise TooLarge("http.body_too_large", None, limit=body.MAX_BODY_BYTES)
            documents = body.decode_text(text, "yaml")
            refuse_manifests(documents)
            job = await self.call(jobs.submit_job, body.one_document(documents))
        except Unauthenticated:
            self.submitting = False
            yield self.signed_out()
            return
        except CraterError as exc:
            self.submitting = False
            self.yaml_error, self.yaml_error_path = exc.message_in(self.lang), exc.field or ""
            return
        self.submitting = False
        yield self._submitted_job(job.id)
