"""The Kubernetes API mock answers the real ``kubernetes`` client as an API server does: CRUD, the status
subresource, selectors, watches with bookmarks and 410, 404/409/410/422 Status objects, garbage collection,
logs, restarts and injected errors."""

from __future__ import annotations

import json
import threading

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException

from tests.kube_api import selectors

VC = ("batch.volcano.sh", "v1alpha1")


def vcjob(name: str, **spec) -> dict:
    task = {"name": "main", "replicas": 1, "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}}}
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"minAvailable": 1, "schedulerName": "volcano", "queue": "default", "tasks": [task], **spec}}


def status_of(exc: ApiException) -> dict:
    return json.loads(exc.body)


@pytest.fixture
def custom(kube_client):
    return client.CustomObjectsApi(kube_client)


@pytest.fixture
def core(kube_client):
    return client.CoreV1Api(kube_client)


def test_create_get_list_with_global_increasing_resource_versions(custom, core):
    a = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    b = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("b"))
    ns = core.create_namespace({"metadata": {"name": "team-x", "labels": {"crater.io/project": "x"}}})
    assert int(a["metadata"]["resourceVersion"]) < int(b["metadata"]["resourceVersion"]) \
        < int(ns.metadata.resource_version)
    assert a["metadata"]["uid"] != b["metadata"]["uid"] and a["metadata"]["namespace"] == "default"
    got = custom.get_namespaced_custom_object(*VC, "default", "jobs", "a")
    assert got == a
    listed = custom.list_namespaced_custom_object(*VC, "default", "jobs")
    assert [o["metadata"]["name"] for o in listed["items"]] == ["a", "b"]
    assert listed["metadata"]["resourceVersion"] == ns.metadata.resource_version
    only_b = custom.list_cluster_custom_object(*VC, "jobs", label_selector="app=b")
    assert [o["metadata"]["name"] for o in only_b["items"]] == ["b"]
    assert [n.metadata.name for n in core.list_namespace(label_selector="crater.io/project").items] == ["team-x"]


def test_limit_and_continue_page_a_list(custom):
    for i in range(5):
        custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob(f"j{i}"))
    first = custom.list_namespaced_custom_object(*VC, "default", "jobs", limit=2)
    rest = custom.list_namespaced_custom_object(*VC, "default", "jobs", limit=10,
                                                _continue=first["metadata"]["continue"])
    assert [o["metadata"]["name"] for o in first["items"] + rest["items"]] == [f"j{i}" for i in range(5)]
    assert first["metadata"]["remainingItemCount"] == 3 and "continue" not in rest["metadata"]


def test_errors_are_status_objects_with_the_real_codes(custom, core):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    with pytest.raises(ApiException) as exists:
        custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    assert exists.value.status == 409
    assert status_of(exists.value) | {"metadata": {}} == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "reason": "AlreadyExists",
        "message": 'jobs.batch.volcano.sh "a" already exists', "code": 409,
        "details": {"name": "a", "group": "batch.volcano.sh", "kind": "jobs"}}
    with pytest.raises(ApiException) as missing:
        custom.get_namespaced_custom_object(*VC, "default", "jobs", "nope")
    assert (missing.value.status, status_of(missing.value)["reason"]) == (404, "NotFound")
    with pytest.raises(ApiException) as no_ns:
        core.create_namespaced_pod("absent", {"metadata": {"name": "p"}, "spec": {"containers": []}})
    assert status_of(no_ns.value)["message"] == 'namespaces "absent" not found'
    bad = vcjob("bad")
    bad["spec"]["tasks"][0]["replicas"] = "two"
    with pytest.raises(ApiException) as invalid:
        custom.create_namespaced_custom_object(*VC, "default", "jobs", bad)
    body = status_of(invalid.value)
    assert (invalid.value.status, body["reason"], body["details"]["kind"]) == (422, "Invalid", "Job")
    assert [c["field"] for c in body["details"]["causes"]] == ["spec.tasks[0].replicas"]
    assert body["message"].startswith('Job.batch.volcano.sh "bad" is invalid: spec.tasks[0].replicas')
    with pytest.raises(ApiException) as bad_name:
        custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("Not_A_Name"))
    assert status_of(bad_name.value)["details"]["causes"][0]["field"] == "metadata.name"


def test_unknown_fields_of_a_custom_object_are_pruned(custom):
    job = vcjob("a")
    job["spec"]["notInTheSchema"] = 1
    made = custom.create_namespaced_custom_object(*VC, "default", "jobs", job)
    assert "notInTheSchema" not in made["spec"] and made["spec"]["minAvailable"] == 1


def test_replace_needs_the_current_resource_version(custom):
    made = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    unversioned = {**made, "metadata": {k: v for k, v in made["metadata"].items() if k != "resourceVersion"}}
    with pytest.raises(ApiException) as invalid:
        custom.replace_namespaced_custom_object(*VC, "default", "jobs", "a", unversioned)
    assert invalid.value.status == 422
    made["spec"]["minAvailable"] = 1
    made["spec"]["maxRetry"] = 5
    replaced = custom.replace_namespaced_custom_object(*VC, "default", "jobs", "a", made)
    assert replaced["metadata"]["generation"] == 2
    with pytest.raises(ApiException) as stale:
        custom.replace_namespaced_custom_object(*VC, "default", "jobs", "a", made)
    assert (stale.value.status, status_of(stale.value)["reason"]) == (409, "Conflict")


def test_status_is_a_subresource(custom, kube_api):
    made = custom.create_namespaced_custom_object(*VC, "default", "jobs", {**vcjob("a"), "status": {"version": 7}})
    assert "status" not in made
    after = custom.patch_namespaced_custom_object_status(*VC, "default", "jobs", "a",
                                                         {"status": {"state": {"phase": "Running"}}})
    assert after["status"] == {"state": {"phase": "Running"}} and after["metadata"]["generation"] == 1
    ignored = custom.patch_namespaced_custom_object(*VC, "default", "jobs", "a",
                                                    {"spec": {"maxRetry": 2}, "status": {"state": {"phase": "X"}}})
    assert ignored["status"]["state"]["phase"] == "Running" and ignored["spec"]["maxRetry"] == 2
    kube_api.store.set_status("batch.volcano.sh", "jobs", "default", "a", {"state": {"phase": "Completed"}})
    assert custom.get_namespaced_custom_object_status(*VC, "default", "jobs", "a")["status"]["state"]["phase"] \
        == "Completed"
    same = custom.patch_namespaced_custom_object(*VC, "default", "jobs", "a", {"spec": {"maxRetry": 2}})
    assert same["metadata"]["resourceVersion"] == custom.get_namespaced_custom_object(
        *VC, "default", "jobs", "a")["metadata"]["resourceVersion"]  # a no-op patch writes nothing


def test_watch_streams_changes_after_a_resource_version_with_bookmarks(custom):
    rv = custom.list_namespaced_custom_object(*VC, "default", "jobs")["metadata"]["resourceVersion"]
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("b"))
    custom.patch_namespaced_custom_object_status(*VC, "default", "jobs", "a", {"status": {"version": 1}})
    custom.delete_namespaced_custom_object(*VC, "default", "jobs", "b")
    seen = [(e["type"], e["raw_object"]["metadata"].get("name"), e["raw_object"]["metadata"]["resourceVersion"])
            for e in watch.Watch().stream(custom.list_namespaced_custom_object, *VC, "default", "jobs",
                                          resource_version=rv, allow_watch_bookmarks=True, timeout_seconds=1)]
    changes = [s[:2] for s in seen if s[0] != "BOOKMARK"]
    assert changes == [("ADDED", "a"), ("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    rvs = [int(s[2]) for s in seen]
    assert rvs == sorted(rvs) and ("BOOKMARK", None) in [s[:2] for s in seen]


def test_watch_without_resource_version_starts_with_the_current_objects(custom):
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    events = list(watch.Watch().stream(custom.list_namespaced_custom_object, *VC, "default", "jobs",
                                       timeout_seconds=1))
    assert [(e["type"], e["raw_object"]["metadata"]["name"]) for e in events] == [("ADDED", "a")]


def test_watch_with_a_label_selector_sees_an_object_leave_it_as_deleted(custom):
    rv = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object(*VC, "default", "jobs", "a", {"metadata": {"labels": {"app": "other"}}})
    events = list(watch.Watch().stream(custom.list_namespaced_custom_object, *VC, "default", "jobs",
                                       resource_version=rv, label_selector="app=a", timeout_seconds=1))
    assert [e["type"] for e in events] == ["DELETED"]


def test_watch_from_a_compacted_resource_version_gets_410_as_an_error_event(custom, kube_api, kube_client):
    rv = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))["metadata"]["resourceVersion"]
    custom.patch_namespaced_custom_object_status(*VC, "default", "jobs", "a", {"status": {"version": 1}})
    kube_api.restart(lose_history=True)
    with pytest.raises(ApiException) as gone:
        list(watch.Watch().stream(custom.list_namespaced_custom_object, *VC, "default", "jobs",
                                  resource_version=rv, timeout_seconds=1))
    assert gone.value.status == 410
    raw = custom.list_namespaced_custom_object(*VC, "default", "jobs", watch=True, resource_version=rv,
                                               timeout_seconds=1, _preload_content=False)
    assert raw.status == 200
    event = json.loads(raw.data.decode().splitlines()[0])
    assert event["type"] == "ERROR" and event["object"]["code"] == 410
    assert event["object"]["reason"] == "Expired"


def test_a_small_history_window_expires_old_resource_versions(custom, kube_api):
    kube_api.store.history_limit = 3
    rv = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))["metadata"]["resourceVersion"]
    for i in range(5):
        custom.patch_namespaced_custom_object_status(*VC, "default", "jobs", "a", {"status": {"version": i + 1}})
    assert kube_api.store.oldest_watchable > int(rv)
    with pytest.raises(ApiException) as gone:
        list(watch.Watch().stream(custom.list_namespaced_custom_object, *VC, "default", "jobs",
                                  resource_version=rv, timeout_seconds=1))
    assert gone.value.status == 410


def test_a_restart_drops_open_watches(custom, kube_api):
    rv = custom.list_namespaced_custom_object(*VC, "default", "jobs")["metadata"]["resourceVersion"]
    outcome: list = []

    def consume() -> None:
        try:
            for event in watch.Watch().stream(custom.list_namespaced_custom_object, *VC, "default", "jobs",
                                              resource_version=rv, timeout_seconds=30):
                outcome.append(event["type"])
            outcome.append("ended")
        except Exception as exc:  # noqa: BLE001 - the client's error for a dropped connection is what we look at
            outcome.append(type(exc).__name__)
    thread = threading.Thread(target=consume)
    thread.start()
    custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    for _ in range(100):
        if outcome:
            break
        thread.join(0.05)
    kube_api.restart()
    thread.join(5)
    assert not thread.is_alive() and outcome[0] == "ADDED" and len(outcome) == 2


def test_injected_errors_answer_the_next_requests(custom, kube_api):
    kube_api.fail_next(2, 503, match=lambda method, path: method == "GET")
    for _ in range(2):
        with pytest.raises(ApiException) as unavailable:
            custom.list_namespaced_custom_object(*VC, "default", "jobs")
        assert (unavailable.value.status, status_of(unavailable.value)["reason"]) == (503, "ServiceUnavailable")
    assert custom.list_namespaced_custom_object(*VC, "default", "jobs")["items"] == []


def test_foreground_delete_waits_for_the_dependants(custom, core, kube_api):
    job = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "a", "uid": job["metadata"]["uid"],
             "controller": True, "blockOwnerDeletion": True}
    core.create_namespaced_pod("default", {"metadata": {"name": "a-main-0", "ownerReferences": [owner]},
                                           "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    kube_api.store.graceful_pods = True  # the kubelet (here: the test) removes a deleted pod
    marked = custom.delete_namespaced_custom_object(*VC, "default", "jobs", "a", propagation_policy="Foreground")
    assert marked["metadata"]["deletionTimestamp"] and marked["metadata"]["finalizers"] == ["foregroundDeletion"]
    pod = core.read_namespaced_pod("a-main-0", "default")
    assert pod.metadata.deletion_timestamp is not None
    assert custom.get_namespaced_custom_object(*VC, "default", "jobs", "a")["metadata"]["deletionTimestamp"]
    kube_api.store.finish_pod_deletion("default", "a-main-0")
    with pytest.raises(ApiException) as gone:
        custom.get_namespaced_custom_object(*VC, "default", "jobs", "a")
    assert gone.value.status == 404


def test_background_delete_removes_the_owner_then_its_dependants(custom, core):
    job = custom.create_namespaced_custom_object(*VC, "default", "jobs", vcjob("a"))
    owner = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "name": "a", "uid": job["metadata"]["uid"]}
    core.create_namespaced_pod("default", {"metadata": {"name": "a-main-0", "ownerReferences": [owner]},
                                           "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    custom.delete_namespaced_custom_object(*VC, "default", "jobs", "a", propagation_policy="Background")
    assert custom.list_namespaced_custom_object(*VC, "default", "jobs")["items"] == []
    assert core.list_namespaced_pod("default").items == []


def test_pod_logs_wait_for_the_container_then_follow_it(core, kube_api):
    core.create_namespaced_pod("default", {"metadata": {"name": "p"},
                                           "spec": {"containers": [{"name": "main", "image": "busybox"}]}})
    with pytest.raises(ApiException) as waiting:
        core.read_namespaced_pod_log("p", "default")
    assert waiting.value.status == 400 and "is waiting to start" in status_of(waiting.value)["message"]
    running = {"phase": "Running", "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "",
                                                          "ready": True, "restartCount": 0,
                                                          "state": {"running": {}}}]}
    kube_api.store.set_status("", "pods", "default", "p", running)
    kube_api.store.append_log("default", "p", "main", ["one", "two"])
    assert core.read_namespaced_pod_log("p", "default") == "one\ntwo\n"
    assert core.read_namespaced_pod_log("p", "default", tail_lines=1) == "two\n"
    stream = core.read_namespaced_pod_log("p", "default", follow=True, _preload_content=False)
    kube_api.store.append_log("default", "p", "main", ["three"])
    done = {**running, "phase": "Succeeded", "containerStatuses": [
        {**running["containerStatuses"][0], "state": {"terminated": {"exitCode": 0}}}]}
    kube_api.store.set_status("", "pods", "default", "p", done)
    assert stream.data.decode() == "one\ntwo\nthree\n"


def test_discovery_serves_the_dynamic_client(kube_client):
    dyn = dynamic.DynamicClient(kube_client)
    jobs = dyn.resources.get(api_version="batch.volcano.sh/v1alpha1", kind="Job")
    queues = dyn.resources.get(api_version="scheduling.volcano.sh/v1beta1", kind="Queue")
    assert (jobs.namespaced, queues.namespaced) == (True, False)
    dyn.create(queues, body={"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "Queue",
                             "metadata": {"name": "p1"}, "spec": {"capability": {"nvidia.com/gpu": "8"}}})
    assert [q.metadata.name for q in dyn.get(queues).items] == ["p1"]


@pytest.mark.parametrize("selector,labels,matches", [
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "c"}, False),
    ("a!=b", {}, True),
    ("a!=b", {"a": "b"}, False),
    ("a in (x, y)", {"a": "y"}, True),
    ("a notin (x,y),b", {"a": "z", "b": "1"}, True),
    ("a notin (x,y),b", {"a": "z"}, False),
    ("!a", {"a": "1"}, False),
    ("", {"a": "1"}, True),
])
def test_label_selectors(selector, labels, matches):
    assert selectors.label_matcher(selector)({"metadata": {"labels": labels}}) is matches


def test_built_in_kinds_and_strict_custom_writes_are_checked_against_their_schemas(kube_client, custom):
    services = dynamic.DynamicClient(kube_client).resources.get(api_version="v1", kind="Service")
    bad_port = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "svc"},
                "spec": {"ports": [{"port": "http"}]}}  # the typed client would refuse it before sending
    with pytest.raises(ApiException) as invalid:
        services.create(body=bad_port, namespace="default")
    assert invalid.value.status == 422
    assert status_of(invalid.value)["details"]["causes"][0]["field"] == "spec.ports[0].port"
    job = vcjob("strict")
    job["spec"]["notInTheSchema"] = 1
    with pytest.raises(ApiException) as strict:
        custom.create_namespaced_custom_object(*VC, "default", "jobs", job, field_validation="Strict")
    assert strict.value.status == 422 and "notInTheSchema" in status_of(strict.value)["message"]
