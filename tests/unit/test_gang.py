"""The gang ending rule (crater_app.domain.gang.decide), table-driven."""

from __future__ import annotations

import pytest

from crater_app.domain.gang import ABORT, COMPLETE, RESTART, WAIT, Verdict, decide

DDP = [("master", 1, True), ("worker", 2, False)]
PLAIN = [("a", 1, False), ("b", 2, False)]


@pytest.mark.parametrize(("tasks", "ended", "options", "expected"), [
    # nothing ended yet, or only some replicas of a gang without an ending task
    (PLAIN, {}, {}, Verdict(WAIT)),
    (PLAIN, {("a", 0): 0, ("b", 0): 0}, {}, Verdict(WAIT)),
    # every replica exited 0
    (PLAIN, {("a", 0): 0, ("b", 0): 0, ("b", 1): 0}, {}, Verdict(COMPLETE, succeeded=True)),
    # a failure under 'fail' (the default): abort at once, naming the replica
    (PLAIN, {("b", 1): 3}, {}, Verdict(ABORT, replica=("b", 1), exit_code=3)),
    (PLAIN, {("b", 1): 3, ("a", 0): 137}, {}, Verdict(ABORT, replica=("a", 0), exit_code=137)),  # task order
    (PLAIN, {("b", 0): None}, {}, Verdict(ABORT, replica=("b", 0), exit_code=None)),  # lost
    # 'restart': while retries are left, then as 'fail'
    (PLAIN, {("b", 0): 1}, {"restart_policy": "restart", "max_retry": 2, "restarts": 1},
     Verdict(RESTART, replica=("b", 0), exit_code=1)),
    (PLAIN, {("b", 0): 1}, {"restart_policy": "restart", "max_retry": 2, "restarts": 2},
     Verdict(ABORT, replica=("b", 0), exit_code=1)),
    # 'ignore': carry on; at the end it succeeded when min_available replicas did (Volcano's completion rule)
    (PLAIN, {("b", 0): 1}, {"restart_policy": "ignore"}, Verdict(WAIT)),
    (PLAIN, {("a", 0): 0, ("b", 0): 1, ("b", 1): 0}, {"restart_policy": "ignore", "min_available": 2},
     Verdict(COMPLETE, succeeded=True)),
    (PLAIN, {("a", 0): 0, ("b", 0): 1, ("b", 1): 0}, {"restart_policy": "ignore"},
     Verdict(COMPLETE, succeeded=False, replica=("b", 0), exit_code=1)),
    # an ending task (master): its replicas' end is the workload's; the workers are stopped
    (DDP, {("master", 0): 0}, {}, Verdict(COMPLETE, succeeded=True)),
    (DDP, {("worker", 0): 0, ("worker", 1): 0}, {}, Verdict(WAIT)),
    (DDP, {("master", 0): 2}, {"restart_policy": "ignore"},
     Verdict(COMPLETE, succeeded=False, replica=("master", 0), exit_code=2)),
    (DDP, {("worker", 1): 9}, {}, Verdict(ABORT, replica=("worker", 1), exit_code=9)),
    # one replica: the common single-task job
    ([("main", 1, False)], {("main", 0): 0}, {}, Verdict(COMPLETE, succeeded=True)),
    ([("main", 1, False)], {("main", 0): 4}, {}, Verdict(ABORT, replica=("main", 0), exit_code=4)),
])
def test_decide(tasks, ended, options, expected):
    assert decide(tasks, ended, **options) == expected
