"""/api/v1/approvals and /api/v1/notifications: the flow over HTTP, and bad input (4xx naming the field and the
limit, writing nothing)."""

from __future__ import annotations

import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.db.models import Approval, Notification
from crater_app.services import projects
from tests.api.conftest import assert_error
from tests.helpers import counts, job_row

P = "/api/v1"


def everything(ctx) -> dict:
    """Rows a request could write: jobs, events, operation log, backend workloads, approvals, notifications."""
    out = counts(ctx)
    with ctx.session() as s:
        out["approvals"] = s.exec(select(func.count()).select_from(Approval)).one()
        out["notifications"] = s.exec(select(func.count()).select_from(Notification)).one()
        out["decided"] = s.exec(select(func.count()).select_from(Approval).where(Approval.status != "pending")).one()
    return out


@pytest.fixture
def job_id(api) -> int:
    r = api.submit("alice", name="train", command=["sleep", "30"], max_runtime="1h")
    assert r.status_code == 201, r.text
    return r.json()["id"]


def test_extend_runtime_flow_and_notifications(api, job_id):
    c = api.client
    r = c.post(f"{P}/approvals", headers=api.auth("alice"), json={
        "kind": "extend_runtime", "reason": "one more epoch", "job_id": job_id, "payload": {"max_runtime": "2h"}})
    assert r.status_code == 201, r.text
    auto = r.json()
    assert (auto["status"], auto["auto"], auto["decided_by"], auto["payload"]) == (
        "approved", True, None, {"max_runtime": 7200})
    assert job_row(api.world.ctx, job_id).max_runtime_s == 7200
    r = c.post(f"{P}/approvals", headers=api.auth("alice"), json={
        "kind": "extend_runtime", "reason": "and another", "job_id": job_id, "project": "default",
        "payload": {"max_runtime": 4 * 3600}})
    pending = r.json()
    assert r.status_code == 201 and pending["status"] == "pending" and pending["current"] == {"max_runtime": 7200}
    r = c.get(f"{P}/approvals", headers=api.auth("alice"), params={"status": "pending"})
    assert r.status_code == 200 and [a["id"] for a in r.json()["items"]] == [pending["id"]]
    assert r.json()["total"] == 1 and r.json()["items"][0]["can_decide"] is False
    r = c.get(f"{P}/approvals", headers=api.auth("admin"), params={"page_size": 1, "page": 2})
    assert r.json()["total"] == 2 and [a["id"] for a in r.json()["items"]] == [auto["id"]]
    assert c.get(f"{P}/approvals", headers=api.auth("bob")).json()["items"] == []
    r = c.post(f"{P}/approvals/{pending['id']}/approve", headers=api.auth("admin"))  # no body: no note
    assert r.status_code == 200, r.text
    assert (r.json()["status"], r.json()["decided_by"], r.json()["decision_note"]) == ("approved", "admin", "")
    assert job_row(api.world.ctx, job_id).max_runtime_s == 4 * 3600
    assert c.get(f"{P}/approvals/{pending['id']}", headers=api.auth("alice")).json()["status"] == "approved"
    # Notifications: both decisions, newest first; mark one, then all.
    r = c.get(f"{P}/notifications", headers=api.auth("alice"))
    body = r.json()
    assert body["unread"] == 2 and [n["kind"] for n in body["items"]] == ["approval.approved"] * 2
    assert body["items"][0]["args"]["id"] == pending["id"] and body["items"][0]["read"] is False
    r = c.post(f"{P}/notifications/read", headers=api.auth("alice"), json={"ids": [body["items"][0]["id"]]})
    assert r.status_code == 200 and r.json() == {"marked": 1, "unread": 1}
    assert len(c.get(f"{P}/notifications", headers=api.auth("alice"), params={"unread": "true"}).json()["items"]) == 1
    r = c.post(f"{P}/notifications/read", headers=api.auth("alice"))
    assert r.json() == {"marked": 1, "unread": 0}


@pytest.mark.parametrize("body, status, field, words", [
    ({"kind": "bonus", "reason": "r", "job_id": 1}, 422, "kind", "must be one of quota, extend_runtime"),
    ({"kind": 3, "reason": "r"}, 422, "kind", "must be one of"),
    ({"reason": "r", "job_id": 1}, 422, "kind", "required"),
    ({"kind": "large_job", "reason": "r", "job_id": 1}, 422, "kind", "threshold"),
    ({"kind": "reclaim_lock", "job_id": "JOB"}, 422, "reason", "required"),
    ({"kind": "reclaim_lock", "reason": "   ", "job_id": "JOB"}, 422, "reason", "empty"),
    ({"kind": "reclaim_lock", "reason": "x" * 1001, "job_id": "JOB"}, 422, "reason", "1000"),
    ({"kind": "reclaim_lock", "reason": 5, "job_id": "JOB"}, 422, "reason", "text"),
    ({"kind": "reclaim_lock", "reason": "r"}, 422, "job_id", "required"),
    ({"kind": "reclaim_lock", "reason": "r", "job_id": "7"}, 422, "job_id", "positive integer"),
    ({"kind": "reclaim_lock", "reason": "r", "job_id": 987654}, 404, "job_id", "does not exist"),
    ({"kind": "reclaim_lock", "reason": "r", "job_id": "JOB", "payload": {"x": 1}}, 422, "payload", "no payload"),
    ({"kind": "reclaim_lock", "reason": "r", "job_id": "JOB", "project": "Nope"}, 422, "project", "DNS-1123"),
    ({"kind": "reclaim_lock", "reason": "r", "job_id": "JOB", "project": "other"}, 422, "project", "belongs to"),
    ({"kind": "extend_runtime", "reason": "r", "job_id": "JOB"}, 422, "payload", "max_runtime"),
    ({"kind": "extend_runtime", "reason": "r", "job_id": "JOB", "payload": {"max_runtime": "soon"}}, 422,
     "payload.max_runtime", "duration"),
    ({"kind": "extend_runtime", "reason": "r", "job_id": "JOB", "payload": {"max_runtime": "31d"}}, 422,
     "payload.max_runtime", "30 days"),
    ({"kind": "extend_runtime", "reason": "r", "job_id": "JOB", "payload": {"max_runtime": 0}}, 422,
     "payload.max_runtime", "at least 1 second"),
    ({"kind": "extend_runtime", "reason": "r", "job_id": "JOB", "payload": {"max_runtime": "30m"}}, 422,
     "payload.max_runtime", "not above the job's current max_runtime of 1h"),
    ({"kind": "extend_runtime", "reason": "r", "job_id": "JOB", "payload": {"max_runtime": "2h", "x": 1}}, 422,
     "payload", "max_runtime"),
    ({"kind": "quota", "reason": "r", "payload": {"capability": {"cpu": 4}}}, 422, "project", "required"),
    ({"kind": "quota", "reason": "r", "project": "default", "job_id": "JOB"}, 422, "job_id", "not used"),
    ({"kind": "quota", "reason": "r", "project": "nope", "payload": {"capability": {"cpu": 4}}}, 404, "project",
     "does not exist"),
    ({"kind": "quota", "reason": "r", "project": "default", "payload": {"capability": {"nvidia.com/gpu": -1}}}, 422,
     "payload.capability.nvidia.com/gpu", "negative"),
    ({"kind": "reclaim_lock", "reason": "r", "job_id": "JOB", "extra": 1}, 422, "extra", "unknown field"),
])
def test_create_bad_input_writes_nothing(api, job_id, body, status, field, words):
    projects.create_project(api.world.ctx, api.world.admin, "other")
    body = {k: (job_id if v == "JOB" else v) for k, v in body.items()}
    before = everything(api.world.ctx)
    r = api.client.post(f"{P}/approvals", headers=api.auth("alice"), json=body)
    error = assert_error(r, status, None, field)
    assert words in error["message"], error
    assert everything(api.world.ctx) == before


def test_bodies_that_are_not_objects(api, job_id):
    c = api.client
    before = everything(api.world.ctx)
    assert_error(c.post(f"{P}/approvals", headers=api.auth("alice"), json=["reclaim_lock"]), 422, "invalid")
    assert_error(c.post(f"{P}/approvals", headers={**api.auth("alice"), "content-type": "application/json"},
                        content=b"{"), 422, "invalid")
    assert_error(c.post(f"{P}/approvals", headers=api.auth("alice")), 422, "invalid")  # no body at all
    assert everything(api.world.ctx) == before


def test_decisions_bad_input_and_double_decision(api, job_id):
    c = api.client
    r = c.post(f"{P}/approvals", headers=api.auth("alice"), json={"kind": "reclaim_lock", "reason": "r",
                                                                   "job_id": job_id})
    approval_id = r.json()["id"]
    before = everything(api.world.ctx)
    for body, field, words in (({"note": "n" * 1001}, "note", "1000"), ({"note": 3}, "note", "text"),
                               ({"notes": "x"}, "notes", "unknown field")):
        error = assert_error(c.post(f"{P}/approvals/{approval_id}/approve", headers=api.auth("admin"), json=body),
                             422, "invalid", field)
        assert words in error["message"]
    assert_error(c.post(f"{P}/approvals/{approval_id}/approve", headers=api.auth("alice"), json={}), 403,
                 "forbidden", "id", "own request")
    assert_error(c.post(f"{P}/approvals/424242/approve", headers=api.auth("admin")), 404, "not_found", "id")
    assert_error(c.get(f"{P}/approvals/{approval_id}", headers=api.auth("bob")), 404, "not_found", "id")
    assert_error(c.get(f"{P}/approvals", headers=api.auth("admin"), params={"status": "done"}), 422, "invalid",
                 "status")
    assert_error(c.get(f"{P}/approvals", headers=api.auth("admin"), params={"kind": "bonus"}), 422, "invalid", "kind")
    assert_error(c.get(f"{P}/approvals", headers=api.auth("admin"), params={"page_size": 500}), 422, "invalid",
                 "page_size")
    assert everything(api.world.ctx) == before
    r = c.post(f"{P}/approvals/{approval_id}/reject", headers=api.auth("admin"), json={"note": "not this week"})
    assert r.status_code == 200 and r.json()["decision_note"] == "not this week"
    after = everything(api.world.ctx)
    for verb in ("approve", "reject"):
        assert_error(c.post(f"{P}/approvals/{approval_id}/{verb}", headers=api.auth("admin"), json={"note": "again"}),
                     409, "conflict", "id", "already rejected")
    assert everything(api.world.ctx) == after
    assert job_row(api.world.ctx, job_id).reclaim_lock is False


def test_notifications_bad_input(api):
    c = api.client
    before = everything(api.world.ctx)
    for body, field in (({"ids": "all"}, "ids"), ({"ids": [1, "x"]}, "ids"), ({"ids": list(range(501))}, "ids"),
                        ({"all": True}, "all")):
        assert_error(c.post(f"{P}/notifications/read", headers=api.auth("alice"), json=body), 422, "invalid", field)
    assert_error(c.get(f"{P}/notifications", headers=api.auth("alice"), params={"limit": 0}), 422, "invalid", "limit")
    assert everything(api.world.ctx) == before
