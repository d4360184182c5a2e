"""domain.policy for approvals (who asks, reads, decides) and domain.approvals (payload checks, quota merge and
consistency, the auto-approval rule), as tables."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from crater_app.domain.approvals import (
    AutoRule, check_note, check_quota_payload, check_reason, merged_quota,
)
from crater_app.domain.errors import InvalidInput
from crater_app.domain.policy import (
    Actor,
    approval_projects,
    can_decide_approval,
    can_read_approval,
    can_read_notifications,
    can_request_approval,
)

P, OTHER = 1, 2
ADMIN = Actor(1, "admin", "admin")
PADMIN = Actor(2, "pat", "user", {P: "admin"})
MEMBER = Actor(3, "alice", "user", {P: "member"})
VIEWER = Actor(4, "vera", "user", {P: "viewer"})
OUTSIDER = Actor(5, "bob", "user", {OTHER: "member"})
GUEST_PADMIN = Actor(6, "gus", "guest", {P: "admin"})


@pytest.mark.parametrize("actor, kind, owner, allowed", [
    (ADMIN, "quota", None, True), (PADMIN, "quota", None, True), (MEMBER, "quota", None, True),
    (VIEWER, "quota", None, False), (OUTSIDER, "quota", None, False), (GUEST_PADMIN, "quota", None, False),
    (MEMBER, "extend_runtime", 3, True), (MEMBER, "extend_runtime", 2, False), (PADMIN, "reclaim_lock", 3, True),
    (VIEWER, "reclaim_lock", 3, False), (OUTSIDER, "reclaim_lock", 3, False), (ADMIN, "reclaim_lock", 3, True),
    (ADMIN, "large_job", 3, False), (MEMBER, "large_job", 3, False),
])
def test_can_request(actor, kind, owner, allowed):
    assert can_request_approval(actor, kind, P, owner) is allowed


@pytest.mark.parametrize("actor, kind, requester, allowed", [
    (ADMIN, "quota", 3, True), (ADMIN, "large_job", 1, True),  # platform admins decide even their own
    (PADMIN, "quota", 3, False), (PADMIN, "extend_runtime", 3, True), (PADMIN, "large_job", 3, True),
    (PADMIN, "reclaim_lock", 2, False),  # not their own
    (MEMBER, "reclaim_lock", 4, False), (VIEWER, "reclaim_lock", 3, False), (OUTSIDER, "reclaim_lock", 3, False),
    (GUEST_PADMIN, "reclaim_lock", 3, False),
])
def test_can_decide(actor, kind, requester, allowed):
    assert can_decide_approval(actor, kind, P, requester) is allowed


def test_can_read_and_lists():
    assert can_read_approval(ADMIN, 3, None) and can_read_approval(MEMBER, 3, P) and can_read_approval(PADMIN, 3, P)
    assert not can_read_approval(VIEWER, 3, P) and not can_read_approval(OUTSIDER, 3, P)
    assert not can_read_approval(PADMIN, 3, None)
    assert approval_projects(PADMIN) == [P] and approval_projects(MEMBER) == []
    assert all(can_read_notifications(a) for a in (ADMIN, MEMBER, GUEST_PADMIN))
    assert not can_read_notifications(Actor(9, "x", "robot"))


def test_text_checks():
    assert check_reason("  why  ") == "why" and check_note(None) == "" and check_note(" ok ") == "ok"
    for bad in (None, "", "  ", "x" * 1001, 3, "a\x00b"):
        with pytest.raises(InvalidInput) as err:
            check_reason(bad)
        assert err.value.field == "reason"
    for bad in ("x" * 1001, 3, "\ud800"):
        with pytest.raises(InvalidInput) as err:
            check_note(bad)
        assert err.value.field == "note"


def test_quota_payload_merge_and_consistency():
    payload = check_quota_payload({"capability": {"nvidia.com/gpu": "8", "cpu": "64", "memory": "1Ti",
                                                  "nvidia.com/gpu:NVIDIA H100 80GB HBM3": 2}})
    assert payload == {"capability": {"nvidia.com/gpu": 8, "cpu": "64", "memory": "1Ti",
                                      "nvidia.com/gpu:NVIDIA H100 80GB HBM3": 2}}
    assert check_quota_payload({"deserved": {"cpu": " 0.5 ", "memory": "1024Mi"}}) == {
        "deserved": {"cpu": "500m", "memory": "1Gi"}}, "quantities in canonical form"
    current = {"guarantee": {"cpu": "8"}, "deserved": {}, "capability": {"cpu": "16", "memory": "64Gi"}}
    merged = merged_quota(current, payload)  # parsed: millicores, bytes, devices
    assert merged.capability["memory"] == 2**40 and merged.capability["nvidia.com/gpu"] == 8
    assert merged.guarantee == {"cpu": 8000} and merged.deserved == {}
    for change, field, words in (
        ({"capability": {"cpu": "4"}}, "guarantee.cpu", "guarantee.cpu (8 cores) must not exceed capability.cpu (4 cores)"),
        ({"deserved": {"cpu": "2"}}, "guarantee.cpu", "guarantee.cpu (8 cores) must not exceed deserved.cpu (2 cores)"),
    ):
        with pytest.raises(InvalidInput) as err:
            merged_quota(current, change)
        assert (err.value.field, err.value.message) == (field, words)


def test_auto_rule():
    rule = AutoRule(max_s=12 * 3600, window_s=48 * 3600)
    now = datetime(2026, 11, 30, tzinfo=timezone.utc)
    assert rule.applies(12 * 3600 - 1, None, now, 13 * 3600, None)
    assert not rule.applies(12 * 3600, None, now, 13 * 3600, None)  # "under 12 h": exactly 12 h is not
    assert not rule.applies(0, None, now, 3600, None)
    assert not rule.applies(3600, now - timedelta(hours=47), now, 7200, None)
    assert rule.applies(3600, now - timedelta(hours=48), now, 7200, None)
    assert not rule.applies(3600, None, now, 7200, 3600)  # beyond the user's own ceiling
    assert not AutoRule(0, 48 * 3600).applies(60, None, now, 7200, None)
