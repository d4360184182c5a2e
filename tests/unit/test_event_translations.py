"""A waiting job's reason renders from its code in Simplified Chinese in the console (state.messages.job_reason_text,
through services.admission.reason_text as the API does): every hold the admission rules write, a preempted job's
final reason, and a large job approved or rejected. The holds come from the real builder (domain.admission.decide),
not from copies."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from crater_app import i18n
from crater_app.domain.admission import Demand, ProjectQuota, UserLimits, decide
from crater_app.services import admission
from crater_app.state import messages

ZH = "zh-CN"
GPU = "nvidia.com/gpu"
GiB = 1024**3
T0 = datetime(2026, 11, 30, 8, 0, tzinfo=timezone.utc)
CAPACITY = {GPU: 8, "cpu": 64_000, "memory": 256 * GiB}
# Two English words in a row: a sentence (or part of one) left untranslated. Names, numbers and units such as
# "nvidia.com/gpu", "GiB", "max_runtime" are single tokens.
ENGLISH = re.compile(r"\b[A-Za-z]{2,}[ ,;:]+[A-Za-z]{2,}\b")
CJK = re.compile(r"[\u4e00-\u9fff]")
#: amounts the admission rules still write as English text inside their arguments (``4 cores``); the rules'
#: owner turns them into Crater's units with a ``{limit:resources}`` format
AMOUNT = re.compile(r"\d+(?:\.\d+)? cores?\b")


def job(key, project=1, user=10, gpus=1, minute=0, admitted=False, **kw) -> Demand:
    usage = kw.pop("usage", None) or {GPU: gpus}
    return Demand(key, project, user, 0, T0 + timedelta(minutes=minute), usage, admitted=admitted, **kw)


def holds() -> dict[str, object]:
    """One real hold of each code (and both capacity forms), from domain.admission.decide."""
    out = {}
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}, capability={GPU: 2}),
              2: ProjectQuota(2, "speech", deserved={GPU: 4})}
    plan = decide([job("r1", admitted=True), job("r2", user=11, admitted=True), job("h", minute=1),
                   job("q", minute=2, usage={"cpu": 2000})], quotas, {}, {}, CAPACITY)
    out["quota"], out["queue"] = plan.hold["h"], plan.hold["q"]
    plan = decide([job("r1", admitted=True), job("h", minute=1)], {1: ProjectQuota(1, "vision")},
                  {(1, 10): {GPU: 1}}, {}, CAPACITY)
    out["share"] = plan.hold["h"]
    plan = decide([job("s1", kind="interactive", admitted=True), job("s2", kind="interactive", minute=1)],
                  {}, {}, {10: UserLimits(max_sessions=1)}, CAPACITY)
    out["sessions"] = plan.hold["s2"]
    plan = decide([job("big", approval_pending=True)], {}, {}, {}, CAPACITY)
    out["approval"] = plan.hold["big"]
    plan = decide([job("r", project=3, gpus=5, admitted=True), job("h", project=1, gpus=3, minute=1)],
                  {1: ProjectQuota(1, "vision"), 2: ProjectQuota(2, "speech", guarantee={GPU: 2}),
                   3: ProjectQuota(3, "nlp")}, {}, {}, CAPACITY)
    out["capacity_reserved"] = plan.hold["h"]
    plan = decide([job("r", project=3, gpus=8, admitted=True), job("h", project=1, gpus=1, minute=1,
                                                                   usage={"cpu": 500, GPU: 1})],
                  {}, {}, {}, CAPACITY)
    out["capacity"] = plan.hold["h"]
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2})}
    plan = decide([job(f"s{i}", project=2, user=30 + i % 2, minute=i, admitted=True, preemptible=i < 2)
                   for i in range(8)] + [job("h", project=1, gpus=3, minute=20)], quotas, {}, {}, CAPACITY)
    out["fairshare"] = plan.hold["h"]
    return out


def preemption():
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}), 2: ProjectQuota(2, "speech", deserved={GPU: 2})}
    demands = [job(f"s{i}", project=2, minute=i, admitted=True, preemptible=True) for i in range(8)]
    plan = decide(demands + [job("h", project=1, gpus=1, minute=20)], quotas, {}, {}, CAPACITY)
    return plan.preempt[0]


def held_rows() -> list[tuple[str, dict[str, str]]]:
    """(what, console row) of a Held job for every hold the admission rules write, as the console holds it:
    the stored English sentence with its ``reason_code`` and ``reason_args``."""
    found = holds()
    assert {h.code for h in found.values()} == {"quota", "share", "sessions", "approval", "capacity", "fairshare",
                                                 "queue"}
    assert "kept for other projects' guarantees" in found["capacity_reserved"].sentence
    assert "kept for" not in found["capacity"].sentence
    # A large job's hold is stored as services.admission.approval_hold writes it (the plan's is replaced).
    found["approval"] = admission.approval_hold(16, 8)
    rows = [(f"Held/{name}", {"reason": hold.sentence, "reason_code": hold.code,
                              "reason_args": json.dumps(hold.args)}) for name, hold in found.items()]
    p = preemption()
    rows.append(("Held/reclaim", {"reason": p.sentence, "reason_code": "reclaim", "reason_args": json.dumps(p.args)}))
    final = {"beneficiary_project": "vision", "beneficiary_id": 42}
    rows.append(("Preempted/final", {"reason": admission.preempted_final_message(final), "reason_code": "preempted",
                                     "reason_args": json.dumps(final)}))
    return rows


def assert_chinese(what: str, english: str, zh: str) -> None:
    assert zh != english, f"{what}: not translated: {english}"
    assert CJK.search(zh), f"{what}: {zh}"
    left = ENGLISH.findall(AMOUNT.sub("", zh))
    assert not left, f"{what}: English left in {zh!r}: {left}"


@pytest.mark.parametrize(("what", "row"), held_rows(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_held_jobs_reason_renders_from_its_code_in_chinese(what, row):
    zh = messages.job_reason_text(ZH, row)
    assert_chinese(what, row["reason"], zh)
    assert "{" not in zh and "None" not in zh
    assert messages.job_reason_text("en", row) == row["reason"]  # English shows the sentence as the service wrote it


def test_the_blocking_hold_is_named_in_chinese():
    found = holds()
    row = {"reason": found["queue"].sentence, "reason_code": "queue", "reason_args": json.dumps(found["queue"].args)}
    assert "（项目配额）" in messages.job_reason_text(ZH, row)  # the blocking hold's code, not "(quota)"
    quota = {"reason": found["quota"].sentence, "reason_code": "quota", "reason_args": json.dumps(found["quota"].args)}
    assert "2 × nvidia.com/gpu" in messages.job_reason_text(ZH, quota) and "vision" in messages.job_reason_text(ZH, quota)


def test_a_reason_without_a_code_or_with_arguments_that_do_not_fit_stays_as_stored():
    assert messages.job_reason_text(ZH, {"reason": "waiting for placement", "reason_code": "", "reason_args": "{}"}) == (
        "waiting for placement")
    assert messages.job_reason_text(ZH, {"reason": "x", "reason_code": "quota", "reason_args": "not json"}) == "x"


def test_an_approved_or_rejected_large_jobs_reason_renders_from_its_code():
    approved = {"reason": "waiting for admission (approved)", "reason_code": "approved", "reason_args": "{}"}
    assert messages.job_reason_text(ZH, approved) == "等待准入（已批准）"
    args = {"gpus": 16, "by": "pat", "via": i18n.part("approval.via_note", approval_id=3, note="too big")}
    rejected = {"reason": "r", "reason_code": "rejected", "reason_args": json.dumps(args)}
    assert messages.job_reason_text(ZH, rejected) == "使用 16 个加速器运行的申请已被 pat 驳回（审批 #3：too big）"
