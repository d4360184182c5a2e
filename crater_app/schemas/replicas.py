"""A job's replicas and its rendered manifest as the API shows them (``/api/v1/jobs/{id}/replicas``,
``/api/v1/jobs/{id}/manifest``)."""

from __future__ import annotations

from pydantic import Field

from crater_app.schemas.base import Public


class ReplicaPublic(Public):
    """One replica of a job as its backend sees it now: ``task`` and ``replica`` (0-based index in the task),
    ``phase`` (``Pending``, ``Running``, ``Succeeded``, ``Failed``, or the backend's own word), ``node`` (``""``
    before placement), ``devices`` (accelerator indices on that node), ``exit_code`` (as a shell reports it, ``None``
    while it runs), ``reason`` (CamelCase: ``OOMKilled``, ``Evicted``, ``ImagePullBackOff``, ...), ``message`` (the
    backend's text) and ``restarts``."""

    task: str = Field(description="the task's name, e.g. worker")
    replica: int = Field(description="the replica's index in its task, from 0")
    phase: str = Field(description="Pending, Running, Succeeded, Failed, or the backend's own word")
    node: str = Field(description="the node it runs on, empty before placement")
    devices: list[int] = Field(description="accelerator indices on that node")
    exit_code: int | None = Field(description="exit status (128 + n for signal n), null while it runs")
    reason: str = Field(description="CamelCase reason: Completed, Error, OOMKilled, Evicted, ImagePullBackOff, ...")
    message: str = Field(description="the backend's own text")
    restarts: int = Field(description="how many times it was restarted")


class ManifestList(Public):
    """The Kubernetes objects a backend made for a job, as a Kubernetes ``v1`` ``List`` (what ``kubectl get -o json``
    gives for several objects): ``items`` each a full object with ``apiVersion`` and ``kind``, as the backend keeps
    it."""

    apiVersion: str = Field(default="v1", description="always v1")
    kind: str = Field(default="List", description="always List")
    items: list[dict] = Field(description="the objects (a Volcano Job, its Services, ...) as the backend keeps them")
