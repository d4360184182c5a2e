"""Every event message and reason the admission rules and services write renders in Simplified Chinese from its code
and arguments: the holds of ``Held`` events and job reasons (as domain.admission decides them), ``Admitted``,
``Preempted``, ``Reclaiming``, ``Requeued``, a preempted job's final reason and a large job's approval hold. The
codes and arguments come from the real builders (domain.admission.decide, services.job_reasons), not from copies."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from crater_app import i18n
from crater_app.domain.admission import Demand, ProjectQuota, UserLimits, decide
from crater_app.services import admission, job_reasons
from crater_app.services.job_events import event_text
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


def job(key, project=1, user=10, gpus=1, minute=0, admitted=False, **kw) -> Demand:
    usage = kw.pop("usage", None) or {GPU: gpus}
    return Demand(key, project, user, 0, T0 + timedelta(minutes=minute), usage, admitted=admitted, **kw)


def holds() -> dict[str, object]:
    """One real hold of each code (and both capacity forms), from domain.admission.decide."""
    out = {}
    quotas = {1: ProjectQuota(1, "vision", deserved={GPU: 4}, capability={GPU: 3}),
              2: ProjectQuota(2, "speech", deserved={GPU: 4})}
    plan = decide([job("r1", admitted=True), job("r2", user=11, admitted=True, ends_at=T0 + timedelta(minutes=30)),
                   job("h", gpus=2, minute=1), job("q", minute=2)], quotas, {}, {}, CAPACITY, now=T0)
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


def real_messages() -> list[tuple[str, str, dict]]:
    """(what, event code, args) for every event and reason shape of admission, as the services write them."""
    found = holds()
    assert {h.code for h in found.values()} == {"quota", "share", "sessions", "approval", "capacity", "fairshare",
                                                 "queue"}
    out = [(f"Held/{name}", f"hold.{hold.code}", dict(hold.args)) for name, hold in found.items()]
    p = preemption()
    victim = job_reasons.preempted_args(dict(p.args), 42, "train-big", "vision", 1)
    out.append(("Held/reclaim", "hold.reclaim", dict(p.args)))
    out.append(("Held/approval_threshold", "hold.approval", job_reasons.approval_hold(16, 8).args))
    out.append(("Admitted", "job.admitted", {}))
    out.append(("Preempted", "job.preempted_for", victim))
    out.append(("Preempted/reason", "hold.preempted", victim))
    out.append(("Reclaiming", "job.reclaiming", {"project": "vision", "victim_id": 7, "victim": "sweep-3",
                                                 "victim_project": "speech"}))
    for requeue, attempt in ((True, 1), (False, 1), (True, 5)):
        code, args = job_reasons.after_preemption(victim, attempt, requeue, 5)
        out.append((f"Preempted/{code}", f"hold.{code}", args))
    return out


PARAMS = ("vision", "speech", "nlp", "train-big", "sweep-3")


def assert_chinese(what: str, english: str, zh: str, keep: tuple[str, ...] = ()) -> None:
    assert zh != english, f"{what}: not translated: {english}"
    assert CJK.search(zh), f"{what}: {zh}"
    rest = zh
    for word in keep:
        rest = rest.replace(word, "")
    left = ENGLISH.findall(rest)
    assert not left, f"{what}: English left in {zh!r}: {left}"


@pytest.mark.parametrize(("what", "code", "args"), real_messages(), ids=lambda v: v if isinstance(v, str) else "")
def test_admission_event_messages_render_in_chinese(what, code, args):
    english = event_text("en", code, args, "")
    zh = event_text(ZH, code, args, "")
    assert english and english != code, f"{what}: no English template"
    assert_chinese(what, english, zh, keep=("max_runtime", "requeue_on_preemption"))
    assert "{" not in zh and "None" not in zh


def test_queue_holds_name_the_blocking_job_and_translate_its_code():
    found = holds()
    queue = job_reasons.reason_text(ZH, "queue", found["queue"].args, "", now=T0)
    assert "因项目配额挂起" in queue and "#h" in queue and "预计 30分钟内启动" in queue
    quota = job_reasons.reason_text(ZH, "quota", found["quota"].args, "", now=T0)
    assert "2 × nvidia.com/gpu" in quota and "vision" in quota
    capacity = job_reasons.reason_text(ZH, "capacity", found["capacity"].args, "")
    assert "nvidia.com/gpu" in capacity and "无法估计启动时间" in capacity


def held_rows() -> list[tuple[str, dict[str, str]]]:
    """(what, console row) of a Held job for every hold the admission rules write, as the console holds it: the
    stored English sentence with its ``reason_code`` and ``reason_args``."""
    found = holds()
    found["approval"] = admission.approval_hold(16, 8)  # a large job's hold as the submission path writes it
    rows = [(f"Held/{name}", {"reason": hold.sentence, "reason_code": hold.code,
                              "reason_args": json.dumps(hold.args)}) for name, hold in found.items()]
    p = preemption()
    rows.append(("Held/reclaim", {"reason": p.sentence, "reason_code": "reclaim", "reason_args": json.dumps(p.args)}))
    return rows


@pytest.mark.parametrize(("what", "row"), held_rows(), ids=lambda v: v if isinstance(v, str) else "")
def test_a_held_jobs_reason_renders_from_its_code_in_the_console(what, row):
    zh = messages.job_reason_text(ZH, row)
    assert_chinese(what, row["reason"], zh, keep=PARAMS)
    assert "{" not in zh and "None" not in zh


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
