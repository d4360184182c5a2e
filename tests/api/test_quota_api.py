"""``PUT/GET /api/v1/projects/{name}/quota``, member shares, and "why is my job waiting" over HTTP (both languages)."""

from __future__ import annotations

import pytest
from sqlalchemy import func
from sqlmodel import select

from crater_app.api.language import preferred_language
from crater_app.db.models import OperationLog, Project, ProjectMember
from crater_app.services import projects
from crater_app.services.reconcile import LeaderLoop
from tests.api.conftest import assert_error
from tests.helpers import drive_until

GPU = "nvidia.com/gpu"
A100 = "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB"


@pytest.fixture
def lab(api):
    ctx, admin = api.world.ctx, api.world.admin
    projects.create_project(ctx, admin, "lab")
    projects.set_member(ctx, admin, "lab", "alice", "admin")
    projects.set_member(ctx, admin, "lab", "bob", "member")
    return api


def _state(ctx) -> tuple:
    with ctx.session(read_only=True) as s:
        project = s.exec(select(Project).where(Project.name == "lab")).one()
        shares = sorted((m.user_id, str(m.share)) for m in s.exec(select(ProjectMember)).all())
        logs = s.exec(select(func.count()).select_from(OperationLog)).one()
    return project.guarantee, project.deserved, project.capability, shares, logs


def test_set_and_read_a_quota(lab):
    c, admin = lab.client, lab.auth("admin")
    body = {"guarantee": {GPU: 1}, "deserved": {GPU: "2", "cpu": "8"},
            "capability": {GPU: 4, A100: 2, "cpu": "16000m", "memory": "64Gi"}}
    r = c.put("/api/v1/projects/lab/quota", json=body, headers=admin)
    assert r.status_code == 200, r.text
    assert r.json() == {
        "project": "lab", "guarantee": {GPU: "1"}, "deserved": {"cpu": "8", GPU: "2"},
        "capability": {"cpu": "16", "memory": str(64 * 1024**3), GPU: "4", A100: "2"},
        "used": {}, "admitted_jobs": 0, "held_jobs": 0,
    }
    r = lab.submit("bob", name="one", project="lab", resources={GPU: 3, "cpu": "1"})
    assert r.status_code == 201 and r.json()["phase"] == "Queued", r.text
    r = lab.submit("bob", name="two", project="lab", resources={GPU: 2})
    assert r.status_code == 201 and r.json()["phase"] == "Held" and r.json()["reason_code"] == "quota"
    for who in ("bob", "alice", "admin"):  # readers of the project
        r = c.get("/api/v1/projects/lab/quota", headers=lab.auth(who))
        # bob's first job names no memory: it asks for the default (2Gi)
        assert r.status_code == 200 and r.json()["used"] == {"cpu": "1", "memory": str(2 * 1024**3), GPU: "3"}, r.text
        assert (r.json()["admitted_jobs"], r.json()["held_jobs"]) == (1, 1)
    r = c.get("/api/v1/projects/lab", headers=lab.auth("bob"))
    assert r.json()["quota"]["capability"][GPU] == "4" and r.json()["quota"]["held_jobs"] == 1
    with lab.world.ctx.session(read_only=True) as s:
        op = s.exec(select(OperationLog).where(OperationLog.action == "project:quota:set")).one()
    assert op.actor == "admin" and op.target == "lab" and op.code == "quota.set"
    assert op.args["capability_before"] == {} and op.args["capability"]["cpu"] == 16000
    assert "capability no limit → 4 × nvidia.com/gpu" in op.details and "16 cores" in op.details
    # Raising the capability lets the held job in at the loop's next round.
    assert c.put("/api/v1/projects/lab/quota", json={"capability": {GPU: 5}}, headers=admin).status_code == 200
    drive_until(LeaderLoop(lab.world.ctx), _job_id(lab, "two"), {"Queued", "Running", "Succeeded"})


def _job_id(api, name: str) -> int:
    r = api.client.get(f"/api/v1/jobs?q={name}", headers=api.auth("admin"))
    return next(j["id"] for j in r.json()["items"] if j["name"] == name)


@pytest.mark.parametrize("body, field, words", [
    ({"capability": {GPU: -1}}, f"capability.{GPU}", "negative"),
    ({"capability": {GPU: "0.5"}}, f"capability.{GPU}", "whole number of devices"),
    ({"guarantee": {GPU: 4}, "capability": {GPU: 2}}, f"guarantee.{GPU}", "must not exceed"),
    ({"deserved": {GPU: 4}, "capability": {GPU: 2}}, f"deserved.{GPU}", "must not exceed"),
    ({"capability": {"bogus": 1}}, "capability.bogus", "unknown resource"),
    ({"capability": {"nvidia.com/gpu:": 1}}, "capability.nvidia.com/gpu:", "model"),
    ({"capability": "8 GPUs"}, "capability", "mapping"),
    ({"limit": {GPU: 1}}, "limit", "unknown field"),
])
def test_bad_quota_input_is_refused_and_writes_nothing(lab, body, field, words):
    before = _state(lab.world.ctx)
    r = lab.client.put("/api/v1/projects/lab/quota", json=body, headers=lab.auth("admin"))
    err = assert_error(r, 422, "invalid", field)
    assert words in err["message"]
    assert _state(lab.world.ctx) == before


def test_who_may_set_a_quota(lab):
    before = _state(lab.world.ctx)
    body = {"capability": {GPU: 1}}
    assert_error(lab.client.put("/api/v1/projects/nope/quota", json=body, headers=lab.auth("admin")), 404, "not_found")
    assert_error(lab.client.put("/api/v1/projects/lab/quota", json=body, headers=lab.auth("alice")), 403, "forbidden")
    assert_error(lab.client.put("/api/v1/projects/lab/quota", json=body, headers=lab.auth("gus")), 404, "not_found")
    assert_error(lab.client.put("/api/v1/projects/lab/quota", json=body), 401, "unauthenticated")
    assert_error(lab.client.get("/api/v1/projects/lab/quota", headers=lab.auth("gus")), 404, "not_found")
    assert _state(lab.world.ctx) == before


def test_member_shares(lab):
    c = lab.client
    lab.client.put("/api/v1/projects/lab/quota", json={"capability": {GPU: 4}}, headers=lab.auth("admin"))
    # A project admin sets a member's share inside the capability; the role may be left out.
    r = c.put("/api/v1/projects/lab/members/bob", json={"share": {GPU: 2}}, headers=lab.auth("alice"))
    assert r.status_code == 200 and r.json()["share"] == {GPU: "2"} and r.json()["role"] == "member", r.text
    before = _state(lab.world.ctx)
    err = assert_error(c.put("/api/v1/projects/lab/members/bob", json={"share": {GPU: 5}}, headers=lab.auth("alice")),
                       422, "invalid", f"share.{GPU}")
    assert "capability of project 'lab' (4 × nvidia.com/gpu)" in err["message"]
    assert_error(c.put("/api/v1/projects/lab/members/bob", json={"share": {GPU: 1}}, headers=lab.auth("bob")),
                 403, "forbidden")
    assert_error(c.put("/api/v1/projects/lab/members/gus", json={"share": {GPU: 1}}, headers=lab.auth("alice")),
                 422, "invalid", "role")
    assert _state(lab.world.ctx) == before
    members = c.get("/api/v1/projects/lab", headers=lab.auth("alice")).json()["members"]
    assert {m["username"]: m["share"] for m in members} == {"alice": {}, "bob": {GPU: "2"}}
    r1 = lab.submit("bob", name="b1", project="lab", resources={GPU: 2})
    r2 = lab.submit("bob", name="b2", project="lab", resources={GPU: 1})
    assert (r1.json()["phase"], r2.json()["phase"], r2.json()["reason_code"]) == ("Queued", "Held", "share")


def test_why_is_my_job_waiting_in_both_languages(lab):
    c = lab.client
    c.put("/api/v1/projects/lab/quota", json={"capability": {GPU: 1}}, headers=lab.auth("admin"))
    lab.submit("bob", name="first", project="lab", resources={GPU: 1})
    held = lab.submit("bob", name="second", project="lab", resources={GPU: 1}).json()
    r = c.get(f"/api/v1/jobs/{held['id']}", headers=lab.auth("bob"))
    body = r.json()
    assert body["phase"] == "Held" and body["reason_code"] == "quota"
    assert body["reason"].startswith("Held by the quota of project lab: its capability is 1 × nvidia.com/gpu")
    assert body["reason_args"]["used"] == {GPU: 1} and body["reason_args"]["position"] == 1
    zh = c.get(f"/api/v1/jobs/{held['id']}", headers={**lab.auth("bob"), "Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"})
    assert zh.json()["reason"] == (
        "受项目 lab 的配额限制而挂起：其上限为 1 × nvidia.com/gpu，1 位用户的 1 个作业正在使用 1 × nvidia.com/gpu，"
        "本作业申请 1 × nvidia.com/gpu。在该项目的等待队列中排第 1 位（共 1 个）。无法估计启动时间：它所等待的作业未设置 "
        "max_runtime。")
    assert zh.json()["reason_code"] == "quota"
    page = c.get("/api/v1/jobs?phase=Held", headers={**lab.auth("bob"), "Accept-Language": "zh"}).json()
    assert [j["name"] for j in page["items"]] == ["second"] and page["items"][0]["reason"].startswith("受项目 lab")
    english = c.get("/api/v1/jobs?phase=Held", headers={**lab.auth("bob"), "Accept-Language": "en-US,zh;q=0.8"})
    assert english.json()["items"][0]["reason"] == body["reason"]


def test_accept_language_preference():
    assert preferred_language(None) == "en"
    assert preferred_language("zh-CN") == "zh-CN"
    assert preferred_language("zh-TW,en;q=0.9") == "zh-CN"
    assert preferred_language("en-GB,zh;q=0.8") == "en"
    assert preferred_language("fr,zh;q=0.5") == "zh-CN"
    assert preferred_language("zh;q=0,en") == "en"
    assert preferred_language("zh;q=abc") == "en"
    assert preferred_language("de") == "en"
