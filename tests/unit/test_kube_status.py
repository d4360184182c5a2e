"""A Volcano Job and its pods -> WorkloadStatus (crater_app.cluster.kube.status, .pods): table-driven."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from crater_app.cluster.base import Placement
from crater_app.cluster.kube import pods as podinfo
from crater_app.cluster.kube.status import (ANNOTATION_ATTEMPT, ANNOTATION_STOP, PHASES, STOP_CANCEL,
                                            STOP_DEADLINE, Stop, workload_status)
from crater_app.domain.jobs import JobPhase

GPU = ("nvidia.com/gpu",)
T0, T1, T2 = "2026-12-01T10:00:00Z", "2026-12-01T10:05:00Z", "2026-12-01T10:09:00Z"


def job(phase: str | None = "Running", *, tasks=("main",), annotations=None, deleting=False, retries=0,
        message="", queue="q-demo"):
    status = {"state": {"phase": phase, "lastTransitionTime": T1, "message": message}, "retryCount": retries}
    if phase is None:
        status = {}
    m = {"name": "j-abc", "namespace": "ns", "annotations": dict(annotations or {})}
    if deleting:
        m["deletionTimestamp"] = T2
    return {"metadata": m, "spec": {"queue": queue, "tasks": [{"name": t} for t in tasks]}, "status": status}


def pod(task="main", index=0, *, phase="Running", node="n1", gpus=0, waiting=None, terminated=None, reason=None,
        unschedulable=None, restarts=0, annotate_index=True, gpu_index=None, image="img:1"):
    ann = {podinfo.LABEL_TASK_SPEC: task}
    if annotate_index:
        ann[podinfo.ANNOTATION_TASK_INDEX] = str(index)
    if gpu_index is not None:
        ann[podinfo.ANNOTATION_GPU_INDEX] = gpu_index
    state = {"running": {"startedAt": T0}}
    if waiting:
        state = {"waiting": {"reason": waiting, "message": f"{waiting} happened"}}
    if terminated:
        state = {"terminated": {"startedAt": T0, "finishedAt": T2, **terminated}}
    status = {"phase": phase, "containerStatuses": [{"name": "c", "image": image, "restartCount": restarts,
                                                     "state": state}]}
    if reason:
        status.update(reason=reason, message=f"{reason}: the node ran low on memory")
    if unschedulable:
        status = {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False",
                                                      "reason": "Unschedulable", "message": unschedulable}]}
        node = ""
    spec = {"containers": [{"name": "c", "image": image,
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)} if gpus else {}}}]}
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": f"j-abc-{task}-{index}", "labels": {podinfo.LABEL_TASK_SPEC: task},
                         "annotations": ann}, "spec": spec, "status": status}


CANCEL = Stop(STOP_CANCEL, "cancelled by alice", "job.cancelled_by", {"user": "alice"})
DEADLINE = Stop(STOP_DEADLINE, max_runtime_s=60)

CASES = [
    # (name, job, pods, stop, deleted) -> (phase, reason, code, exit_code)
    ("new Job, no phase yet", job(None), [], None, False, (JobPhase.QUEUED, "Pending", "kube.queued", None)),
    ("Pending, nothing placed", job("Pending"), [], None, False, (JobPhase.QUEUED, "Pending", "kube.queued", None)),
    ("Pending, a pod unschedulable", job("Pending"), [pod(unschedulable="0/3 nodes are available")], None, False,
     (JobPhase.QUEUED, "Pending", "kube.unschedulable", None)),
    ("Pending, an image cannot be pulled", job("Pending"), [pod(phase="Pending", waiting="ImagePullBackOff")],
     None, False, (JobPhase.QUEUED, "Pending", "kube.replica_waiting", None)),
    ("Running", job("Running"), [pod()], None, False, (JobPhase.RUNNING, "Running", "kube.running", None)),
    ("Running, a replica crash-looping", job("Running"), [pod(), pod(index=1, waiting="CrashLoopBackOff")], None,
     False, (JobPhase.RUNNING, "CrashLoopBackOff", "kube.replica_waiting", None)),
    ("Restarting keeps Running", job("Restarting", retries=2), [pod()], None, False,
     (JobPhase.RUNNING, "Restarting", "kube.restarting", None)),
    ("Completing keeps Running", job("Completing"), [pod()], None, False,
     (JobPhase.RUNNING, "Completing", "kube.completing", None)),
    ("Completed", job("Completed"), [pod(phase="Succeeded", terminated={"exitCode": 0, "reason": "Completed"})],
     None, False, (JobPhase.SUCCEEDED, "Completed", "kube.completed", 0)),
    ("Completed, a pod's end not seen yet", job("Completed"), [pod()], None, False,
     (JobPhase.RUNNING, "Completing", "kube.completing", None)),
    ("Failed, a pod's end not seen yet", job("Failed"), [pod()], None, False,
     (JobPhase.STOPPING, "Failed", "kube.stopping", None)),
    ("Failed: exit code", job("Failed"), [pod(phase="Failed", terminated={"exitCode": 3, "reason": "Error"})], None,
     False, (JobPhase.FAILED, "Error", "replicas.failed", 3)),
    ("Failed: OOMKilled", job("Failed"), [pod(phase="Failed", terminated={"exitCode": 137, "reason": "OOMKilled"})],
     None, False, (JobPhase.FAILED, "OOMKilled", "kube.oom_killed", 137)),
    ("Failed: killed by a signal", job("Failed"), [pod(phase="Failed", terminated={"exitCode": 137,
                                                                                    "reason": "Error"})],
     None, False, (JobPhase.FAILED, "Signaled", "kube.killed_by_signal", 137)),
    ("Failed: pod past activeDeadlineSeconds", job("Failed"), [pod(phase="Failed", reason="DeadlineExceeded")],
     None, False, (JobPhase.FAILED, "DeadlineExceeded", "kube.pod_deadline", None)),
    ("Failed without pods", job("Failed", message="MaxRetry exceeded"), [], None, False,
     (JobPhase.FAILED, "Failed", "kube.job_failed", None)),
    ("Aborted by an eviction policy", job("Aborted"), [pod(phase="Failed", reason="Evicted")], None, False,
     (JobPhase.FAILED, "Evicted", "kube.evicted", None)),
    ("Aborting by itself", job("Aborting"), [pod()], None, False, (JobPhase.STOPPING, "Aborting", "kube.stopping",
                                                                   None)),
    ("Terminating by itself", job("Terminating"), [pod()], None, False,
     (JobPhase.STOPPING, "Terminating", "kube.stopping", None)),
    ("Terminated by itself", job("Terminated"), [], None, False, (JobPhase.FAILED, "Terminated", "kube.job_failed",
                                                                  None)),
    ("cancel, pods still running", job("Running", deleting=True), [pod()], CANCEL, False,
     (JobPhase.STOPPING, "CancelRequested", "kube.stopping_cancel", None)),
    ("cancel, Volcano Terminating", job("Terminating", deleting=True), [pod()], CANCEL, False,
     (JobPhase.STOPPING, "CancelRequested", "kube.stopping_cancel", None)),
    ("cancel, last pod gone", job("Terminating", deleting=True), [], CANCEL, True,
     (JobPhase.CANCELLED, "Cancelled", "job.cancelled_by", None)),
    ("cancel, Terminated with the exit code", job("Terminated"),
     [pod(phase="Failed", terminated={"exitCode": 143, "reason": "Error"})], CANCEL, False,
     (JobPhase.CANCELLED, "Cancelled", "job.cancelled_by", 143)),
    ("cancel of a queued job: at once", job("Pending"), [pod(unschedulable="no room")], CANCEL, False,
     (JobPhase.CANCELLED, "Cancelled", "job.cancelled_by", None)),
    ("cancel after it completed", job("Completed", deleting=True), [], CANCEL, True,
     (JobPhase.SUCCEEDED, "Completed", "kube.completed", 0)),
    ("cancel without a code", job("Running", deleting=True), [], Stop(STOP_CANCEL, "no longer needed"), True,
     (JobPhase.CANCELLED, "Cancelled", "kube.cancelled_because", None)),
    ("deadline, stopping", job("Running", deleting=True), [pod()], DEADLINE, False,
     (JobPhase.STOPPING, "DeadlineExceeded", "kube.stopping_deadline", None)),
    ("deadline, gone", job("Running", deleting=True), [], DEADLINE, True,
     (JobPhase.FAILED, "DeadlineExceeded", "kube.deadline_exceeded", None)),
    ("deleted by hand, pods stopping", job("Running", deleting=True), [pod()], None, False,
     (JobPhase.STOPPING, "Deleting", "kube.deleting", None)),
    ("deleted by hand, gone", job("Running"), [], None, True, (JobPhase.FAILED, "Deleted", "kube.deleted", None)),
    ("finished Job removed by its TTL", job("Completed"), [], None, True,
     (JobPhase.SUCCEEDED, "Completed", "kube.completed", 0)),
]


@pytest.mark.parametrize("name,j,ps,stop,deleted,expected", CASES, ids=[c[0] for c in CASES])
def test_phase_mapping(name, j, ps, stop, deleted, expected):
    st = workload_status("u1", j, ps, accelerators=GPU, stop=stop, deleted=deleted)
    assert (st.phase, st.reason, st.code, st.exit_code) == expected
    assert st.uid == "u1" and st.message and st.raw_state == (j["status"].get("state", {}).get("phase") or "")
    assert (st.finished_at is not None) == st.phase.terminal


def test_every_volcano_phase_is_mapped_and_an_unknown_one_is_kept():
    assert set(PHASES) - {""} == {"Pending", "Aborting", "Aborted", "Running", "Restarting", "Completing",
                                  "Completed", "Terminating", "Terminated", "Failed"}
    st = workload_status("u1", job("Hibernating", message="new phase"), [], accelerators=GPU)
    assert (st.phase, st.raw_state, st.message) == (None, "Hibernating", "new phase")


def test_the_stop_recorded_on_the_job_counts_as_crater_s_own():
    j = job("Terminated", annotations={ANNOTATION_STOP: CANCEL.to_annotation()})
    st = workload_status("u1", j, [], accelerators=GPU)
    assert (st.phase, st.code, st.args, st.message) == (JobPhase.CANCELLED, "job.cancelled_by", {"user": "alice"},
                                                        "cancelled by alice")
    assert Stop.from_job(job(annotations={ANNOTATION_STOP: "{not json"})) is None


def test_signal_is_inferred_from_the_exit_code():
    j = job("Terminated", annotations={ANNOTATION_STOP: CANCEL.to_annotation()})
    st = workload_status("u1", j, [pod(phase="Failed", terminated={"exitCode": 143, "reason": "Error"})],
                         accelerators=GPU)
    assert (st.exit_code, st.exit_signal) == (143, 15)


def test_replicas_placements_and_attempt():
    j = job("Running", tasks=("master", "worker"), annotations={ANNOTATION_ATTEMPT: "3"})
    ps = [pod("worker", 1, node="n2", gpus=2), pod("master", 0, node="n1", gpus=1),
          pod("worker", 0, node="n2", gpus=2, gpu_index="4,5", annotate_index=False),
          pod("worker", 2, unschedulable="no room", gpus=2)]
    st = workload_status("u1", j, ps, accelerators=GPU)
    assert st.attempt == 3
    assert [(r.task, r.replica, r.phase, r.node) for r in st.replicas] == [
        ("master", 0, "Running", "n1"), ("worker", 0, "Running", "n2"), ("worker", 1, "Running", "n2"),
        ("worker", 2, "Pending", "")]
    assert st.placements == (Placement("master", 0, "n1", (0,)), Placement("worker", 0, "n2", (4, 5)),
                             Placement("worker", 1, "n2", (0, 1)))
    assert st.nodes == ("n1", "n2") and st.args == {"nodes": ["n1", "n2"]}
    assert st.message == "running on n1 and n2"
    assert st.started_at == datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc) and st.finished_at is None


POD_REASONS = [
    (pod(phase="Failed", reason="Evicted"), "Evicted"),
    (pod(phase="Failed", terminated={"exitCode": 137, "reason": "OOMKilled"}), "OOMKilled"),
    (pod(phase="Pending", waiting="ErrImagePull"), "ErrImagePull"),
    (pod(phase="Pending", waiting="ImagePullBackOff"), "ImagePullBackOff"),
    (pod(waiting="CrashLoopBackOff", restarts=4), "CrashLoopBackOff"),
    (pod(unschedulable="0/2 nodes"), "Unschedulable"),
    (pod(phase="Failed", terminated={"exitCode": 2, "reason": "Error"}), "Error"),
    (pod(phase="Succeeded", terminated={"exitCode": 0, "reason": "Completed"}), "Completed"),
    (pod(), ""),
]


@pytest.mark.parametrize("p,reason", POD_REASONS, ids=[r for _, r in POD_REASONS])
def test_pod_reasons(p, reason):
    r = podinfo.replica_status(p)
    assert r.reason == reason
    assert r.restarts == (4 if reason == "CrashLoopBackOff" else 0)


def test_index_falls_back_to_the_pod_name():
    p = pod("worker", 7, annotate_index=False)
    assert podinfo.index_of(p) == 7 and podinfo.task_of(p) == "worker"
    assert podinfo.index_of({"metadata": {"name": "odd"}}) == 0


def test_messages_render_in_both_languages():
    from crater_app import i18n

    for name, j, ps, stop, deleted, _ in CASES:
        st = workload_status("u1", j, ps, accelerators=GPU, stop=stop, deleted=deleted)
        zh = i18n.render("zh-CN", f"event.{st.code}", st.args, fallback="")
        assert zh and "{" not in zh, name


def test_a_completed_job_says_which_task_ended_it_or_how_many_replicas_succeeded():
    ended = job("Completed", tasks=("master", "worker"))
    ended["spec"]["tasks"][0].update(replicas=1, policies=[{"event": "TaskCompleted", "action": "CompleteJob"}])
    ended["spec"]["tasks"][1]["replicas"] = 1
    done = pod("master", phase="Succeeded", terminated={"exitCode": 0, "reason": "Completed"})
    st = workload_status("u1", ended, [done], accelerators=GPU)
    assert (st.code, st.args) == ("replicas.task_completed", {"task": "master"})
    every = job("Completed", tasks=("worker",))
    every["spec"]["tasks"][0]["replicas"] = 3
    pods = [pod("worker", i, phase="Succeeded" if i else "Failed",
                terminated={"exitCode": 0 if i else 1, "reason": "Completed" if i else "Error"}) for i in range(3)]
    st = workload_status("u1", every, pods, accelerators=GPU)
    assert (st.code, st.args) == ("replicas.completed", {"replicas": 3, "succeeded": 2})


def test_replicas_of_deleted_pods_and_volcano_retries():
    from datetime import timedelta

    j = job("Completed", tasks=("master", "worker"), retries=1)
    j["spec"]["tasks"][0]["replicas"] = j["spec"]["tasks"][1]["replicas"] = 1
    master = pod("master", phase="Succeeded", terminated={"exitCode": 0, "reason": "Completed"})
    worker = pod("worker", 0)  # running when Volcano deleted it
    removed = datetime(2026, 12, 1, 10, 9, tzinfo=timezone.utc)
    st = workload_status("u1", j, [master], accelerators=GPU,
                         gone=[(worker, removed, removed + timedelta(seconds=30))])
    assert [(r.task, r.phase, r.reason, r.exit_code, r.restarts) for r in st.replicas] == [
        ("master", "Succeeded", "Completed", 0, 1), ("worker", "Stopped", "GangEnded", 143, 1)]
    late = workload_status("u1", j, [master], accelerators=GPU,
                           gone=[(worker, removed, removed - timedelta(seconds=1))])
    assert late.replicas[1].exit_code == 137, "removed after its grace: SIGKILL"


@pytest.mark.parametrize("phase, annotations, reason", [
    ("Completing", {}, "GangEnded"),                    # CompleteJob: a task that ends the job finished
    ("Terminating", {}, "ReplicaFailed"),               # restart_policy fail: TerminateJob after a replica failed
    ("Restarting", {}, "Restarting"),                   # RestartJob
    ("Terminating", {"crater.io/stop": '{"kind": "cancel"}'}, "Cancelled"),
    ("Terminating", {"crater.io/stop": '{"kind": "deadline", "max_runtime_s": 60}'}, "DeadlineExceeded"),
])
def test_a_replica_stopped_while_it_ran_says_who_stopped_it(phase, annotations, reason):
    from crater_app.cluster.kube.status import stopped_by

    j = job(phase)
    j["metadata"]["annotations"] = {**(j["metadata"].get("annotations") or {}), **annotations}
    assert stopped_by(j) == reason
