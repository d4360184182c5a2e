"""Crater settings: the only reader of ``os.environ`` (pydantic-settings, prefix ``CRATER_``), and the only writer
(``GRANIAN_WORKERS`` for Reflex, :func:`export_worker_count`)."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

#: the longest a cookie may be kept (RFC 6265bis §5.5: user agents cap Max-Age and Expires at 400 days)
MAX_COOKIE_AGE_S = 400 * 86400


class Settings(BaseSettings):
    """Process-wide configuration read from ``CRATER_*`` environment variables.

    Attributes:
        data_dir: folder holding the SQLite database, job logs and working directories.
        database_url: SQLAlchemy URL; empty means ``sqlite:///<data_dir>/crater.db``.
        backend: cluster backend name; ``local`` is the embedded default.
        local_gpus: virtual accelerators for machines without NVML, ``"4"`` or
            ``"4:NVIDIA-A100-SXM4-80GB"``; real NVML devices win when present.
        admin_password: password of the first admin (user ``admin``); random when empty.
        secret_key: the deployment secret (keys derived from it seal the OIDC pending sign-in cookie); when empty,
            a random key kept in ``<data_dir>/secret_key``. Several machines must share one.
        token_ttl_s: lifetime of a login access token, seconds.
        cancel_grace_s: seconds between SIGTERM and SIGKILL when a job is cancelled.
        loop_interval_s: period of the placement/reconcile loop, seconds.
        lease_ttl_s: seconds a leader lease stays valid without renewal.
        port: the single HTTP port for console and API.
        workers: ``CRATER_WORKERS``, how many web worker processes ``reflex run --env prod`` starts (granian
            workers behind one port); 0 means one per CPU core (``os.cpu_count()``). Default 1: on SQLite every write
            takes the database's one write lock, and a submission with quotas decides under it, so a second worker
            on 2 cores measured fewer submissions per second, not more (bench/README.md); several workers pay off
            for reads (job pages) and on PostgreSQL. Every worker serves console and API; only the one holding the
            database lease runs the loops (placement, reconcile, admission), and the others ring its doorbell after
            a submission (``services.doorbell``). An explicit ``GRANIAN_WORKERS`` wins. See "Workers" in README.md.
        default_job_cpu, default_job_memory: the ``cpu``/``memory`` request of a job that names none (Kubernetes
            quantities, ``""`` for none), the same through the API and the console's form
            (:mod:`crater_app.domain.job_defaults`).

    Governance:
        signup_enabled: local self sign-up on the login page; new accounts wait as ``pending``.
        default_max_sessions, default_max_accelerators_per_job, default_max_runtime_s: per-user limits when the
            user has none of their own (``None`` = no limit).
        approval_gpu_threshold: a job asking for more accelerators than this waits (``Held``) for an approval.
        auto_extend_max_s, auto_extend_window_s: an extension of ``max_runtime`` by less than
            ``auto_extend_max_s`` is granted automatically at most once per ``auto_extend_window_s`` per user
            (Crater's default: 12 h once per 48 h); 0 turns the rule off.
        billing_enabled: charge points for run time and refuse submissions when balances are exhausted.
        billing_period: ``month`` (free allowances renew on the first of each month, UTC).
        billing_charge_interval_s: the leader charges running jobs at most this often, seconds (a job that ends
            is settled up to its end at the next charge).
        local_isolation: ``auto`` (default), ``on`` or ``off``: where Crater runs as root, each user's jobs on the
            local backend run as an unprivileged OS account of their own, away from Crater's data (``on`` refuses to
            start where that is impossible); otherwise as Crater's own user (docs/local-backend.md).
        local_uid_min, local_uid_max: the uids (and gids) job accounts get, inclusive (default 60514-61183, the
            span systemd leaves free below its ``DynamicUser`` range). local_account_prefix: their names' start.
        local_cgroups: ``auto`` (default), ``on`` or ``off``: a cgroup per job with its memory, CPU and process
            limits where Crater can create one (``on`` refuses to start without); else memory by ``RLIMIT_DATA``.
        local_cgroup_root: where the cgroup hierarchies are mounted. local_cgroup_parent: the folder, in each
            hierarchy, that holds Crater's cgroups. local_pids_max: processes (and threads) per job; 0 = no limit.
        max_attempts: how many times a job may run (``CRATER_MAX_ATTEMPTS``, at least 1): a job preempted on its
            last attempt, or one with ``requeue_on_preemption`` off, ends ``Failed`` instead of going back to the
            queue (Kueue's ``waitForPodsReady.requeuingStrategy.backoffLimitCount`` plays the same part).

    Kubernetes backend (``CRATER_BACKEND=kubernetes``; docs/kubernetes-backend.md):
        kube_config: a kubeconfig file to use; empty: the standard ``KUBECONFIG`` variable, ``~/.kube/config``, else
            the in-cluster service account. kube_context: the kubeconfig context (empty: its current one).
        kube_namespace_mode: ``shared`` (every project's jobs in ``kube_namespace``) or ``per-project`` (a namespace
            ``<kube_namespace_prefix><project slug>`` each, made with labels and a default-deny NetworkPolicy).
        kube_namespace, kube_namespace_prefix: see above. kube_crater_namespace: the namespace Crater runs in
            (session pods let it in).
        kube_scheduler: ``schedulerName`` of the jobs (``volcano``).
        kube_accelerators: the extended resource names counted as accelerators (comma-separated).
        kube_model_labels: ``<resource>=<node label>`` pairs (comma-separated) naming the node label that gives a
            resource's model, over the defaults (``nvidia.com/gpu=nvidia.com/gpu.product``, ...).
        kube_service_account, kube_spaces_claim, kube_image_pull_policy, kube_image_pull_secrets (comma-separated),
            kube_priority_class: the pods' ServiceAccount, the PersistentVolumeClaim of the project and user spaces,
            the pull policy and Secrets, the jobs' PriorityClass.
        kube_member_queues: members' shares as child queues of the project's Queue (``spec.parent``; needs Volcano's
            ``capacity`` plugin with hierarchy enabled); ``false``: one flat Queue per project, the shares enforced by
            Crater's admission alone.
    Storage:
        volume_claims: ``CRATER_VOLUME_CLAIMS``, the PersistentVolumeClaims a job may mount as a ``pvc`` volume, a
            JSON object claim name -> the projects that may mount it (``"*"``: every project), e.g.
            ``{"imagenet": ["*"], "vision-ckpt": ["vision"]}``; a claim not in it is refused at submission
            (``domain.volume_claims``). Default: none.
        kube_spaces_claim: ``CRATER_KUBE_SPACES_CLAIM``, the PersistentVolumeClaim that holds every project's and
            user's spaces (``source: project`` / ``user`` volumes mount their own folder of it): it can never be
            registered in ``volume_claims`` (a settings error at start-up) nor mounted as a ``pvc`` volume.

    Console sign-in:
        public_urls: ``CRATER_PUBLIC_URLS``, the URLs browsers reach Crater at (comma- or space-separated). Cookie
            authenticated writes and the console's websocket must come from one of their origins, CORS answers only
            them, and the session cookie is ``Secure`` when the first is ``https``. Empty: the request's own host
            (same origin), and no CORS. Read by ``auth.origins.parse_public_urls``; checked at start-up
            (``services.console_sessions.check_settings``).
        session_cookie_name: the console session cookie (``HttpOnly``, ``SameSite=Lax``).
        session_idle_timeout_s: a console session ends after this many seconds without a request (12 h).
        session_lifetime_s: a console session ends at the latest this many seconds after sign-in (7 days).

        oidc_*: OpenID Connect login (authlib). ``oidc_issuer`` or ``oidc_client_id`` empty turns it off;
            ``oidc_discovery_url`` defaults to ``<issuer>/.well-known/openid-configuration``; ``oidc_group_mapping`` is a JSON object
            ``{"<group>": {"project": "<name>", "role": "member"}}``.
    """

    model_config = SettingsConfigDict(env_prefix="CRATER_", extra="ignore")

    data_dir: Path = Path("./var")
    database_url: str = ""
    backend: str = "local"
    local_gpus: str = ""
    admin_password: str = ""
    secret_key: str = ""
    token_ttl_s: int = 12 * 3600
    cancel_grace_s: float = 10.0
    loop_interval_s: float = 0.2
    lease_ttl_s: float = 10.0
    port: int = Field(default=3000, validation_alias="PORT")
    workers: int = Field(default=1, ge=0, le=64)
    api_url: str = ""

    default_job_cpu: str = "1"
    default_job_memory: str = "2Gi"

    signup_enabled: bool = False
    default_max_sessions: int | None = None
    default_max_accelerators_per_job: int | None = None
    default_max_runtime_s: int | None = None
    approval_gpu_threshold: int = 8
    auto_extend_max_s: int = 12 * 3600
    auto_extend_window_s: int = 48 * 3600
    billing_enabled: bool = False
    billing_period: str = "month"
    billing_charge_interval_s: float = 60.0

    local_isolation: str = "auto"
    local_uid_min: int = 60514
    local_uid_max: int = 61183
    local_account_prefix: str = "crater-"
    local_cgroups: str = "auto"
    local_cgroup_root: Path = Path("/sys/fs/cgroup")
    local_cgroup_parent: str = "crater"
    local_pids_max: int = 16384
    max_attempts: int = Field(default=5, ge=1)
    public_urls: str = ""
    kube_config: str = ""
    kube_context: str = ""
    kube_namespace_mode: str = "shared"
    kube_namespace: str = "crater-jobs"
    kube_namespace_prefix: str = "crater-"
    kube_crater_namespace: str = "crater"
    kube_scheduler: str = "volcano"
    kube_accelerators: str = "nvidia.com/gpu,amd.com/gpu,huawei.com/Ascend910"
    kube_model_labels: str = ""
    kube_service_account: str = ""
    kube_spaces_claim: str = "crater-spaces"
    kube_image_pull_policy: str = "IfNotPresent"
    kube_image_pull_secrets: str = ""
    kube_priority_class: str = ""
    kube_member_queues: bool = True
    session_cookie_name: str = "crater_session"
    session_idle_timeout_s: int = Field(default=12 * 3600, ge=60, le=MAX_COOKIE_AGE_S)
    session_lifetime_s: int = Field(default=7 * 86400, ge=60, le=MAX_COOKIE_AGE_S)

    volume_claims: dict[str, list[str]] = Field(default_factory=dict)

    oidc_issuer: str = ""
    oidc_discovery_url: str = ""
    oidc_client_id: str = ""
    oidc_client_secret: str = ""
    oidc_scopes: str = "openid profile email"
    oidc_redirect_url: str = ""
    oidc_username_claim: str = "preferred_username"
    oidc_email_claim: str = "email"
    oidc_groups_claim: str = "groups"
    oidc_group_mapping: str = "{}"
    oidc_display_name: str = "Single sign-on"

    @model_validator(mode="after")
    def _spaces_claim_not_registered(self) -> "Settings":
        """The spaces claim holds every project's and user's files: registering it would let any job of the
        projects listed mount all of them."""
        if self.kube_spaces_claim in self.volume_claims:
            raise ValueError(f"CRATER_VOLUME_CLAIMS registers {self.kube_spaces_claim!r}, the claim of every "
                             "project's and user's spaces (CRATER_KUBE_SPACES_CLAIM): it cannot be mounted as a pvc "
                             "volume; remove it")
        return self

    @property
    def worker_count(self) -> int:
        """The web workers to start: ``workers``, or one per CPU core when it is 0."""
        return self.workers or os.cpu_count() or 1

    @property
    def resolved_database_url(self) -> str:
        """The database URL in use: ``database_url`` or the SQLite file in ``data_dir``."""
        if self.database_url:
            return self.database_url
        return f"sqlite:///{self.data_dir.resolve() / 'crater.db'}"


def export_worker_count(settings: Settings) -> int:
    """Make Reflex start :attr:`Settings.worker_count` granian workers (it reads ``GRANIAN_WORKERS`` when it
    starts the production server, ``reflex/utils/exec.py``), unless ``GRANIAN_WORKERS`` is set already; returns the
    count in effect. Called by ``rxconfig.py``, in the ``reflex run`` process, before the server starts."""
    current = os.environ.get("GRANIAN_WORKERS")
    if current is None:
        os.environ["GRANIAN_WORKERS"] = current = str(settings.worker_count)
    return int(current)


@lru_cache
def get_settings() -> Settings:
    """Return the process-wide :class:`Settings` (cached; call ``get_settings.cache_clear()`` in tests)."""
    return Settings()
