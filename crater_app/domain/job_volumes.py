"""Where a job's replicas run and what they mount: ``volumes``, ``shm_size``, ``node_selector`` and
``ttl_after_finished`` of a :class:`~crater_app.domain.jobs.JobSpec`, and their checks.

- ``volumes``: at most :data:`MAX_VOLUMES` of ``{source, claim, sub_path, mount_path, read_only}`` mounted into every
  replica; ``source`` ``project`` (the project's space), ``user`` (the user's space) or ``pvc`` (a registered
  PersistentVolumeClaim ``claim``, a DNS-1123 subdomain as Kubernetes names objects); ``sub_path`` relative inside it
  (no ``..``); ``mount_path`` absolute, not ``/``, without ``..``, unique, not at or under ``/proc``, ``/sys`` or
  ``/dev`` (:data:`SYSTEM_PATHS`; ``/dev/shm`` and below excepted) and not at or under ``/dev/shm`` when ``shm_size``
  is set (that mount is the memory ``emptyDir``).
- ``shm_size``: a memory quantity (bytes, > 0) for a memory-backed ``emptyDir`` at ``/dev/shm``; Kubernetes counts
  a memory ``emptyDir`` against the container's memory, so it may not exceed any replica's ``memory`` request
  (checked with the tasks: :func:`crater_app.domain.job_kinds.normalize_tasks`).
- ``node_selector``: node labels every replica's node must have, in Kubernetes' label syntax (``IsQualifiedName``
  keys, ``IsValidLabelValue`` values).
- ``ttl_after_finished``: seconds the finished job's objects are kept (Volcano's ``ttlSecondsAfterFinished``),
  60 seconds to 30 days (:func:`crater_app.domain.jobs.parse_ttl`).
"""

from __future__ import annotations

import posixpath
import re

from pydantic import BaseModel, ConfigDict, StrictBool, StrictStr

from crater_app.domain import field_paths
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import is_text
from crater_app.domain.resources import MEMORY, parse_amount

VOLUME_SOURCES = ("project", "user", "pvc")
MAX_VOLUMES = 32
#: a mount or sub path (Linux' PATH_MAX is 4096; a path of a thousand characters is a mistake)
MAX_PATH_CHARS = 1024
SHM_PATH = "/dev/shm"
#: the folders the container runtime mounts itself (procfs, sysfs, the device nodes): runc refuses a mount at or
#: under them (``/proc``, ``/sys``) or it hides what the runtime set up (``/dev``); ``/dev/shm`` is left to the
#: ``shm_size`` rule (a memory volume at ``/dev/shm`` is the usual way to give a container more shared memory)
SYSTEM_PATHS = ("/proc", "/sys", "/dev")
MAX_NODE_SELECTOR = 32
#: Kubernetes' limits: a label name (and value) at most 63 characters, a prefix (DNS-1123 subdomain) at most 253
MAX_LABEL_CHARS = 63
MAX_SUBDOMAIN_CHARS = 253
_LABEL_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class VolumeSpec(BaseModel):
    """One entry of ``volumes`` (see the module docstring). Unknown fields are rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    source: StrictStr
    mount_path: StrictStr
    claim: StrictStr | None = None
    sub_path: StrictStr = ""
    read_only: StrictBool = False


def _under(path: str, top: str) -> bool:
    return path == top or path.startswith(top + "/")


def _path_text(value: str) -> bool:
    return len(value) <= MAX_PATH_CHARS and is_text(value) and "\\" not in value


def check_volumes(volumes: list[VolumeSpec], shm: bool) -> None:
    """The ``volumes`` list (``shm``: ``shm_size`` is set).

    Raises:
        InvalidInput: ``job.volume_count`` (``count``, ``max``) naming ``volumes``; naming ``volumes[i].source``:
            ``job.volume_source`` (``sources``, ``value``); ``volumes[i].claim``: ``job.volume_claim_required``,
            ``job.volume_claim_unexpected`` (``source``), ``job.volume_claim_format`` (``max``);
            ``volumes[i].sub_path``: ``job.volume_sub_path`` (``max``); ``volumes[i].mount_path``:
            ``job.volume_mount_path_format`` (``max``), ``job.volume_mount_path_absolute``,
            ``job.volume_mount_path_dotdot``, ``job.volume_mount_path_root``, ``job.volume_mount_path_system``
            (``path``: the system folder), ``job.volume_mount_path_shm``
            (``path``), ``job.volume_mount_path_duplicate`` (``path``, ``first``: the index of the volume already
            mounted there).
    """
    if len(volumes) > MAX_VOLUMES:
        raise InvalidInput("job.volume_count", "volumes", count=len(volumes), max=MAX_VOLUMES)
    mounted: dict[str, int] = {}
    for i, volume in enumerate(volumes):
        at = field_paths.item("volumes", i)
        if volume.source not in VOLUME_SOURCES:
            raise InvalidInput("job.volume_source", f"{at}.source", sources=", ".join(VOLUME_SOURCES),
                               value=volume.source[:32])
        if volume.source == "pvc":
            if not volume.claim:
                raise InvalidInput("job.volume_claim_required", f"{at}.claim")
            if len(volume.claim) > MAX_SUBDOMAIN_CHARS or not _SUBDOMAIN.fullmatch(volume.claim):
                raise InvalidInput("job.volume_claim_format", f"{at}.claim", max=MAX_SUBDOMAIN_CHARS)
        elif volume.claim is not None:
            raise InvalidInput("job.volume_claim_unexpected", f"{at}.claim", source=volume.source)
        if volume.sub_path:
            if not _path_text(volume.sub_path) or volume.sub_path.startswith("/") or ".." in volume.sub_path.split("/"):
                raise InvalidInput("job.volume_sub_path", f"{at}.sub_path", max=MAX_PATH_CHARS)
        field = f"{at}.mount_path"
        if not _path_text(volume.mount_path):
            raise InvalidInput("job.volume_mount_path_format", field, max=MAX_PATH_CHARS)
        parts = volume.mount_path.split("/")
        if not volume.mount_path.startswith("/"):
            raise InvalidInput("job.volume_mount_path_absolute", field)
        if ".." in parts:
            raise InvalidInput("job.volume_mount_path_dotdot", field)
        path = posixpath.normpath(volume.mount_path)
        if path.startswith("//"):  # normpath keeps a leading '//' (POSIX leaves it implementation-defined)
            path = "/" + path.lstrip("/")
        if path == "/":
            raise InvalidInput("job.volume_mount_path_root", field)
        system = next((top for top in SYSTEM_PATHS if _under(path, top)), None)
        if system is not None and not _under(path, SHM_PATH):
            raise InvalidInput("job.volume_mount_path_system", field, path=system)
        if shm and _under(path, SHM_PATH):
            raise InvalidInput("job.volume_mount_path_shm", field, path=SHM_PATH)
        if path in mounted:
            raise InvalidInput("job.volume_mount_path_duplicate", field, path=path, first=mounted[path])
        mounted[path] = i


def parse_shm_size(raw: object) -> int | None:
    """``shm_size`` in bytes (a Kubernetes memory quantity: ``"8Gi"``, ``1073741824``), ``None`` when not given.

    Raises:
        InvalidInput: the quantity errors of :func:`~crater_app.domain.resources.parse_amount` naming ``shm_size``;
            ``job.shm_size_min`` for ``0``.
    """
    if raw is None:
        return None
    size = parse_amount(MEMORY, raw, "shm_size")
    if size <= 0:
        raise InvalidInput("job.shm_size_min", "shm_size")
    return size


def check_node_selector(selector: dict[str, str]) -> None:
    """``node_selector`` in Kubernetes' label syntax: at most :data:`MAX_NODE_SELECTOR` entries; each key a
    qualified name (``[prefix/]name``: the prefix a DNS-1123 subdomain of at most 253 characters, the name at most
    63 characters of letters, digits, ``-``, ``_``, ``.`` starting and ending with a letter or digit); each value
    empty or such a name (apimachinery's ``IsQualifiedName`` and ``IsValidLabelValue``).

    Raises:
        InvalidInput: ``job.node_selector_count`` (``count``, ``max``) naming ``node_selector``;
            ``job.node_selector_key`` (``key``, ``max``, ``prefix_max``) and ``job.node_selector_value`` (``key``,
            ``max``) naming ``node_selector.<key>``.
    """
    if len(selector) > MAX_NODE_SELECTOR:
        raise InvalidInput("job.node_selector_count", "node_selector", count=len(selector), max=MAX_NODE_SELECTOR)
    for key, value in selector.items():
        field = field_paths.key("node_selector", key)
        prefix, slash, name = key.rpartition("/")
        good = (len(name) <= MAX_LABEL_CHARS and _LABEL_NAME.fullmatch(name) is not None
                and (not slash or (0 < len(prefix) <= MAX_SUBDOMAIN_CHARS and _SUBDOMAIN.fullmatch(prefix))))
        if not good:
            raise InvalidInput("job.node_selector_key", field, key=field_paths.shown(key), max=MAX_LABEL_CHARS,
                               prefix_max=MAX_SUBDOMAIN_CHARS)
        if value and (len(value) > MAX_LABEL_CHARS or not _LABEL_NAME.fullmatch(value)):
            raise InvalidInput("job.node_selector_value", field, key=field_paths.shown(key), max=MAX_LABEL_CHARS)
