"""``/api/v1/jobs/{id}/replicas``, ``/logs`` and ``/manifest``: a job's replicas, one replica's log (a tail, or
followed while the job runs) and the objects its backend made (DESIGN.md §2; :mod:`crater_app.services.job_replicas`).
"""

from __future__ import annotations

from typing import Annotated, AsyncIterator

import anyio
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import PlainTextResponse, StreamingResponse

from crater_app.api.deps import CtxDep, CurrentActor, credentials_of, run_read
from crater_app.api.params import ObjectId
from crater_app.api.responses import json_list, json_response
from crater_app.api.routes import API_PREFIX
from crater_app.schemas.replicas import ManifestList, ReplicaPublic
from crater_app.services import identity, job_replicas
from crater_app.services.job_reads import MAX_LOG_TAIL_BYTES

router = APIRouter(prefix=API_PREFIX, tags=["jobs"])

YAML = "application/yaml"
TEXT = "text/plain; charset=utf-8"


@router.get("/jobs/{id}/replicas", response_model=list[ReplicaPublic])
async def list_replicas(id: ObjectId, c: CtxDep, a: CurrentActor) -> Response:
    """The job's replicas now, in task order then by index: each ``task``, ``replica``, ``phase``, ``node``,
    ``devices``, ``exit_code``, ``reason``, ``message``, ``restarts`` (``[]`` before the backend has the job, and
    for a finished job the backend no longer keeps)."""
    return json_list(await run_read(job_replicas.job_replicas, c, a, id))


@router.get("/jobs/{id}/logs", response_class=PlainTextResponse,
            responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}},
                       404: {"description": "the job does not exist or the caller may not see it (`field` `id`), or "
                                            "it has no such task (`task`, `args.tasks` its tasks) or replica "
                                            "(`replica`, `args.count` the task's replicas)"}})
async def job_logs(
    id: ObjectId, request: Request, c: CtxDep, a: CurrentActor,
    tail_bytes: Annotated[int, Query(ge=1, le=MAX_LOG_TAIL_BYTES, description="bytes of the log's end")] = 65536,
    task: Annotated[str | None, Query(max_length=63, description="the task (default: the first)")] = None,
    replica: Annotated[int, Query(ge=0, lt=100_000, description="the replica's index in its task")] = 0,
    follow: Annotated[bool, Query(description="keep sending what is written until the job is final")] = False,
) -> Response:
    """The last ``tail_bytes`` of one replica's stdout+stderr, as text (``task``/``replica`` left out: the first
    task's first replica). With ``follow=true`` the answer streams: the tail, then what the replica writes (read
    every 0.5 s) until the job is final or the client goes away. A task or replica the job does not have is a 404
    naming ``task`` or ``replica``."""
    if not follow:
        return PlainTextResponse(await run_read(job_replicas.replica_logs, c, a, id, tail_bytes, task=task,
                                                replica=replica))
    credentials = credentials_of(request)
    follower = await run_read(job_replicas.follow_logs, c, a, id, tail_bytes, task=task, replica=replica,
                              actor_now=lambda: identity.resolve(c, credentials))  # checked again while it streams
    return StreamingResponse(_stream(follower), media_type=TEXT,
                             headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


async def _stream(follower: job_replicas.LogFollow) -> AsyncIterator[str]:
    """The followed log's text as it comes; ends once a read after the job went final has been sent."""
    text = await run_read(follower.read)
    if text:
        yield text
    while True:
        await anyio.sleep(job_replicas.FOLLOW_POLL_S)
        done = await run_read(follower.finished)
        text = await run_read(follower.read)
        if text:
            yield text
        if done:
            return


@router.get("/jobs/{id}/manifest", response_model=ManifestList,
            responses={200: {"content": {YAML: {"schema": {"type": "string"}}}},
                       404: {"description": "the job does not exist or the caller may not see it, or the backend "
                                            "keeps no manifest of it (`replicas.manifest_processes`: the local "
                                            "backend runs processes; `replicas.manifest_none`: not created yet, or "
                                            "deleted after it finished)"}})
async def job_manifest(id: ObjectId, request: Request, c: CtxDep, a: CurrentActor) -> Response:
    """The Kubernetes objects the backend made for the job: a YAML stream (``---`` between objects), or with
    ``Accept: application/json`` a ``v1`` ``List`` of them. 404 where the backend keeps none: the local backend runs
    processes, not Kubernetes objects; a job not created yet or deleted after it finished has none either."""
    objects = await run_read(job_replicas.job_manifests, c, a, id)
    if _wants_json(request.headers.get("accept", "")):
        return json_response(ManifestList(items=objects))
    return Response(job_replicas.manifest_yaml(objects), media_type=YAML)


def _wants_json(accept: str) -> bool:
    """``Accept`` asks for JSON rather than YAML (JSON named, YAML not, or YAML with a lower ``q``)."""
    weights: dict[str, float] = {}
    for item in accept.lower().split(","):
        kind, *params = (x.strip() for x in item.split(";"))
        q = next((p[2:] for p in params if p.startswith("q=")), "1")
        try:
            weights[kind] = float(q)
        except ValueError:
            weights[kind] = 0.0
    json_q = weights.get("application/json", 0.0)
    yaml_q = max(weights.get(YAML, 0.0), weights.get("text/yaml", 0.0), weights.get("application/x-yaml", 0.0))
    return json_q > 0 and json_q > yaml_q
