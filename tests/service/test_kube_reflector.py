"""The list-then-watch reflector against the Kubernetes API mock with the real client: initial list (paged),
watch events in order, bookmarks, resume after an API server restart, re-list with nothing lost on 410, backoff on
errors, stop, and a fresh reflector after a Crater restart."""

from __future__ import annotations

import threading
import time
from functools import partial

import pytest
from kubernetes import client

from crater_app.cluster.kube.reflector import Reflector, ReflectorEvent


def until(check, timeout: float = 5.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.01)
    raise AssertionError("condition not met in time")


def pod(name: str, phase: str = "Pending") -> dict:
    return {"metadata": {"name": name}, "spec": {"containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": phase}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[ReflectorEvent] = []
        self.lock = threading.Lock()

    def __call__(self, event: ReflectorEvent) -> None:
        with self.lock:
            self.events.append(event)

    def seen(self, relist: bool | None = None) -> list[tuple[str, str]]:
        with self.lock:
            return [(e.type, e.key) for e in self.events if relist is None or e.relist == relist]

    def phases(self, key: str) -> list[str]:
        with self.lock:
            return [e.obj["status"]["phase"] for e in self.events if e.key == key and e.type != "DELETED"]


@pytest.fixture
def store(kube_api):
    return kube_api.store


@pytest.fixture
def reflectors():
    made: list[Reflector] = []
    yield made
    for r in made:
        r.stop()


@pytest.fixture
def pods_reflector(kube_client, reflectors):
    def make(**kwargs) -> tuple[Reflector, Recorder]:
        rec = Recorder()
        r = Reflector("pods", partial(client.CoreV1Api(kube_client).list_namespaced_pod, "default"), on_event=rec,
                      backoff_initial_s=0.02, backoff_max_s=0.2, **kwargs)
        reflectors.append(r)
        return r.start(), rec
    return make


def set_phase(store, name: str, phase: str) -> None:
    store.set_status("", "pods", "default", name, {"phase": phase})


def test_the_first_list_fills_the_cache_in_pages_and_reports_a_relist(store, pods_reflector):
    for i in range(5):
        store.create("", "pods", "default", pod(f"p{i}"), keep_status=True)
    r, rec = pods_reflector(page_size=2)
    assert r.wait_synced(5)
    assert sorted(o["metadata"]["name"] for o in r.items()) == [f"p{i}" for i in range(5)]
    assert rec.seen() == [("ADDED", f"default/p{i}") for i in range(5)] + [("RELISTED", "")]
    assert r.generation == 1 and r.stats["lists"] == 1 and r.get("default/p3")["metadata"]["name"] == "p3"
    assert rec.events[-1].resource_version == str(store.resource_version)


def test_watch_events_are_applied_and_reported_in_order(store, pods_reflector):
    r, rec = pods_reflector()
    assert r.wait_synced(5)
    store.create("", "pods", "default", pod("a"), keep_status=True)
    for phase in ("Running", "Succeeded"):
        set_phase(store, "a", phase)
    store.delete("", "pods", "default", "a")
    until(lambda: ("DELETED", "default/a") in rec.seen())
    assert rec.seen(relist=False) == [("ADDED", "default/a"), ("MODIFIED", "default/a"), ("MODIFIED", "default/a"),
                                      ("DELETED", "default/a")]
    assert rec.phases("default/a") == ["Pending", "Running", "Succeeded"]
    assert r.get("default/a") is None and r.resource_version == str(store.resource_version)


def test_bookmarks_advance_the_resource_version_without_events(store, kube_api, pods_reflector):
    r, rec = pods_reflector()
    assert r.wait_synced(5)
    store.create("", "namespaces", "", {"metadata": {"name": "other"}})
    until(lambda: r.resource_version == str(store.resource_version))
    assert r.stats["bookmarks"] >= 1 and rec.seen(relist=False) == []


def test_an_api_server_restart_resumes_the_watch_and_loses_nothing(store, kube_api, pods_reflector):
    store.create("", "pods", "default", pod("a"), keep_status=True)
    r, rec = pods_reflector()
    assert r.wait_synced(5)
    kube_api.restart(outage_s=0.3)
    for phase in ("Running", "Succeeded"):
        set_phase(store, "a", phase)
    store.create("", "pods", "default", pod("b"), keep_status=True)
    until(lambda: ("ADDED", "default/b") in rec.seen(relist=False))
    assert rec.phases("default/a") == ["Pending", "Running", "Succeeded"]
    assert r.generation == 1 and r.stats["expired"] == 0 and r.stats["errors"] >= 1


def test_410_gone_relists_and_reports_every_difference(store, kube_api, pods_reflector):
    for name in ("a", "b"):
        store.create("", "pods", "default", pod(name), keep_status=True)
    r, rec = pods_reflector()
    assert r.wait_synced(5)
    kube_api.restart(lose_history=True, outage_s=0.3)
    set_phase(store, "a", "Running")
    store.delete("", "pods", "default", "b")
    store.create("", "pods", "default", pod("c"), keep_status=True)
    store.compact()  # the changes above are gone from the history too
    until(lambda: r.generation == 2)
    until(lambda: rec.seen()[-1] == ("RELISTED", ""))
    assert rec.seen()[3:] == [("MODIFIED", "default/a"), ("ADDED", "default/c"), ("DELETED", "default/b"),
                              ("RELISTED", "")]
    assert all(e.relist and e.generation == 2 for e in rec.events[3:])
    assert r.stats["expired"] == 1
    assert {o["metadata"]["name"]: o["status"]["phase"] for o in r.items()} == {"a": "Running", "c": "Pending"}
    store.create("", "pods", "default", pod("d"), keep_status=True)
    until(lambda: r.get("default/d") is not None)


def test_errors_back_off_with_growing_waits_then_recover(store, kube_api, pods_reflector):
    kube_api.fail_next(4, 503, match=lambda method, path: path.endswith("/pods"))
    waits: list[float] = []
    r, rec = pods_reflector()
    until(lambda: (waits.append(r.backoff_s) or r.synced))
    assert r.stats["errors"] == 4 and "503" in r.last_error
    distinct = sorted({w for w in waits if w})
    assert distinct[:3] == [0.02, 0.04, 0.08] and max(distinct) <= 0.2
    assert r.backoff_s == 0.0


def test_stop_ends_an_open_watch_at_once(pods_reflector):
    r, _ = pods_reflector(watch_timeout_s=300)
    assert r.wait_synced(5)
    time.sleep(0.1)
    thread = r._thread
    began = time.monotonic()
    r.stop()
    assert not thread.is_alive() and time.monotonic() - began < 2


def test_a_fresh_reflector_after_a_crater_restart_relists_everything(store, pods_reflector):
    store.create("", "pods", "default", pod("a"), keep_status=True)
    first, _ = pods_reflector()
    assert first.wait_synced(5)
    first.stop()
    set_phase(store, "a", "Running")
    second, rec = pods_reflector()
    assert second.wait_synced(5)
    assert rec.seen() == [("ADDED", "default/a"), ("RELISTED", "")] and rec.events[0].relist
    assert second.generation == 1 and rec.phases("default/a") == ["Running"]


def test_a_cluster_scoped_custom_kind_and_a_failing_consumer(store, kube_client, reflectors):
    calls: list[str] = []

    def consumer(event: ReflectorEvent) -> None:
        calls.append(event.key)
        raise RuntimeError("consumer bug")
    custom = client.CustomObjectsApi(kube_client)
    r = Reflector("queues", partial(custom.list_cluster_custom_object, "scheduling.volcano.sh", "v1beta1", "queues"),
                  on_event=consumer)
    reflectors.append(r.start())
    assert r.wait_synced(5)
    for name in ("q1", "q2"):
        store.create("scheduling.volcano.sh", "queues", "", {"metadata": {"name": name}, "spec": {"weight": 1}})
    until(lambda: r.get("q2") is not None)
    assert calls == ["", "q1", "q2"] and r.get("q1")["kind"] == "Queue"


def test_the_backends_watches_select_crater_jobs_and_stop_at_once(store, kube_client):
    from crater_app.cluster.kube.options import KubeOptions
    from crater_app.cluster.kube.watching import Watches

    store.create("", "namespaces", "", {"metadata": {"name": "crater-jobs"}})
    labelled = {"metadata": {"name": "j1", "labels": {"crater.io/job-uid": "u1"}},
                "spec": {"tasks": [{"name": "main", "replicas": 1, "template": {}}]}}
    store.create("batch.volcano.sh", "jobs", "crater-jobs", labelled)
    store.create("batch.volcano.sh", "jobs", "crater-jobs", {**labelled, "metadata": {"name": "not-crater"}})
    events = []
    watches = Watches(kube_client, KubeOptions(namespace="crater-jobs"),
                      lambda kind, type_, obj: events.append((kind, type_, obj["metadata"]["name"])))
    watches.start()
    try:
        assert watches.wait_synced(5)
        assert [e for e in events if e[0] == "jobs"] == [("jobs", "ADDED", "j1")]
        assert watches.lists == dict.fromkeys(watches.reflectors, 1)
        store.create("", "pods", "crater-jobs", pod("p1"), keep_status=True)
        until(lambda: ("pods", "ADDED", "p1") in events)
    finally:
        began = time.monotonic()
        watches.stop()
    assert time.monotonic() - began < 2
    assert not any(r._thread for r in watches.reflectors.values())
