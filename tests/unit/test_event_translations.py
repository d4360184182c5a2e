"""Every event message the admission rules and services write renders in Simplified Chinese (state.messages):
the hold sentences of ``Held`` events (as domain.admission writes them and as the English ``hold.<code>``
templates do), ``Admitted``, ``Preempted``, ``Reclaiming``, and a large job's approval hold. The messages come from
the real builders (domain.admission.decide, services.admission's message functions), not from copies."""

from __future__ import annotations

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


def real_messages() -> list[tuple[str, str]]:
    """(what, message) for every event message shape of admission: as the services store them."""
    found = holds()
    assert {h.code for h in found.values()} == {"quota", "share", "sessions", "approval", "capacity", "fairshare",
                                                 "queue"}
    assert "kept for other projects' guarantees" in found["capacity_reserved"].sentence
    assert "kept for" not in found["capacity"].sentence
    out = [(f"Held/{name}", hold.sentence) for name, hold in found.items()]
    # The services rewrite a sentence from the English template when the plan saw only the head of the queue.
    for name, hold in found.items():
        if hold.code == "approval":  # kept as it is (services.admission: ``if hold.code != APPROVAL``)
            continue
        args = dict(hold.args) | {"position": 17, "held": 40}
        out.append((f"Held/{name}/template", admission._format("en", f"hold.{hold.code}", args, "")))
    p = preemption()
    reclaim_args = dict(p.args)
    out.append(("Held/reclaim", admission._format("en", "hold.reclaim", reclaim_args, "")))
    out.append(("Held/approval_threshold", admission.approval_hold(16, 8).sentence))
    out.append(("Admitted", admission.ADMITTED_MESSAGE))
    out.append(("Preempted", admission.preempted_message(42, "train-big", "vision", p.sentence)))
    out.append(("Reclaiming", admission.reclaiming_message("vision", 7, "sweep-3", "speech")))
    out.append(("Preempted/final", admission.preempted_final_message({"beneficiary_project": "vision",
                                                                      "beneficiary_id": 42})))
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


@pytest.mark.parametrize(("what", "english"), real_messages(), ids=lambda v: v if "/" in v or v.isalpha() else "")
def test_admission_event_messages_render_in_chinese(what, english):
    zh = messages.message_text(ZH, english)
    assert_chinese(what, english, zh)
    assert "{" not in zh and "None" not in zh
    assert messages.message_text("en", english) == english  # English shows the sentence as the service wrote it


def test_hold_amounts_and_blockers_are_translated():
    found = holds()
    queue = messages.message_text(ZH, found["queue"].sentence)
    assert "（项目配额）" in queue  # the blocking hold's code, not "(quota)"
    cpu = messages.message_text(ZH, found["capacity"].sentence)
    assert "nvidia.com/gpu" in cpu
    quota = messages.message_text(ZH, found["quota"].sentence)
    assert "2 × nvidia.com/gpu" in quota and "vision" in quota
    assert messages.amount_text(ZH, "4 cores") == "4 核" and messages.amount_text(ZH, "1 core") == "1 核"
    assert messages.amount_text(ZH, "16.0 GiB") == "16.0 GiB"


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
