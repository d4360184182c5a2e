"""Pure helpers of the project page's Quota card and the "Edit quota" / "Share" dialogs: rows shown, quantity
text that the service reads back to the same amounts, dialog rows -> service body, errors placed on the row and
column they name; and the new-job form's kind / preemptible / project fields."""

from __future__ import annotations

import pytest

from crater_app.schemas import ProjectQuotaPublic
from crater_app.domain import quota as q
from crater_app.state import quota_views as qv
from crater_app.state.forms import FormError, build_spec

GPU = "nvidia.com/gpu"
A100 = "nvidia.com/gpu:NVIDIA-A100-SXM4-80GB"


def _quota(**over) -> ProjectQuotaPublic:
    base = dict(project="vision", guarantee={GPU: "1"}, deserved={GPU: "2", "cpu": "8"},
                capability={GPU: "4", "cpu": "16", "memory": str(64 * 1024 ** 3), A100: "2"},
                used={GPU: "4", "cpu": "1500m", A100: "1", "memory": str(8 * 1024 ** 3)}, admitted_jobs=3,
                held_jobs=1)
    return ProjectQuotaPublic(**{**base, **over})


def test_quota_rows_order_formatting_and_levels():
    rows = qv.quota_rows(_quota())
    assert [r["key"] for r in rows] == ["cpu", "memory", GPU, A100]
    cpu, memory, gpu, a100 = rows
    assert cpu == {"key": "cpu", "resource": "cpu", "model": "", "guarantee": "", "deserved": "8 cores",
                   "capability": "16 cores", "used": "1.5 cores", "percent": "9", "level": "ok"}
    assert memory["capability"] == "64 GiB" and memory["used"] == "8 GiB" and memory["percent"] == "12"
    zh = {r["key"]: r for r in qv.quota_rows(_quota(), "zh-CN")}
    assert zh["cpu"]["deserved"] == "8 核" and zh["cpu"]["used"] == "1.5 核" and zh[GPU]["capability"] == "4"
    assert gpu["guarantee"] == "1" and gpu["deserved"] == "2" and gpu["capability"] == "4"
    assert gpu["used"] == "4" and gpu["percent"] == "100" and gpu["level"] == "full"
    assert a100["resource"] == GPU and a100["model"] == "NVIDIA-A100-SXM4-80GB" and a100["percent"] == "50"


def test_quota_rows_without_a_ceiling_and_high_use():
    rows = qv.quota_rows(_quota(guarantee={}, deserved={}, capability={GPU: "10"}, used={GPU: "8", "cpu": "2"}))
    by_key = {r["key"]: r for r in rows}
    assert by_key["cpu"]["capability"] == "" and by_key["cpu"]["level"] == "none" and by_key["cpu"]["percent"] == "0"
    assert by_key[GPU]["level"] == "high" and by_key[GPU]["percent"] == "80"
    assert qv.quota_rows(_quota(guarantee={}, deserved={}, capability={}, used={})) == []
    # A capability of 0 forbids the resource: no room, whatever is used.
    zero = qv.quota_rows(_quota(guarantee={}, deserved={}, capability={GPU: "0"}, used={}))
    assert zero[0]["level"] == "full" and zero[0]["percent"] == "0" and zero[0]["used"] == "0"


@pytest.mark.parametrize(("used", "limit", "pct"), [(0, None, 0), (5, None, 0), (1, 0, 100), (0, 0, 0),
                                                     (1, 3, 33), (7, 4, 100)])
def test_percent(used, limit, pct):
    assert qv.percent(used, limit) == pct


@pytest.mark.parametrize(("key", "amount", "text"), [
    ("cpu", 4000, "4"), ("cpu", 500, "500m"), ("memory", 64 * 1024 ** 3, "64Gi"),
    ("memory", 1536 * 1024 ** 2, "1536Mi"),
    ("memory", 1000, "1000"), ("memory", 0, "0"), ("memory", 2 * 1024 ** 4, "2Ti"), (GPU, 3, "3"), (A100, 0, "0"),
])
def test_quantity_text_reads_back_to_the_same_amount(key, amount, text):
    assert qv.quantity_text(key, amount) == text
    assert q.parse_quota_list({key: text}, "capability") == {key: amount}


def test_editor_rows_from_the_stored_quota():
    rows = qv.quota_editor_rows(_quota())
    assert [r["resource"] for r in rows] == ["cpu", "memory", GPU, A100]
    assert rows[1] == {"resource": "memory", "guarantee": "", "deserved": "", "capability": "64Gi", "error": "",
                       "error_col": ""}
    assert rows[2]["guarantee"] == "1" and rows[2]["deserved"] == "2" and rows[2]["capability"] == "4"
    # Round trip: the body of the untouched dialog is the stored quota.
    parsed = q.parse_quota(qv.quota_body(rows))
    stored = q.parse_quota({name: getattr(_quota(), name) for name in q.SECTIONS})
    assert parsed == stored
    assert [r["resource"] for r in qv.quota_editor_rows(None)] == [GPU]
    assert [r["resource"] for r in qv.quota_editor_rows(_quota(guarantee={}, deserved={}, capability={}))] == [GPU]


def test_quota_body_skips_blanks_and_strips():
    rows = [{"resource": " nvidia.com/gpu ", "guarantee": "", "deserved": " 1", "capability": "2 "},
            {"resource": "", "guarantee": "", "deserved": "", "capability": ""},
            {"resource": "cpu", "guarantee": "", "deserved": "", "capability": ""}]
    assert qv.quota_body(rows) == {"guarantee": {}, "deserved": {GPU: "1"}, "capability": {GPU: "2"}}
    assert qv.quota_body([]) == {"guarantee": {}, "deserved": {}, "capability": {}}


def test_quota_body_errors_name_the_row():
    with pytest.raises(FormError) as err:
        qv.quota_body([{"resource": "cpu", "capability": "4"}, {"resource": " ", "capability": "1"}])
    assert err.value.key == "quota.error.resource_required" and err.value.field == "1.resource"
    with pytest.raises(FormError) as err:
        qv.quota_body([{"resource": GPU, "capability": "4"}, {"resource": GPU + " ", "capability": "1"}])
    assert err.value.key == "quota.error.duplicate" and err.value.field == "1.resource"
    assert err.value.params == {"resource": GPU}
    with pytest.raises(FormError) as err:
        qv.quota_body([qv.blank_quota_row(f"example.com/r{i}") for i in range(qv.MAX_ROWS + 1)])
    assert err.value.key == "quota.error.rows"


def test_place_error_on_the_named_row_and_column():
    rows = [qv.blank_quota_row("cpu"), {**qv.blank_quota_row(GPU), "error": "old", "error_col": "guarantee"}]
    placed, ok = qv.place_error(rows, f"capability.{GPU}", "too small", qv.QUOTA_COLUMNS)
    assert ok and placed[1]["error"] == "too small" and placed[1]["error_col"] == "capability"
    assert placed[0]["error"] == "" and rows[1]["error"] == "old"  # a new list; the old rows are untouched
    placed, ok = qv.place_error(rows, "0.resource", "name it", qv.QUOTA_COLUMNS)
    assert ok and placed[0]["error_col"] == "resource"
    placed, ok = qv.place_error(rows, "quota", "bad body", qv.QUOTA_COLUMNS)
    assert not ok and all(r["error"] == "" for r in placed)
    placed, ok = qv.place_error(rows, "capability.memory", "no such row", qv.QUOTA_COLUMNS)
    assert not ok
    share_rows = [qv.blank_share_row(GPU)]
    placed, ok = qv.place_error(share_rows, f"share.{GPU}", "above capability", ("amount",))
    assert ok and placed[0]["error_col"] == "amount"


def test_place_error_matches_the_service_field():
    """The service's error field for a bad cell is the one place_error looks for."""
    rows = [{**qv.blank_quota_row(GPU), "guarantee": "3", "capability": "2"}]
    with pytest.raises(q.InvalidInput) as err:
        q.parse_quota(qv.quota_body(rows))
    placed, ok = qv.place_error(rows, err.value.field, err.value.message, qv.QUOTA_COLUMNS)
    assert ok and placed[0]["error_col"] in ("guarantee", "deserved")
    rows = [{**qv.blank_quota_row("memory"), "capability": "lots"}]
    with pytest.raises(q.InvalidInput) as err:
        q.parse_quota(qv.quota_body(rows))
    placed, ok = qv.place_error(rows, err.value.field, err.value.message, qv.QUOTA_COLUMNS)
    assert ok and placed[0]["error_col"] == "capability"


def test_share_rows_body_and_text():
    assert qv.share_text("en", {}) == ""
    assert qv.share_text("en", {GPU: "2", "cpu": "4"}) == "2 × nvidia.com/gpu, 4 cores"
    assert qv.share_text("zh-CN", {GPU: "2", "cpu": "4"}) == "2 × nvidia.com/gpu、4 核 CPU"
    assert qv.share_text("en", {A100: "1"}) == "1 × nvidia.com/gpu (NVIDIA-A100-SXM4-80GB)"
    rows = qv.share_editor_rows({GPU: "2", "memory": str(16 * 1024 ** 3)})
    assert [(r["resource"], r["amount"]) for r in rows] == [("memory", "16Gi"), (GPU, "2")]
    assert qv.share_body(rows) == {"memory": "16Gi", GPU: "2"}
    assert qv.share_editor_rows({}) == [qv.blank_share_row(GPU)]
    assert qv.share_body([qv.blank_share_row(GPU)]) == {}  # no amount: no limit on that resource
    with pytest.raises(FormError) as err:
        qv.share_body([{"resource": "", "amount": "2"}])
    assert err.value.field == "0.resource"


FORM = dict(name="j", command="true", command_mode="lines", env="", cpu="1", memory="", gpus="1",
            model="NVIDIA-A100-SXM4-80GB", resource=GPU, max_runtime="", priority="")


def test_build_spec_kind_preemptible_and_project():
    plain = build_spec(**FORM)
    assert "kind" not in plain and "preemptible" not in plain and "project" not in plain
    spec = build_spec(**FORM, kind="interactive", preemptible=True, project=" vision ")
    assert spec["kind"] == "interactive" and spec["preemptible"] is True and spec["project"] == "vision"
