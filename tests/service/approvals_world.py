"""The governance world the approvals and notifications tests share: projects ``proj`` (alice member, pat admin,
vera viewer) and ``other`` (bob member) on the fake backend, and the steps those tests repeat."""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from sqlmodel import select

from crater_app.db.models import Approval, Job, Notification, OperationLog, Project
from crater_app.services import approvals, identity, jobs, projects, sign_in, users
from tests.conftest import USER_PASSWORD
from tests.helpers import spec


@dataclass
class Gov:
    ctx: object
    admin: object
    alice: object  # member of proj
    pat: object  # admin of proj
    vera: object  # viewer of proj
    bob: object  # member of other
    guest: object


@pytest.fixture
def gov(world) -> Gov:
    """The world with pat and vera signed up and the two projects with their members."""
    ctx, admin = world.ctx, world.admin
    for name in ("pat", "vera"):
        users.create_user(ctx, admin, name, USER_PASSWORD)
        world.tokens[name] = sign_in.login(ctx, name, USER_PASSWORD).access_token
    projects.create_project(ctx, admin, "proj")
    projects.create_project(ctx, admin, "other")
    for project, name, role in (("proj", "alice", "member"), ("proj", "pat", "admin"), ("proj", "vera", "viewer"),
                                ("other", "bob", "member")):
        projects.set_member(ctx, admin, project, name, role)
    who = {name: identity.authenticate(ctx, world.tokens[name]) for name in ("alice", "pat", "vera", "bob")}
    return Gov(ctx, admin, who["alice"], who["pat"], who["vera"], who["bob"], world.guest)


def submit(g: Gov, actor=None, max_runtime="1h", command=None, name="train") -> int:
    """Submit a job to ``proj`` (as alice unless ``actor``); its id."""
    return jobs.submit_job(g.ctx, actor or g.alice, spec(name, command or ["sleep", "30"], project="proj",
                                                         max_runtime=max_runtime)).id


def extend(g: Gov, job_id: int, value, actor=None, reason="the run needs longer"):
    """Ask for job ``job_id``'s ``max_runtime`` to become ``value`` (as alice unless ``actor``)."""
    return approvals.create_request(g.ctx, actor or g.alice, "extend_runtime", reason, job_id=job_id,
                                    payload={"max_runtime": value})


def notes_of(ctx, user_id: int) -> list[Notification]:
    """The user's notifications, oldest first."""
    with ctx.session() as s:
        return list(s.exec(select(Notification).where(Notification.user_id == user_id).order_by(Notification.id)))


def oplog_actions(ctx) -> list[tuple[str, str, str]]:
    """``(actor, action, target)`` of every ``approval:*`` operation-log row, oldest first."""
    with ctx.session() as s:
        return [(r.actor, r.action, r.target) for r in s.exec(select(OperationLog).order_by(OperationLog.id))
                if r.action.startswith("approval:")]


def held_large_job(g: Gov, gpus: int = 16) -> tuple[int, int]:
    """A job as the submission path writes one above the threshold: Held with reason_code 'approval', and its
    large_job request (without project_id, as that path may leave it)."""
    with g.ctx.session() as s:
        project_id = s.exec(select(Project.id).where(Project.name == "proj")).one()
        job = Job(uid=f"uid-large-{gpus}-{time.monotonic_ns()}", name="big", project_id=project_id,
                  user_id=g.alice.user_id, image="local/host", command=["true"], resources={"nvidia.com/gpu": gpus}, gpus=gpus, phase="Held",
                  reason=f"waiting for approval: {gpus} accelerators is above the threshold of 8",
                  reason_code="approval", reason_args={"gpus": gpus, "threshold": 8})
        s.add(job)
        s.flush()
        a = Approval(kind="large_job", requester_id=g.alice.user_id, job_id=job.id, payload={"gpus": gpus},
                     reason="submitted above the threshold")
        s.add(a)
        s.flush()
        return job.id, a.id
