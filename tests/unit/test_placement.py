"""domain.placement: gang placement, priority-then-time order, model matching, reasons as codes (backfill itself:
tests/unit/test_backfill.py)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from crater_app.domain.placement import Capacity, FreeDevice, Request, place, queue_order

GPU = "nvidia.com/gpu"
A100, H100 = "NVIDIA-A100-SXM4-80GB", "NVIDIA-H100-80GB-HBM3"
T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
GiB = 1024**3


def req(uid: str, gpus: int = 0, priority: int = 0, at: int = 0, cpu_m: int = 0, mem: int = 0,
        model: str | None = None, resource: str = GPU) -> Request:
    return Request(uid=uid, priority=priority, created_at=T0 + timedelta(seconds=at), cpu_m=cpu_m, memory_bytes=mem,
                   accelerators={resource: gpus} if gpus else {}, model=model)


def cap(indices=(0, 1, 2, 3), model: str = A100, cpu_m: int = 16000, mem: int = 64 * GiB, extra=()) -> Capacity:
    return Capacity(cpu_m=cpu_m, memory_bytes=mem,
                    devices=tuple(FreeDevice(i, GPU, model) for i in indices) + tuple(extra))


def test_places_lowest_free_indices_first():
    decision = place([req("a", 2), req("b", 1, at=1)], cap((3, 1, 0, 2)))
    assert decision.placed == {"a": (0, 1), "b": (2,)}
    assert decision.waiting == {}


def test_gang_all_or_nothing():
    decision = place([req("big", 3)], cap((0, 1)))
    assert decision.placed == {}
    assert decision.waiting == {"big": "waiting for 3 × nvidia.com/gpu; 2 × nvidia.com/gpu free; no estimate of its start"}
    assert decision.reasons == {"big": ("placement.waiting_unbounded", {
        "request": {GPU: 3}, "free": {GPU: 2}, "expected_at": None})}


def test_reason_text_for_two_gpus_with_one_free():
    decision = place([req("j", 2)], cap((3,)))
    assert decision.waiting["j"] == "waiting for 2 × nvidia.com/gpu; 1 × nvidia.com/gpu free; no estimate of its start"


def test_strict_priority_then_submission_time():
    requests = [req("old-low", 1, priority=0, at=0), req("new-high", 1, priority=10, at=5),
                req("mid-high", 1, priority=10, at=2), req("new-low", 1, priority=0, at=9)]
    assert [r.uid for r in queue_order(requests)] == ["mid-high", "new-high", "old-low", "new-low"]
    decision = place(requests, cap((0, 1)))
    assert decision.placed == {"mid-high": (0,), "new-high": (1,)}
    assert decision.waiting["old-low"] == "waiting for 1 × nvidia.com/gpu; 0 × nvidia.com/gpu free; no estimate of its start"
    assert decision.waiting["new-low"] == "position 2: behind job old-low (1 × nvidia.com/gpu), no estimate of its start"


def test_same_priority_and_time_orders_by_uid():
    assert [r.uid for r in queue_order([req("b"), req("a")])] == ["a", "b"]


def test_a_blocked_head_keeps_the_devices_it_needs_from_jobs_of_unknown_length():
    decision = place([req("head", 4, at=0), req("small", 1, at=1)], cap((0, 1)))
    assert decision.placed == {}
    assert decision.waiting["head"] == "waiting for 4 × nvidia.com/gpu; 2 × nvidia.com/gpu free; no estimate of its start"
    assert decision.reasons["small"] == ("placement.queued_unbounded", {
        "position": 2, "blocker": "head", "blocker_request": {GPU: 4}, "expected_at": None})


def test_model_matching():
    mixed = Capacity(16000, 64 * GiB, (FreeDevice(0, GPU, H100), FreeDevice(1, GPU, A100), FreeDevice(2, GPU, A100)))
    decision = place([req("a", 2, model=A100), req("h", 1, model=H100, at=1), req("any", 1, at=2)], mixed)
    assert decision.placed == {"a": (1, 2), "h": (0,)}
    assert decision.waiting["any"] == "waiting for 1 × nvidia.com/gpu; 0 × nvidia.com/gpu free; no estimate of its start"
    code, args = place([req("h2", 2, model=H100)], mixed).reasons["h2"]
    assert args["request"] == {f"{GPU}:{H100}": 2} and args["free"] == {f"{GPU}:{H100}": 1}


def test_other_extended_resources_are_placed_separately():
    npu = FreeDevice(7, "huawei.com/Ascend910", "Ascend910B")
    decision = place([req("n", 1, resource="huawei.com/Ascend910"), req("g", 1, at=1)], cap((0,), extra=(npu,)))
    assert decision.placed == {"n": (7,), "g": (0,)}


def test_cpu_shortfall():
    decision = place([req("a", cpu_m=3000), req("b", cpu_m=2000, at=1)], cap(cpu_m=4000))
    assert decision.placed == {"a": ()}
    assert decision.waiting["b"] == "waiting for 2 cores; 1 core free; no estimate of its start"
    assert decision.reasons["b"][1]["request"] == {"cpu": 2000} and decision.reasons["b"][1]["free"] == {"cpu": 1000}


def test_memory_shortfall():
    decision = place([req("a", mem=48 * GiB), req("b", mem=32 * GiB, at=1)], cap(mem=64 * GiB))
    assert decision.placed == {"a": ()}
    assert decision.waiting["b"] == "waiting for 32 GiB memory; 16 GiB memory free; no estimate of its start"


def test_cpu_only_jobs_place_without_devices():
    decision = place([req("cpu", cpu_m=1000)], cap(()))
    assert decision.placed == {"cpu": ()}


def test_place_is_pure():
    requests = [req("a", 1)]
    capacity = cap((0,))
    place(requests, capacity)
    assert capacity.devices == (FreeDevice(0, GPU, A100),) and requests == [req("a", 1)]

