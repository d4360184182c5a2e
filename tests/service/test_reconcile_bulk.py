"""services.reconcile_bulk: the batch path of the reconciler writes, for each common phase change, the same job row
and events as the ORM path (``Reconciler._apply_one``), on SQLite and PostgreSQL (active-usage triggers included)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import select

from crater_app.cluster.base import Placement, WorkloadStatus
from crater_app.db.models import ActiveUsage, Job
from crater_app.domain.jobs import JobPhase
from crater_app.services import jobs
from crater_app.services.reconcile import Reconciler
from crater_app.services.reconcile_bulk import phase_change
from tests.conftest import gpu_devices, populate
from tests.fakes import FakeBackend
from tests.helpers import events, job_row, spec

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
COLUMNS = ("phase", "reason", "reason_code", "reason_args", "devices", "exit_code", "exit_signal", "started_at",
           "finished_at")


def _status(uid: str, phase: JobPhase, started: bool, finished: bool, exit_code=None) -> WorkloadStatus:
    return WorkloadStatus(uid=uid, phase=phase, raw_state=phase.value, reason=phase.value, message=f"now {phase.value}",
                          code="", exit_code=exit_code, started_at=T0 if started else None,
                          finished_at=T0 + timedelta(seconds=30) if finished else None,
                          placements=(Placement("main", 0, "node-a", (1,)),))


# (statuses given one after the other; the events they add)
STEPS = [
    ([(JobPhase.RUNNING, True, False, None)], ["Running"]),
    ([(JobPhase.RUNNING, True, False, None), (JobPhase.SUCCEEDED, True, True, 0)], ["Running", "Succeeded"]),
    ([(JobPhase.RUNNING, True, False, None), (JobPhase.FAILED, True, True, 3)], ["Running", "Failed"]),
    ([(JobPhase.FAILED, True, True, 4)], ["Running", "Failed"]),  # started and ended between two syncs
    ([(JobPhase.CANCELLED, False, True, None)], ["Cancelled"]),
]


@pytest.mark.both_databases
@pytest.mark.parametrize("steps,added", STEPS)
def test_the_batch_path_writes_what_the_orm_path_writes(make_ctx, steps, added):
    world = populate(make_ctx(backend=FakeBackend(gpu_devices(4))))
    ctx = world.ctx
    batch, orm = (jobs.submit_job(ctx, world.alice, spec(name, ["sleep", "60"])) for name in ("batch", "orm"))
    reconciler = Reconciler(ctx)
    handed = []  # jobs the batch path left to the ORM path: none of these common changes may be among them

    def orm_path(s, job, status, ids):
        handed.append(job.uid)
        return Reconciler._apply_one(reconciler, s, job, status, ids)
    reconciler._apply_one = orm_path
    before = len(events(ctx, batch.id))
    for phase, started, finished, code in steps:
        reconciler._apply([_status(batch.uid, phase, started, finished, code)])
        with ctx.session() as s:
            job = s.get(Job, orm.id)
            Reconciler._apply_one(reconciler, s, job, _status(orm.uid, phase, started, finished, code), {})
    assert handed == [], "the batch path wrote these changes itself"
    a, b = job_row(ctx, batch.id), job_row(ctx, orm.id)
    assert a.phase == steps[-1][0].value
    assert {c: getattr(a, c) for c in COLUMNS} == {c: getattr(b, c) for c in COLUMNS}
    ea, eb = events(ctx, batch.id)[before:], events(ctx, orm.id)[before:]
    assert [e.phase for e in ea] == added
    assert [(e.phase, e.reason, e.code, e.args, e.message, e.at) for e in ea] == \
        [(e.phase, e.reason, e.code, e.args, e.message, e.at) for e in eb]
    with ctx.session() as s:  # the triggers counted both jobs alike: both active or both gone
        counts = list(s.execute(select(ActiveUsage.jobs)).scalars())
    assert counts == ([] if steps[-1][0].terminal else [2])


@pytest.mark.parametrize("current,attempt,finished,target,reason_code", [
    ("Stopping", 1, False, JobPhase.SUCCEEDED, ""),     # Stopping has rules of its own
    ("Held", 1, False, JobPhase.QUEUED, ""),            # only Queued and Running leave on the batch path
    ("Running", 1, False, JobPhase.QUEUED, ""),         # not allowed: IgnoredTransition
    ("Running", 1, False, JobPhase.CANCELLED, "preempted"),  # the preempted job's end
    ("Queued", 2, True, JobPhase.RUNNING, ""),          # a later attempt starts: billing's charged_until
    ("Succeeded", 1, True, JobPhase.FAILED, ""),        # terminal
])
def test_the_rare_cases_stay_on_the_orm_path(current, attempt, finished, target, reason_code):
    class Row:
        id, uid, phase, reason, reason_args, devices = 1, "u", current, "", {}, []
    Row.reason_code, Row.attempt = reason_code, attempt
    Row.started_at, Row.finished_at = T0, (T0 if finished else None)
    assert phase_change(Row, _status("u", target, True, target.terminal), ("", "", {}), T0) is None


@pytest.mark.parametrize("current,target,started,events_added", [
    ("Queued", JobPhase.RUNNING, True, ["Running"]),
    ("Running", JobPhase.SUCCEEDED, True, ["Succeeded"]),
    ("Queued", JobPhase.FAILED, True, ["Running", "Failed"]),  # started and ended between two syncs
    ("Queued", JobPhase.CANCELLED, False, ["Cancelled"]),
])
def test_the_common_changes_take_the_batch_path(current, target, started, events_added):
    class Row:
        id, uid, phase, reason, reason_code, reason_args, devices, attempt = 1, "u", current, "", "", {}, [], 1
        started_at = T0 if current == "Running" else None
        finished_at = None
    change = phase_change(Row, _status("u", target, started, target.terminal), ("done", "", {}), T0)
    assert change is not None and change.update["phase"] == target.value and change.update["reason"] == "done"
    assert [e["phase"] for e in change.events] == events_added
