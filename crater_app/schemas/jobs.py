"""Jobs, their pages and their events as the API shows them."""

from __future__ import annotations

from datetime import datetime

from crater_app.schemas.base import Public


class JobPublic(Public):
    """A job as the API returns it. ``resources`` as submitted; ``devices`` assigned indices; times UTC.

    Why it is where it is: ``reason`` (a sentence, in the reader's language through the API; for a ``Held`` job it
    names the limit, the usage, the position and, behind a blocked job, which one and its expected start),
    ``reason_code`` (Crater's holds: ``quota``, ``share``, ``sessions``, ``capacity``, ``fairshare``, ``queue``,
    ``reclaim``, ``approval``, ``preempted``, ``requeued``, ``preempted_final``, ``preempted_exhausted``; the
    backend's and Crater's status codes: ``placement.pending``, ``placement.waiting``, ``placement.queued``,
    ``job.stopping_cancelled``, ...; ``""`` when the reason has no code) and ``reason_args`` (its values in Crater's
    units: resource lists, seconds, ``expected_at`` as ISO 8601 UTC). ``admitted_at``: when it passed admission
    (``Held`` -> ``Queued``); ``preemptible``: may be stopped to give a
    project its deserved share back; ``requeue_on_preemption``: then it goes back to the queue; ``attempt``: the
    run it is on (1 for the first); ``stop_requested_at``: when a stop was asked for (the job is ``Stopping``
    until its last process has exited). ``started_at`` is the start of its current (or last) run; a job back in
    the queue after a preemption keeps its last run's ``started_at``/``finished_at`` until it starts again.

    Its tasks: ``kind`` ``batch``, ``pytorch``, ``mpi`` or ``interactive``; ``tasks`` each ``{name, replicas, image,
    command, args, env, working_dir, resources (per replica, as submitted), ports: [{name, port, protocol}],
    ends_job}`` (``[]`` for a job written before tasks existed: the single task of ``image``/``command``/...);
    ``resources``, ``gpus`` are then the totals over all replicas (the single-task form's ``resources`` as
    submitted); ``image``/``command``/``env``/``working_dir`` the first task's. ``min_available`` the gang
    (``None``: all replicas); ``restart_policy`` and ``max_retry``; ``volumes`` (``{source, claim, sub_path,
    mount_path, read_only}``); ``shm_size_bytes`` (bytes, ``None``: the backend's default); ``node_selector``;
    ``ttl_after_finished`` (seconds, ``None``: kept).
    """

    id: int
    uid: str
    name: str
    project: str
    user: str
    image: str
    command: list[str]
    env: dict[str, str]
    working_dir: str | None
    phase: str
    reason: str
    exit_code: int | None
    resources: dict
    accelerator_model: str | None
    gpus: int
    devices: list[int]
    max_runtime: int | None
    priority: int
    created_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    resubmitted_from: int | None = None
    kind: str = "batch"
    preemptible: bool = False
    reason_code: str = ""
    reason_args: dict = {}
    admitted_at: datetime | None = None
    attempt: int = 1
    requeue_on_preemption: bool = True
    stop_requested_at: datetime | None = None
    tasks: list[dict] = []
    min_available: int | None = None
    restart_policy: str = "fail"
    max_retry: int = 0
    volumes: list[dict] = []
    shm_size_bytes: int | None = None
    node_selector: dict[str, str] = {}
    ttl_after_finished: int | None = None


class JobPage(Public):
    """One page of jobs: ``items`` newest first and the ``total`` matching the filter."""

    items: list[JobPublic]
    total: int
    page: int
    page_size: int


class JobEventPublic(Public):
    """One job event: ``phase`` after it, ``reason`` word, ``message`` sentence (English, or a backend's text kept
    verbatim), ``at`` UTC, and the message as ``code`` + ``args`` (``event.<code>`` in the catalogues; empty when
    the message has no code)."""

    id: int
    at: datetime
    phase: str
    reason: str
    message: str
    code: str = ""
    args: dict = {}
