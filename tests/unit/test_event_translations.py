"""Every event message and reason the admission rules and services write renders in Simplified Chinese from its code
and arguments: the holds of ``Held`` events and job reasons (as domain.admission decides them), ``Admitted``,
``Preempted``, ``Reclaiming``, ``Requeued``, a preempted job's final reason and a large job's approval hold. The
codes and arguments come from the real builders (domain.admission.decide, services.job_reasons), not from copies."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from crater_app import i18n
from crater_app.domain.admission import Demand, ProjectQuota, UserLimits, decide
from crater_app.services import job_reasons
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


def test_job_reason_of_held_rows_translates_core_amounts():
    import json

    row = {"reason": "x", "reason_code": "quota", "reason_args": json.dumps({
        "project": "lab", "position": 1, "held": 1, "limit": "4 cores", "used": "4 cores", "request": "1 core",
        "jobs": 2, "users": 1})}
    zh = messages.job_reason_text(ZH, row)
    assert "4 核" in zh and "1 核" in zh and "core" not in zh


def test_every_new_key_exists_in_both_languages():
    for lang in i18n.LANGUAGES:
        table = i18n.messages(lang)
        assert [k for k in messages.MESSAGE_KEYS if k not in table] == []


def test_decision_notes_the_service_writes_are_translated():
    from crater_app.state.approvals import decision_note_text

    auto = "approved automatically: an extension under 12 h, at most once per 48 h per user"
    assert decision_note_text(ZH, auto) == "已自动批准：延长不足 12 小时，每位用户每 48 小时至多一次"
    assert decision_note_text(ZH, "closed: job train (#3) is Succeeded") == "已关闭：作业 train（#3）的状态为“已成功”"
    assert decision_note_text(ZH, "the cluster is busy this week") == "the cluster is busy this week"
    assert decision_note_text("en", auto) == auto
    assert decision_note_text("en", "closed: its project no longer exists") == "closed: its project no longer exists"
