"""The console's translation of service event reasons and status sentences (crater_app/state/messages.py).

Each sentence shape below is copied from the code that writes it (services/jobs.py, domain/placement.py,
cluster/local.py, services/reconcile.py); anything else must come back unchanged.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crater_app import i18n
from crater_app.state import messages
from crater_app.state.messages import message_text, reason_text

ZH = "zh-CN"

# (sentence as the services write it, expected Chinese text)
SHAPES = [
    ("waiting for placement", "等待调度"),
    ("submitted by alice", "由 alice 提交"),
    ("image 'local/host' recorded; the local backend runs the command in the host environment",
     "已记录镜像“local/host”；本地后端在主机环境中运行该命令"),
    ("image 'it's:odd' recorded; the local backend runs the command in the host environment",
     "已记录镜像“it's:odd”；本地后端在主机环境中运行该命令"),
    ("cancel requested by bob", "bob 请求取消"),
    ("cancelled by bob", "已被 bob 取消"),
    ("cancelled", "已取消"),
    ("queued: position 3, behind 2 earlier job(s)", "排队中：第 3 位，前面还有 2 个作业"),
    ("waiting for 2 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB); 1 free",
     "等待 2 个 nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)；当前空闲 1 个"),
    ("waiting for 4 × nvidia.com/gpu; 0 free", "等待 4 个 nvidia.com/gpu；当前空闲 0 个"),
    ("waiting for 8000m cpu; 1500m free", "等待 8000m CPU；当前空闲 1500m"),
    ("waiting for 64.0 GiB memory; 12.5 GiB free", "等待 64.0 GiB 内存；当前空闲 12.5 GiB"),
    ("started on node-1 with devices 0,1", "已在 node-1 上启动，使用设备 0,1"),
    ("started on node-1", "已在 node-1 上启动"),
    ("started with devices [0, 1]", "已启动，使用设备 0, 1"),
    ("exited with code 0", "进程退出，退出码 0"),
    ("exited with code 137", "进程退出，退出码 137"),
    ("max_runtime of 3600 s exceeded", "超过最长运行时间（3600 秒）"),
    ("stopping: max_runtime of 60 s exceeded", "正在停止：超过最长运行时间（60 秒）"),
    ("stopping: cancelled by carol", "正在停止：已被 carol 取消"),
    ("the job's process ended while Crater was not running and left no exit status",
     "作业进程在 Crater 未运行期间结束，且未留下退出状态"),
    ("the job's process ended without recording an exit status", "作业进程结束时未记录退出状态"),
    ("the job could not be started: FileNotFoundError: [Errno 2] No such file",
     "作业无法启动：FileNotFoundError: [Errno 2] No such file"),
    ("the backend did not know this job; it was handed to it again", "后端不认识该作业，已重新交给后端"),
    ("the backend lost this job", "后端丢失了该作业"),
    ("the backend has no record of this running job", "后端没有这个运行中作业的记录"),
    ("still running after Crater restarted; re-adopted by host-1:4242:0a1b2c3d",
     "Crater 重启后作业仍在运行，已由 host-1:4242:0a1b2c3d 重新接管"),
    ("backend moved Succeeded -> Running, which Crater does not allow",
     "后端将状态从 已成功 改为 运行中，Crater 不允许该变更"),
]


@pytest.mark.parametrize(("sentence", "chinese"), SHAPES)
def test_known_sentences_are_translated(sentence, chinese):
    assert message_text(ZH, sentence) == chinese


# English wording differs on purpose for these (no list brackets, readable resource names): see below.
REWORDED = ("started with devices", "waiting for 8000m", "waiting for 64.0")


@pytest.mark.parametrize("sentence", [s for s, _ in SHAPES if not s.startswith(REWORDED)])
def test_english_templates_give_back_the_service_sentence(sentence):
    assert message_text("en", sentence) == sentence


def test_english_wording_of_reworded_shapes():
    assert message_text("en", "started with devices [0, 1]") == "started with devices 0, 1"
    assert message_text("en", "waiting for 8000m cpu; 1500m free") == "waiting for 8000m CPU; 1500m free"
    assert message_text("en", "waiting for 64.0 GiB memory; 12.5 GiB free") == (
        "waiting for 64.0 GiB of memory; 12.5 GiB free")


@pytest.mark.parametrize("sentence", [
    "",
    "something the backend made up",
    "backend reports state 'Weird' (X): y",
    "exited with code zero",                      # not a number
    "submitted by alice and bob",                 # not the whole sentence
    "waiting for placement, soon",
    "stopping: an unknown reason",
    "<b>exited with code 1</b>",
])
def test_unknown_sentences_come_back_unchanged(sentence):
    if sentence == "stopping: an unknown reason":
        assert message_text(ZH, sentence) == "正在停止：an unknown reason"
    else:
        assert message_text(ZH, sentence) == sentence


def test_user_data_is_kept_verbatim_not_formatted_again():
    # braces and markup in a parameter stay as they are (the console renders the result escaped)
    assert message_text(ZH, "the job could not be started: ValueError: {x} <script>") == (
        "作业无法启动：ValueError: {x} <script>")
    assert message_text(ZH, "image '{user}' recorded; the local backend runs the command in the host environment") == (
        "已记录镜像“{user}”；本地后端在主机环境中运行该命令")


def test_reason_words():
    assert reason_text(ZH, "Completed") == "已完成"
    assert reason_text(ZH, "CancelRequested") == "已请求取消"
    assert reason_text("en", "CancelRequested") == "Cancel requested"
    assert reason_text("en", "Completed") == "Completed"
    assert reason_text(ZH, "SomethingNew") == "SomethingNew"
    assert reason_text(ZH, "") == ""
    assert reason_text(ZH, "reason.Completed") == "reason.Completed"


def test_every_reason_and_template_has_a_translation():
    for lang in i18n.LANGUAGES:
        table = i18n.messages(lang)
        assert [r for r in messages.KNOWN_REASONS if f"reason.{r}" not in table] == []
        assert [k for k in messages.MESSAGE_KEYS if k not in table] == []


def test_known_reasons_cover_what_the_services_write():
    """Every literal event reason in the services and the cluster backend has a ``reason.<word>`` key."""
    root = Path(messages.__file__).resolve().parents[1]
    written = set()
    for folder in ("services", "cluster"):
        for path in (root / folder).rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            written |= set(re.findall(r"""\breason="([A-Z][A-Za-z]+)\"""", text))
            # ("Submitted", f"submitted by ...") pairs of an event list
            written |= set(re.findall(r"""\(\s*"([A-Z][a-z]+[A-Z]?[A-Za-z]*)",\s*f?["'(]""", text))
    assert written, "the scan found no reasons"
    assert sorted(written - set(messages.KNOWN_REASONS)) == []
