"""services.job_replicas.follow_logs: a followed log stops, and reads nothing more, once its reader may no longer
read the job (checked again on every poll through ``actor_now``)."""

from __future__ import annotations

import pytest

from crater_app.domain.errors import Unauthenticated
from crater_app.services import jobs, projects
from crater_app.services.job_replicas import follow_logs
from crater_app.services.leader import LeaderLoop
from tests.helpers import drive_until, spec


def test_a_follow_stops_when_the_reader_loses_access(world):
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, spec("chatty", ["sh", "-c", "echo one; sleep 60"]))
    drive_until(LeaderLoop(ctx), job.id, "Running")
    who = {"actor": world.alice}

    def actor_now():
        if who["actor"] is None:
            raise Unauthenticated("auth.token_unknown")
        return who["actor"]

    follow = follow_logs(ctx, world.alice, job.id, actor_now=actor_now)
    assert "one" in follow.read() and not follow.finished(), "the owner follows a running job"
    who["actor"] = world.bob  # the same stream, now resolved as someone who may not read the job
    assert follow.finished() and follow.read() == ""
    who["actor"] = None  # a revoked token
    follow = follow_logs(ctx, world.alice, job.id, actor_now=actor_now)
    assert follow.finished() and follow.read() == ""
