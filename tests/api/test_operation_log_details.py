"""Operation-log details written by API changes say "none" and list resources, never Python reprs."""

from __future__ import annotations

from sqlmodel import select

from crater_app.db.models import OperationLog
from crater_app.services import projects


def _details(api, action: str, target: str) -> list[str]:
    with api.world.ctx.session(read_only=True) as s:
        return [row.details for row in s.exec(select(OperationLog).where(
            OperationLog.action == action, OperationLog.target == target).order_by(OperationLog.id))]


def test_operation_log_details_have_no_python_reprs(api):
    admin = api.auth("admin")
    api.client.patch("/api/v1/users/alice", json={"max_sessions": 1, "max_runtime": "1h"}, headers=admin)
    api.client.patch("/api/v1/users/alice", json={"max_sessions": None, "max_runtime": None}, headers=admin)
    last = _details(api, "user:update", "alice")[-1]
    assert "max_sessions: 1 -> none" in last and "max_runtime_s: 3600 -> none" in last, last
    first = _details(api, "user:update", "alice")[0]
    assert "max_sessions: none -> 1" in first, first
    projects.create_project(api.world.ctx, api.world.admin, "vision")
    r = api.client.put("/api/v1/projects/vision/members/alice", headers=admin,
                       json={"role": "member", "share": {"nvidia.com/gpu": "2", "cpu": "4"}})
    assert r.status_code == 200, r.text
    api.client.put("/api/v1/projects/vision/members/alice", headers=admin, json={"role": "member", "share": {}})
    rows = _details(api, "project:member:set", "vision/alice")
    joined = " | ".join(rows)
    for repr_text in ("None", "{'", "{}", "'"):
        assert repr_text not in joined, joined
    assert rows == ["added as Member; share: 2 × nvidia.com/gpu, 4 cores", "share: 2 × nvidia.com/gpu, 4 cores → no limit"]
