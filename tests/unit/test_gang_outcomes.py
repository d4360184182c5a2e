"""The local backend's words for a gang's stopped replicas and its restart marker (pure rules, table-driven)."""

from __future__ import annotations

import pytest

from crater_app.cluster.local import gang_outcomes as go
from crater_app.domain.gang import ABORT, COMPLETE, RESTART, Verdict

ENDER_DONE = Verdict(COMPLETE, True, ("master", 0), 0)
WORKER_FAILED = Verdict(ABORT, False, ("worker", 1), 3)


@pytest.mark.parametrize(("stop_reason", "args", "reason"), [
    (go.STOP_GANG, go.verdict_args(ENDER_DONE), "GangEnded"),
    (go.STOP_GANG, go.verdict_args(Verdict(COMPLETE, True, None, None)), "GangEnded"),
    (go.STOP_GANG, go.verdict_args(WORKER_FAILED), "ReplicaFailed"),
    (go.STOP_GANG, go.verdict_args(Verdict(COMPLETE, False, None, None)), "ReplicaFailed"),
    (go.STOP_RESTART, go.verdict_args(Verdict(RESTART, False, ("worker", 1), 3)), "Restarting"),
    ("Cancelled", {"user": "alice"}, "Cancelled"),
    ("DeadlineExceeded", {}, "DeadlineExceeded"),
])
def test_a_stopped_replica_says_why(stop_reason, args, reason):
    assert go.stopped_reason(stop_reason, args) == reason


@pytest.mark.parametrize(("verdict", "line"), [
    (Verdict(RESTART, False, ("worker", 1), 3),
     "--- crater: restart 1 of 2 (replica worker-1 exited with code 3) ---\n"),
    (Verdict(RESTART, False, ("ps", 0), None),
     "--- crater: restart 1 of 2 (replica ps-0 ended without an exit status) ---\n"),
    (Verdict(RESTART, False, None, None), "--- crater: restart 1 of 2 (too few replicas succeeded) ---\n"),
])
def test_the_restart_marker_names_the_restart_and_its_cause(verdict, line):
    assert go.restart_marker(verdict, 1, 2) == line
