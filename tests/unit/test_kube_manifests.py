"""cluster.kube builders: Volcano Jobs, Queues, Namespaces, NetworkPolicies and session Services as golden files
(``tests/unit/golden/kube/*.yaml``; ``CRATER_UPDATE_GOLDEN=1`` rewrites them), every object validated as the API
server would (:mod:`tests.kube_schemas`), and the naming, policy and quota rules table-driven."""

from __future__ import annotations

import hashlib
import os
import uuid
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from crater_app.cluster.base import Port, Task, Volume, Workload
from crater_app.cluster.kube import object_names as names
from crater_app.cluster.kube.job_manifest import job_plugins, job_policies, volcano_job, workload_objects
from crater_app.cluster.kube.namespace_manifests import project_namespace, project_namespace_objects, sessions_policy
from crater_app.cluster.kube.options import KubeOptions
from crater_app.cluster.kube.queue_manifest import project_queues, queue_sections, split_deserved
from crater_app.cluster.kube.session_manifest import session_service
from crater_app.domain.errors import InvalidInput
from crater_app.domain.naming import DNS1123_LABEL_MAX, LABEL_JOB_UID, LABEL_PROJECT, LABEL_USER
from crater_app.domain.quota import Quota, model_key
from crater_app.domain.resources import ResourceList
from tests import kube_schemas

GOLDEN = Path(__file__).resolve().parent / "golden" / "kube"
UPDATE = os.environ.get("CRATER_UPDATE_GOLDEN") == "1"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
GiB = 1024**3
GPU = "nvidia.com/gpu"
A100 = "NVIDIA-A100-SXM4-80GB"
UID = "3f2a1b9c-4d5e-4f60-8a7b-9c0d1e2f3a4b"
OPTIONS = KubeOptions()
PER_PROJECT = KubeOptions(namespace_mode="per-project")


def golden(name: str, objects: list[dict]) -> None:
    """Validate every object, then compare the YAML of ``objects`` with ``golden/kube/<name>.yaml`` (rewritten
    instead when ``CRATER_UPDATE_GOLDEN=1``)."""
    for obj in objects:
        kube_schemas.validate(obj)
    text = yaml.safe_dump_all(objects, sort_keys=False, allow_unicode=True, width=120)
    path = GOLDEN / f"{name}.yaml"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.exists(), f"no golden file {path.name}: run with CRATER_UPDATE_GOLDEN=1 to write it"
    assert text == path.read_text(encoding="utf-8"), f"{path.name} differs: CRATER_UPDATE_GOLDEN=1 rewrites it"


def task(name: str = "main", replicas: int = 1, gpus: int = 0, **fields) -> Task:
    fields.setdefault("resources", ResourceList(cpu_m=4000, memory_bytes=16 * GiB,
                                                accelerators={GPU: gpus} if gpus else {}))
    return Task(name=name, replicas=replicas, image=fields.pop("image", "pytorch/pytorch:2.4.0-cuda12.1"),
                command=tuple(fields.pop("command", ("python", "train.py"))), **fields)


def workload(*tasks: Task, **fields) -> Workload:
    fields.setdefault("uid", UID)
    fields.setdefault("name", "train")
    fields.setdefault("project", "vision")
    fields.setdefault("user", "alice")
    return Workload(tasks=tasks or (task(),), created_at=T0, **fields)


# -- golden files --------------------------------------------------------------------------------------------------

def test_single_task_batch_job():
    w = workload(task(env={"EPOCHS": "10", "DATA": "/data"}, working_dir="/workspace", args=("--lr", "0.1"),
                      resources=ResourceList(cpu_m=2500, memory_bytes=8 * GiB, accelerators={GPU: 1})),
                 max_runtime_s=3600, volumes=(Volume("user", "/home/alice"),))
    golden("batch_job", [volcano_job(w, OPTIONS)])


def test_pytorch_ddp_job():
    w = workload(task("master", 1, gpus=8, ends_job=True, ports=(Port("rdzv", 23456),)), task("worker", 3, gpus=8),
                 name="ddp-resnet", kind="pytorch", accelerator_model=A100, shm_size_bytes=32 * GiB,
                 restart_policy="restart", max_retry=2, ttl_after_finished_s=86400,
                 node_selector={"topology.kubernetes.io/zone": "rack-a"},
                 volumes=(Volume("project", "/data", sub_path="imagenet", read_only=True),
                          Volume("user", "/home/alice"), Volume("pvc", "/ckpt", sub_path="runs/1", claim="ckpt")))
    golden("pytorch_ddp_job", [volcano_job(w, PER_PROJECT)])


def test_mpi_job():
    image = "mpioperator/mpi-pi:openmpi"
    w = workload(task("launcher", 1, ends_job=True, command=("mpirun", "-np", "4", "hello"), image=image,
                      resources=ResourceList(cpu_m=1000, memory_bytes=2 * GiB)),
                 task("worker", 2, gpus=2, command=("/usr/sbin/sshd", "-D"), image=image),
                 name="mpi-hello", kind="mpi", restart_policy="ignore")
    golden("mpi_job", [volcano_job(w, OPTIONS)])


def test_interactive_job_and_its_service():
    w = workload(task("session", 1, gpus=1, command=("jupyter", "lab", "--port=8888"),
                      ports=(Port("http", 8888),)),
                 name="notebook", kind="interactive", user="Zhang San", max_runtime_s=8 * 3600)
    objects = workload_objects(w, PER_PROJECT)
    assert objects == [volcano_job(w, PER_PROJECT), session_service(w, PER_PROJECT)]
    golden("interactive_job", objects)


def test_queue_with_shares():
    quota = Quota(guarantee={GPU: 2}, deserved={"cpu": 64000, "memory": 256 * GiB, GPU: 8},
                  capability={"cpu": 128000, "memory": 512 * GiB, GPU: 16, model_key(GPU, A100): 8})
    shares = {"alice": Quota(capability={GPU: 6, "cpu": 32000}), "bob": Quota(capability={GPU: 4})}
    golden("queue_with_shares", project_queues("vision", quota, OPTIONS, shares, weight=2))


def test_namespace_and_policies():
    golden("namespace", project_namespace_objects("vision", PER_PROJECT))


# -- names ---------------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("uid", [UID, UID.upper(), "job-1", "", "作业"])
def test_job_names_are_short_dns_labels_fixed_by_the_uid(uid):
    name = names.job_name(uid)  # a pure function of the uid: the same uid gives the same name in every process
    assert len(name) == names.JOB_NAME_CHARS == 23
    assert kube_schemas._LABEL.fullmatch(name) and name[0].isalpha()
    assert name == "crater-" + hashlib.sha256(uid.encode()).hexdigest()[:16]


def test_job_names_of_different_uids_differ():
    # uids that share their leading digits (time-ordered UUIDs made in one millisecond) too
    uids = [str(uuid.UUID(int=i, version=4)) for i in range(5000)] + [f"job-{i}" for i in range(5000)]
    assert len({names.job_name(u) for u in uids}) == len(uids)


@pytest.mark.parametrize(("replicas", "longest"), [(1, 37), (10, 37), (11, 36), (100, 36), (101, 35), (1000, 35)])
def test_longest_task_name_keeps_every_pod_name_within_63(replicas, longest):
    assert names.max_task_name_chars(replicas) == longest
    pod = names.pod_name(names.job_name(UID), "t" * longest, replicas - 1)
    assert len(pod) == DNS1123_LABEL_MAX


@pytest.mark.parametrize(("replicas", "length", "refused"), [(1, 37, False), (1, 38, True), (11, 36, False),
                                                            (11, 37, True)])
def test_task_names_too_long_for_their_pods_are_refused_naming_the_field(replicas, length, refused):
    w = workload(task("ok"), task("t" * length, replicas))
    if not refused:
        kube_schemas.validate(volcano_job(w, OPTIONS))
        return
    with pytest.raises(InvalidInput) as caught:
        volcano_job(w, OPTIONS)
    assert (caught.value.code, caught.value.field) == ("kube.task_name_too_long", "tasks[1].name")
    assert caught.value.params["max"] == names.max_task_name_chars(replicas)


@pytest.mark.parametrize(("project", "options", "expected"), [
    ("vision", OPTIONS, "crater-jobs"),
    ("vision", PER_PROJECT, "crater-vision"),
    ("9lives", PER_PROJECT, None),  # not a DNS-1035 label: hashed slug
    ("p" * 63, PER_PROJECT, None),
    ("vision", KubeOptions(namespace_mode="per-project", namespace_prefix="team-"), "team-vision"),
])
def test_namespaces(project, options, expected):
    ns = names.namespace_of(project, options)
    assert len(ns) <= 63 and kube_schemas._LABEL.fullmatch(ns)
    if expected:
        assert ns == expected
    else:
        assert ns.startswith("crater-") and ns[-8:].isalnum()


LONG_A = "a" * 63
LONG_B = "a" * 62 + "b"


@pytest.mark.parametrize(("project", "user"), [
    ("vision", "alice"), ("vision", "Alice"), ("vision", "张三"), (LONG_A, "alice"), (LONG_B, "alice"),
    ("vision", "u" * 64), ("vision", "u" * 63 + "v"), (LONG_A, "u" * 64), ("a-b", "c"), ("a", "b-c"),
])
def test_member_queue_names_are_unique_labels_apart_from_project_queues(project, user):
    name = names.member_queue_name(project, user, OPTIONS)
    assert name == names.member_queue_name(project, user, OPTIONS)
    assert len(name) <= 63 and kube_schemas._SUBDOMAIN.fullmatch(name)
    assert "." in name and "." not in names.project_queue_name(project, OPTIONS)
    assert name != names.others_queue_name(project, OPTIONS)


def test_member_queue_names_never_collide():
    projects = ["vision", "a-b", "a", LONG_A, LONG_B, "p" * 56, "p" * 57]
    users = ["alice", "Alice", "b-c", "c", "张三", "u" * 64, "u" * 63 + "v", "others", "h-1"]
    queues = {(p, u): names.member_queue_name(p, u, OPTIONS) for p in projects for u in users}
    everything = [*queues.values(), *(names.project_queue_name(p, OPTIONS) for p in projects),
                  *(names.others_queue_name(p, OPTIONS) for p in projects)]
    assert len(set(everything)) == len(everything)


def test_project_queue_names_leave_room_for_children():
    for project in ("vision", LONG_A, "9" * 63):
        queue = names.project_queue_name(project, OPTIONS)
        assert len(queue) <= names.PROJECT_QUEUE_MAX
        assert len(names.others_queue_name(project, OPTIONS)) <= 63
    assert names.project_queue_name(LONG_A, OPTIONS) != names.project_queue_name(LONG_B, OPTIONS)


def test_labels_are_slugs_and_raw_names_are_annotations():
    w = workload(user="Zhang San", project="9lives", name="训练")
    job = volcano_job(w, OPTIONS)
    labels, annotations = job["metadata"]["labels"], job["metadata"]["annotations"]
    assert labels[LABEL_JOB_UID] == UID
    assert labels[LABEL_USER] == names.user_slug("Zhang San") != "Zhang San"
    assert labels[LABEL_PROJECT] == names.project_slug("9lives") != "9lives"
    assert annotations == {"crater.io/job-name": "训练", "crater.io/project-name": "9lives",
                           "crater.io/user-name": "Zhang San", "crater.io/attempt": "1"}
    assert job["spec"]["tasks"][0]["template"]["metadata"]["labels"][LABEL_USER] == labels[LABEL_USER]
    kube_schemas.validate(job)


# -- policies and plugins ------------------------------------------------------------------------------------------

@pytest.mark.parametrize(("policy", "expected"), [
    ("restart", [{"events": ["PodEvicted", "PodFailed"], "action": "RestartJob"}]),
    ("fail", [{"events": ["PodEvicted", "PodFailed"], "action": "TerminateJob"}]),
    ("ignore", []),
])
def test_restart_policies(policy, expected):
    assert job_policies(policy) == expected
    job = volcano_job(workload(restart_policy=policy, max_retry=3), OPTIONS)
    assert job["spec"].get("policies", []) == expected
    assert job["spec"]["maxRetry"] == 3
    kube_schemas.validate(job)


def test_unknown_restart_policy_is_a_programming_error():
    with pytest.raises(ValueError):
        job_policies("sometimes")


def test_a_task_that_ends_the_job_completes_it():
    job = volcano_job(workload(task("master", ends_job=True), task("worker", 2), kind="pytorch"), OPTIONS)
    master, worker = job["spec"]["tasks"]
    assert master["policies"] == [{"event": "TaskCompleted", "action": "CompleteJob"}]
    assert "policies" not in worker


@pytest.mark.parametrize(("w", "expected"), [
    (workload(), {}),
    (workload(task(replicas=4)), {"env": [], "svc": []}),
    (workload(kind="interactive"), {"svc": []}),
    (workload(task("master"), task("worker", 3), kind="pytorch"),
     {"env": [], "pytorch": ["--master=master", "--worker=worker", "--port=23456"], "svc": []}),
    (workload(task("worker", 3), task("chief", ends_job=True), kind="pytorch"),
     {"env": [], "pytorch": ["--master=chief", "--worker=worker", "--port=23456"], "svc": []}),
    (workload(task("master"), kind="pytorch"), {"pytorch": ["--master=master", "--worker=", "--port=23456"],
                                                "svc": []}),
    (workload(task("worker", 2), task("launcher"), kind="mpi"),
     {"env": [], "mpi": ["--master=launcher", "--worker=worker", "--port=22"], "ssh": [], "svc": []}),
    (workload(task("launcher"), kind="mpi"), {"ssh": [], "svc": []}),  # the mpi plugin needs a worker task
])
def test_plugins_per_kind(w, expected):
    assert job_plugins(w, OPTIONS) == expected


def test_rendezvous_port_comes_from_the_options():
    w = workload(task("master"), task("worker"), kind="pytorch")
    assert "--port=29500" in job_plugins(w, KubeOptions(rendezvous_port=29500))["pytorch"]


def test_the_rendezvous_port_the_spec_gives_its_master_wins():
    """The job spec's ``pytorchjob-port`` on the master (what the local backend and the containers use) is what
    Volcano's plugin is told, not the options' default."""
    master = task("master", ports=(Port("pytorchjob-port", 29400),))
    w = workload(master, task("worker", ports=(Port("pytorchjob-port", 29400),)), kind="pytorch")
    assert job_plugins(w, OPTIONS)["pytorch"][2] == "--port=29400"


def test_the_mpi_launcher_is_pointed_at_its_workers_hosts():
    w = workload(task("launcher"), task("worker", 2), kind="mpi")
    launcher, worker = (t["template"]["spec"]["containers"][0] for t in volcano_job(w, OPTIONS)["spec"]["tasks"])
    assert {"name": "CRATER_MPI_HOSTFILE", "value": "/etc/volcano/worker.host"} in launcher["env"]
    assert all(e["name"] != "CRATER_MPI_HOSTFILE" for e in worker.get("env", []))


def test_a_pytorch_job_of_three_tasks_is_refused():
    with pytest.raises(InvalidInput) as caught:
        volcano_job(workload(task("master"), task("worker"), task("evaluator"), kind="pytorch"), OPTIONS)
    assert (caught.value.code, caught.value.field, caught.value.params["max"]) == ("kube.kind_tasks", "tasks", 2)


# -- pods ----------------------------------------------------------------------------------------------------------

def pod_spec(w: Workload, options: KubeOptions = OPTIONS, index: int = 0) -> dict:
    job = kube_schemas.validate(volcano_job(w, options))
    return job["spec"]["tasks"][index]["template"]["spec"]


def test_pods_are_hardened():
    spec = pod_spec(workload())
    assert spec["restartPolicy"] == "Never"
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"] == {"seccompProfile": {"type": "RuntimeDefault"}}
    assert spec["containers"][0]["securityContext"] == {
        "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}, "runAsNonRoot": True}
    assert "hostPath" not in yaml.safe_dump(spec)


def test_pod_security_follows_the_options():
    options = KubeOptions(run_as_non_root=False, run_as_user=1000, run_as_group=1000, fs_group=100,
                          automount_service_account_token=True, service_account="trainer",
                          image_pull_secrets=("registry",), image_pull_policy="Always")
    spec = pod_spec(workload(), options)
    assert spec["securityContext"] == {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 100,
                                       "seccompProfile": {"type": "RuntimeDefault"}}
    assert "runAsNonRoot" not in spec["containers"][0]["securityContext"]
    assert spec["automountServiceAccountToken"] is True
    assert spec["serviceAccountName"] == "trainer"
    assert spec["imagePullSecrets"] == [{"name": "registry"}]
    assert spec["containers"][0]["imagePullPolicy"] == "Always"


@pytest.mark.parametrize(("resources", "expected"), [
    (ResourceList(cpu_m=500), {"cpu": "500m"}),
    (ResourceList(cpu_m=4000, memory_bytes=GiB), {"cpu": "4000m", "memory": "1073741824"}),
    (ResourceList(accelerators={GPU: 8, "amd.com/gpu": 0}), {GPU: "8"}),
])
def test_requests_equal_limits(resources, expected):
    container = pod_spec(workload(task(resources=resources)))["containers"][0]
    assert container["resources"] == {"requests": expected, "limits": expected}


def test_a_task_without_resources_asks_for_none():
    assert "resources" not in pod_spec(workload(task(resources=ResourceList())))["containers"][0]


@pytest.mark.parametrize(("shm", "options", "expected"), [
    (None, OPTIONS, str(GiB)), (2 * GiB, OPTIONS, str(2 * GiB)), (None, KubeOptions(shm_bytes=0), None),
    (0, OPTIONS, None),
])
def test_shm_is_a_memory_empty_dir(shm, options, expected):
    spec = pod_spec(workload(shm_size_bytes=shm), options)
    shm_volumes = [v for v in spec.get("volumes", []) if v["name"] == "dshm"]
    mounts = [m for m in spec["containers"][0].get("volumeMounts", []) if m["mountPath"] == "/dev/shm"]
    if expected is None:
        assert shm_volumes == [] and mounts == []
    else:
        assert shm_volumes == [{"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": expected}}]
        assert mounts == [{"name": "dshm", "mountPath": "/dev/shm"}]


def test_spaces_share_one_claim_and_read_only_follows_each_mount():
    w = workload(volumes=(Volume("project", "/data", read_only=True), Volume("user", "/home/alice", sub_path="x"),
                          Volume("pvc", "/a", claim="ckpt", read_only=True), Volume("pvc", "/b", claim="ckpt",
                                                                                   read_only=True)),
                 user="Zhang San")
    spec = pod_spec(w, KubeOptions(shm_bytes=0))
    assert spec["volumes"] == [{"name": "spaces", "persistentVolumeClaim": {"claimName": "crater-spaces"}},
                               {"name": "claim-0", "persistentVolumeClaim": {"claimName": "ckpt", "readOnly": True}}]
    assert spec["containers"][0]["volumeMounts"] == [
        {"name": "spaces", "mountPath": "/data", "subPath": "projects/vision", "readOnly": True},
        {"name": "spaces", "mountPath": "/home/alice", "subPath": f"users/{names.user_slug('Zhang San')}/x"},
        {"name": "claim-0", "mountPath": "/a", "readOnly": True},
        {"name": "claim-0", "mountPath": "/b", "readOnly": True}]


def test_model_affinity_uses_each_resources_label():
    w = workload(task(resources=ResourceList(accelerators={GPU: 1, "amd.com/gpu": 1})), accelerator_model="X1")
    assert pod_spec(w)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] == {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "amd.com/gpu.product-name", "operator": "In", "values": ["X1"]},
            {"key": "nvidia.com/gpu.product", "operator": "In", "values": ["X1"]}]}]}
    assert "affinity" not in pod_spec(workload(task(gpus=1)))
    assert "affinity" not in pod_spec(workload(task(), accelerator_model="X1"))  # no accelerator, no model


def test_a_model_without_a_node_label_is_refused():
    w = workload(task(resources=ResourceList(accelerators={"example.com/npu": 1})), accelerator_model="X1")
    with pytest.raises(InvalidInput) as caught:
        volcano_job(w, OPTIONS)
    assert (caught.value.code, caught.value.field) == ("kube.model_label_unknown", "accelerator_model")
    assert caught.value.params["resource"] == "example.com/npu"


@pytest.mark.parametrize(("options", "runtime", "expected"), [
    (OPTIONS, 600, 600), (OPTIONS, None, None), (KubeOptions(pod_deadlines=False), 600, None)])
def test_deadlines(options, runtime, expected):
    assert pod_spec(workload(max_runtime_s=runtime), options).get("activeDeadlineSeconds") == expected


def test_ttl_comes_from_the_workload_else_the_options():
    assert volcano_job(workload(ttl_after_finished_s=60), OPTIONS)["spec"]["ttlSecondsAfterFinished"] == 60
    assert volcano_job(workload(), KubeOptions(ttl_after_finished_s=5))["spec"]["ttlSecondsAfterFinished"] == 5
    assert "ttlSecondsAfterFinished" not in volcano_job(workload(), OPTIONS)["spec"]


def test_queue_gang_and_scheduler():
    spec = volcano_job(workload(task(replicas=4), task("b", 2), min_available=3), OPTIONS)["spec"]
    assert (spec["schedulerName"], spec["queue"], spec["minAvailable"]) == ("volcano", "crater-vision", 3)
    assert volcano_job(workload(task(replicas=4)), OPTIONS)["spec"]["minAvailable"] == 4
    assert volcano_job(workload(queue="crater-vision.u-alice"), OPTIONS)["spec"]["queue"] == "crater-vision.u-alice"


def test_the_same_workload_gives_the_same_job():
    w = workload(task("master", gpus=8), task("worker", 3, gpus=8), kind="pytorch")
    assert volcano_job(w, OPTIONS) == volcano_job(replace(w), OPTIONS)
    other = volcano_job(replace(w, attempt=2), OPTIONS)
    assert other["metadata"]["name"] == volcano_job(w, OPTIONS)["metadata"]["name"]
    assert other["metadata"]["annotations"]["crater.io/attempt"] == "2"


# -- sessions and namespaces ---------------------------------------------------------------------------------------

def test_session_service_selects_the_session_pod():
    w = workload(task("session", ports=(Port("http", 8888), Port("ssh", 2222))), kind="interactive")
    service = kube_schemas.validate(session_service(w, OPTIONS))
    assert service["metadata"]["name"] == names.job_name(UID) + "-session"
    assert service["spec"]["selector"] == {"volcano.sh/job-name": names.job_name(UID),
                                           "volcano.sh/task-spec": "session"}
    assert [p["targetPort"] for p in service["spec"]["ports"]] == ["http", "ssh"]


@pytest.mark.parametrize("w", [workload(task(ports=(Port("http", 80),))), workload(kind="interactive")])
def test_session_service_needs_an_interactive_workload_with_a_port(w):
    with pytest.raises(ValueError):
        session_service(w, OPTIONS)


@pytest.mark.parametrize(("w", "kinds"), [
    (workload(), ["Job"]), (workload(kind="interactive"), ["Job"]),  # a session without ports gets no Service
    (workload(task(ports=(Port("http", 80),)), kind="interactive"), ["Job", "Service"]),
    (workload(task(ports=(Port("http", 80),))), ["Job"]),
])
def test_objects_of_a_workload(w, kinds):
    assert [o["kind"] for o in workload_objects(w, OPTIONS)] == kinds


def test_no_namespace_is_made_when_it_is_shared():
    with pytest.raises(ValueError):
        project_namespace("vision", OPTIONS)
    assert kube_schemas.validate(sessions_policy("crater-jobs", OPTIONS))["metadata"]["namespace"] == "crater-jobs"


# -- quotas to queues ----------------------------------------------------------------------------------------------

A100_KEY, H100_KEY = model_key(GPU, A100), model_key(GPU, "H100")


@pytest.mark.parametrize(("quota", "capability", "deserved", "guarantee"), [
    (Quota(), {}, {}, {}),
    (Quota(capability={"cpu": 8000, "memory": GiB, GPU: 4}), {"cpu": 8000, "memory": GiB, GPU: 4}, {}, {}),
    # model keys alone give no ceiling on the name: model-less jobs have none in Crater
    (Quota(capability={A100_KEY: 4, H100_KEY: 2}), {}, {}, {}),
    (Quota(capability={GPU: 8, A100_KEY: 4}), {GPU: 8}, {}, {}),
    # deserved and guarantee count the models' devices by name
    (Quota(deserved={A100_KEY: 4, H100_KEY: 2}), {}, {GPU: 6}, {}),
    (Quota(deserved={GPU: 7, A100_KEY: 4, H100_KEY: 2}), {}, {GPU: 7}, {}),
    (Quota(deserved={GPU: 2, A100_KEY: 4}, capability={GPU: 3}), {GPU: 3}, {GPU: 3}, {}),
    (Quota(guarantee={A100_KEY: 4}, deserved={GPU: 2}), {}, {GPU: 2}, {GPU: 2}),
    (Quota(guarantee={"cpu": 1000}, deserved={"cpu": 2000}, capability={"cpu": 4000}), {"cpu": 4000},
     {"cpu": 2000}, {"cpu": 1000}),
    (Quota(capability={GPU: 0}), {GPU: 0}, {}, {}),  # a capability of 0 forbids the resource
])
def test_quota_to_queue_sections(quota, capability, deserved, guarantee):
    assert queue_sections(quota) == (capability, deserved, guarantee)
    queue = kube_schemas.validate(project_queues("vision", quota, OPTIONS)[0])
    spec = queue["spec"]
    assert spec.get("guarantee", {}).get("resource", {}).keys() == guarantee.keys()
    assert spec.get("capability", {}).keys() == capability.keys()


def test_queue_quantities_are_millicores_bytes_and_counts():
    quota = Quota(deserved={"cpu": 500, "memory": 3 * GiB, GPU: 2})
    assert project_queues("vision", quota, OPTIONS)[0]["spec"]["deserved"] == {
        "cpu": "500m", "memory": str(3 * GiB), GPU: "2"}


@pytest.mark.parametrize(("deserved", "shares", "members", "rest"), [
    ({GPU: 8}, {"a": {GPU: 2}, "b": {GPU: 4}}, {"a": {GPU: 2}, "b": {GPU: 4}}, {GPU: 2}),
    ({GPU: 8}, {"a": {GPU: 8}, "b": {GPU: 8}}, {"a": {GPU: 4}, "b": {GPU: 4}}, {}),
    ({GPU: 7}, {"a": {GPU: 6}, "b": {GPU: 3}}, {"a": {GPU: 4}, "b": {GPU: 2}}, {GPU: 1}),
    ({GPU: 8, "cpu": 1000}, {"a": {GPU: 1}}, {"a": {GPU: 1}}, {GPU: 7, "cpu": 1000}),
    ({}, {"a": {GPU: 1}}, {"a": {}}, {}),
])
def test_deserved_is_split_over_shares_without_exceeding_it(deserved, shares, members, rest):
    given, left = split_deserved(deserved, shares)
    assert (given, left) == (members, rest)
    for key, total in deserved.items():
        assert sum(m.get(key, 0) for m in given.values()) + left.get(key, 0) == total


def test_member_queues_are_children_within_the_project():
    quota = Quota(deserved={GPU: 4}, capability={GPU: 8})
    queues = project_queues("vision", quota, OPTIONS, {"alice": Quota(capability={GPU: 16, "cpu": 1000})})
    parent, alice, others = queues
    assert alice["metadata"]["name"] == "crater-vision.u-alice"
    assert alice["spec"]["parent"] == others["spec"]["parent"] == parent["metadata"]["name"] == "crater-vision"
    assert alice["spec"]["capability"] == {"cpu": "1000m", GPU: "8"}  # never above the project's
    assert alice["metadata"]["labels"][LABEL_USER] == "alice"
    assert others["metadata"]["name"] == "crater-vision.others"
    assert "parent" not in parent["spec"]
    for queue in queues:
        kube_schemas.validate(queue)


@pytest.mark.parametrize("weight", [0, 65536])
def test_queue_weight_is_bounded(weight):
    with pytest.raises(ValueError):
        project_queues("vision", Quota(), OPTIONS, weight=weight)


@pytest.mark.parametrize("fields", [{"namespace_mode": "per-user"}, {"image_pull_policy": "Sometimes"},
                                    {"rendezvous_port": 0}, {"shm_bytes": -1}, {"queue_prefix": "Crater-"},
                                    {"namespace_prefix": "x" * 17}])
def test_bad_options_are_refused(fields):
    with pytest.raises(ValueError):
        KubeOptions(**fields)


def test_member_queues_can_be_turned_off_for_a_flat_volcano():
    quota = Quota(deserved={GPU: 4})
    queues = project_queues("vision", quota, KubeOptions(member_queues=False), {"alice": Quota(capability={GPU: 1})})
    assert [q["metadata"]["name"] for q in queues] == ["crater-vision"]
