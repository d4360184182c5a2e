"""Why a job waits, over HTTP: a queue position behind a blocked job with its expected start, in the reader's
language (``Accept-Language``), with the numbers as arguments in Crater's units."""

from __future__ import annotations

import pytest

from crater_app.services import projects

GPU = "nvidia.com/gpu"


@pytest.fixture
def lab(api):
    ctx, admin = api.world.ctx, api.world.admin
    projects.create_project(ctx, admin, "lab")
    projects.set_member(ctx, admin, "lab", "bob", "member")
    api.client.put("/api/v1/projects/lab/quota", json={"capability": {GPU: 2}}, headers=api.auth("admin"))
    return api


def test_a_queue_position_reason_in_chinese_and_english(lab):
    c = lab.client
    first = lab.submit("bob", name="first", project="lab", resources={GPU: 1}, command=["sleep", "60"],
                       max_runtime="30m").json()
    head = lab.submit("bob", name="head", project="lab", resources={GPU: 2}).json()
    behind = lab.submit("bob", name="behind", project="lab", resources={GPU: 1}).json()
    assert first["phase"] == "Queued" and (head["phase"], head["reason_code"]) == ("Held", "quota")
    assert (behind["phase"], behind["reason_code"]) == ("Held", "queue")
    assert behind["reason_args"] == {
        "project": "lab", "position": 2, "held": 2, "ahead": 1, "blocker": "quota", "blocker_id": head["id"],
        "blocker_request": {GPU: 2}, "expected_at": head["reason_args"]["expected_at"]}
    zh = c.get(f"/api/v1/jobs/{behind['id']}", headers={**lab.auth("bob"), "Accept-Language": "zh-CN"}).json()
    assert zh["reason"] == (
        f"在项目 lab 的队列中排第 2 位（共 2 个）：在作业 #{head['id']}（2 × nvidia.com/gpu，因项目配额挂起）之后；后面的作业"
        "只有在不会推迟它时才能先启动。预计 30分钟内启动。")
    assert zh["reason_code"] == "queue" and zh["reason_args"] == behind["reason_args"]
    en = c.get(f"/api/v1/jobs/{behind['id']}", headers=lab.auth("bob")).json()
    assert en["reason"] == (
        f"Position 2 of 2 in the queue of project lab: behind job #{head['id']} (2 × nvidia.com/gpu), held by the "
        "project quota; a later job starts first only when it cannot delay that one. Expected start within 30m.")
    page = c.get("/api/v1/jobs?phase=Held", headers={**lab.auth("bob"), "Accept-Language": "zh"}).json()
    assert {j["name"]: j["reason"][:12] for j in page["items"]} == {"behind": "在项目 lab 的队列中", "head": "受项目 lab 的配额限"}
    # A job that fits the quota now and ends before the first one: admitted ahead of the head.
    short = lab.submit("bob", name="short", project="lab", resources={GPU: 1}, max_runtime="10m").json()
    assert short["phase"] == "Queued" and short["admitted_at"] is not None
