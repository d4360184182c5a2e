"""/jobs/[id]: a job's status, why it waits, its events, its replicas, a live log tail of the replica picked
(the first by default) while it is not finished, and its manifest where the backend keeps one; cancel and
resubmit."""

from __future__ import annotations

import reflex as rx

from crater_app.domain.errors import CraterError, NotFound, Unauthenticated
from crater_app.services import console, jobs
from crater_app.state import live, messages, replica_views, task_views, views
from crater_app.state.base import AppState


def _route_job_id(path: str) -> int | None:
    """The job id in ``/jobs/<id>``, or ``None``."""
    parts = path.rstrip("/").split("/")
    if len(parts) == 3 and parts[1] == "jobs" and parts[2].isdigit() and len(parts[2]) < 12:
        return int(parts[2])
    return None


class JobDetailState(AppState):
    """/jobs/[id]: status, events and a live log tail while the job is not finished."""

    job: dict[str, str] = {}
    argv: list[str] = []
    events: list[dict[str, str]] = []
    logs: str = ""
    replicas: list[dict[str, str]] = []
    #: a job with several tasks: one block per task (``task_views.task_rows``) and each task's argument list
    tasks: list[dict[str, str]] = []
    task_argvs: list[list[str]] = []
    #: the replica whose log is shown (``replica_views.replica_key``; ``""``: the first)
    log_key: str = ""
    keeps_manifests: bool = False
    manifest: str = ""
    manifest_open: bool = False
    error: str = ""
    not_found: bool = False
    loaded: bool = False
    acting: bool = False
    _poll_gen: int = 0

    @rx.var
    def finished(self) -> bool:
        """The job reached Succeeded, Failed or Cancelled."""
        return self.job.get("phase", "") in views.TERMINAL_PHASES

    @rx.var
    def can_cancel(self) -> bool:
        """Whether a cancel would do anything: the job is not final and not already being stopped."""
        return bool(self.job) and not self.finished and self.job.get("phase", "") != "Stopping"

    @rx.var
    def reason_text(self) -> str:
        """The job's status sentence in the console's language (a hold sentence from its reason code)."""
        return messages.job_reason_text(self.lang, self.job)

    @rx.var
    def waiting(self) -> bool:
        """The job waits: ``Held`` by Crater (quota, share, sessions, capacity, fair share, approval) or ``Queued``
        (admitted, waiting for the machine to place it)."""
        return self.job.get("phase", "") in ("Held", "Queued")

    @rx.var
    def wait_lead(self) -> str:
        """The first line of the "Why is this job waiting?" box: held by Crater, or admitted and being placed."""
        key = "job.waiting.held" if self.job.get("phase", "") == "Held" else "job.waiting.admitted"
        return self.msg(key)

    @rx.var
    def event_rows(self) -> list[dict[str, str]]:
        """The timeline with reason words and messages in the console's language (``reason`` stays the API word)."""
        return messages.event_rows(self.lang, self.events)

    @rx.var
    def view_job(self) -> dict[str, str]:
        """The job's fields with its run time and max runtime written in the console's language."""
        return views.durations(self.lang, self.job)

    @rx.var
    def device_list(self) -> list[str]:
        """Assigned device indices."""
        devices = self.job.get("devices", "")
        return [d.strip() for d in devices.split(",") if d.strip()]

    @rx.var
    def replica_keys(self) -> list[str]:
        """The replicas the log selector offers (``task/index``)."""
        return [row["key"] for row in self.replicas]

    @rx.var
    def replica_rows(self) -> list[dict[str, str]]:
        """The replicas table with phases and reasons in the console's language."""
        return replica_views.localized_rows(self.lang, self.replicas)

    @rx.var
    def task_blocks(self) -> list[dict[str, str]]:
        """The tasks' blocks with their per-replica resources in the console's language (``[]``: one task)."""
        return task_views.localized_tasks(self.lang, self.tasks)

    @rx.var
    def log_restarts(self) -> str:
        """How often the replica whose log is shown has restarted (``""``: never)."""
        return task_views.log_restarts(self.replicas, self.log_key)

    def _log_target(self) -> dict:
        """``task``/``replica`` of the log shown (``job_view``'s keyword arguments)."""
        task, replica = replica_views.parse_key(self.log_key)
        return {"task": task, "replica": replica}

    def _apply(self, view) -> None:  # noqa: ANN001 - console.JobView
        detail = views.job_detail(view.job)
        if detail != self.job:
            self.job = detail
        if list(view.job.command) != self.argv:
            self.argv = list(view.job.command)
        events = [views.event_row(e) for e in view.events]
        if events != self.events:
            self.events = events
        tasks, argvs = task_views.task_rows(view.job)
        if tasks != self.tasks or argvs != self.task_argvs:
            self.tasks, self.task_argvs = tasks, argvs
        rows = [replica_views.replica_row(r) for r in view.replicas]
        if rows != self.replicas:
            self.replicas = rows
        wanted = replica_views.chosen_key(rows, self.log_key)
        if wanted != self.log_key:
            self.log_key = wanted
        # a log read for another replica than the one now picked is dropped (the next read brings the right one)
        if replica_views.shown_key(rows, view.log_task, view.log_replica) == wanted and view.logs != self.logs:
            self.logs = view.logs
        if view.keeps_manifests != self.keeps_manifests:
            self.keeps_manifests = view.keeps_manifests
        if view.manifest != self.manifest:
            self.manifest = view.manifest
        self.loaded = True
        self.not_found = False

    @rx.event
    async def load(self):
        """on_load: read the job; keep refreshing while it is not finished."""
        self.error = ""
        self.acting = False
        job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            self.not_found, self.loaded = True, True
            return None
        if self.job.get("id") != str(job_id):
            self.job, self.argv, self.events, self.logs, self.loaded = {}, [], [], "", False
            self.replicas, self.log_key, self.tasks, self.task_argvs = [], "", [], []
            self.keeps_manifests, self.manifest, self.manifest_open = False, "", False
        try:
            view = await self.call(console.job_view, job_id, **self._log_target())
        except Unauthenticated:
            return self.signed_out()
        except NotFound:
            self.job, self.argv, self.events, self.logs = {}, [], [], ""
            self.not_found, self.loaded = True, True
            return None
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            return None
        self._apply(view)
        return None if self.finished else JobDetailState.poll

    @rx.event(background=True)
    async def poll(self):
        """Refresh status, events and log tail every 2 s until the job finishes or the tab leaves."""
        async with self:
            job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            return

        def show(_: live.Read, view) -> bool:  # noqa: ANN001 - console.JobView
            self._apply(view)
            return self.finished

        await live.refresh(self, f"job {job_id}", lambda: live.Read(console.job_view, (job_id,), self._log_target()),
                           show, gone=(Unauthenticated, NotFound))

    @rx.event
    async def pick_replica(self, key: str):
        """Show the log of replica ``key`` (``task/index``) at once; a running job's refresh goes on with it."""
        job_id = _route_job_id(self.router.url.path)
        if job_id is None or key not in self.replica_keys:
            return None
        self.log_key, self.logs = key, ""
        try:
            view = await self.call(console.job_view, job_id, **self._log_target())
        except Unauthenticated:
            return self.signed_out()
        except CraterError as exc:
            self.error = exc.message_in(self.lang)
            return None
        self._apply(view)
        return None

    @rx.event
    def toggle_manifest(self):
        """Show or hide the manifest's YAML (hidden when the page opens)."""
        self.manifest_open = not self.manifest_open

    @rx.event
    async def cancel(self):
        """Cancel the job (SIGTERM, then SIGKILL after the grace period)."""
        job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            return None
        self.error = ""
        job, stop = await self.guarded(jobs.cancel_job, job_id)
        if job is None:
            return stop
        self.job = views.job_detail(job)
        return rx.toast.info(self.msg("job.cancel.requested"))

    @rx.event
    async def resubmit(self):
        """Submit the same spec as a new job and open it."""
        job_id = _route_job_id(self.router.url.path)
        if job_id is None:
            return None
        self.error = ""
        job, stop = await self.guarded(jobs.resubmit_job, job_id)
        if job is None:
            return stop
        return rx.redirect(f"/jobs/{job.id}")
