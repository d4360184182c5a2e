"""Answers in the caller's language say so: ``Content-Language`` and ``Vary: Accept-Language`` (one ``Vary``, each
field once); job events and operation-log rows render their text from code + args in that language."""

from __future__ import annotations

import csv
import io

from tests.api.conftest import assert_error

ZH = {"Accept-Language": "zh-CN"}


def test_localised_answers_name_their_language_and_vary_on_it(api):
    for lang, expected in ((None, "en"), ("zh-CN", "zh-CN"), ("zh-TW;q=0.9, en;q=0.1", "zh-CN"), ("fr", "en")):
        headers = {**api.auth("alice"), **({"Accept-Language": lang} if lang else {})}
        for r in (api.client.get("/api/v1/jobs", headers=headers), api.client.get("/api/v1/jobs/999", headers=headers),
                  api.client.get("/api/v1/nope", headers=headers), api.client.post("/api/v1/jobs", headers=headers)):
            assert r.headers["content-language"] == expected, (lang, r.request.url, r.headers)
            assert r.headers.get_list("vary") == ["Accept-Language"], r.headers
    # text that is not in any language (a job's own output) says none
    job = api.submit(name="quiet", command=["true"]).json()
    logs = api.client.get(f"/api/v1/jobs/{job['id']}/logs", headers={**api.auth("alice"), **ZH})
    assert logs.status_code == 200 and "content-language" not in logs.headers


def test_vary_lists_each_field_once(api):
    from crater_app.api.middleware import merged_vary

    assert merged_vary([b"Origin", b"origin, Accept-Encoding"], b"Accept-Language") == \
        b"Origin, Accept-Encoding, Accept-Language"
    assert merged_vary([b"Accept-Language"], b"accept-language") == b"Accept-Language"
    assert merged_vary([b"*", b"Origin"]) == b"*"


def test_job_events_read_in_the_callers_language(api):
    job = api.submit(name="evented", command=["true"]).json()
    en = api.client.get(f"/api/v1/jobs/{job['id']}/events", headers=api.auth("alice")).json()
    zh = api.client.get(f"/api/v1/jobs/{job['id']}/events", headers={**api.auth("alice"), **ZH}).json()
    submitted_en = next(e for e in en if e["code"] == "job.submitted")
    submitted_zh = next(e for e in zh if e["code"] == "job.submitted")
    assert submitted_en["message"] == "submitted by alice" and submitted_zh["message"] == "由 alice 提交"
    assert submitted_zh["args"] == submitted_en["args"] == {"user": "alice"}
    assert [e["id"] for e in en] == [e["id"] for e in zh]


def test_operation_log_details_read_in_the_callers_language(api):
    admin = api.auth("admin")
    api.client.post("/api/v1/projects", json={"name": "vision"}, headers=admin)
    api.client.put("/api/v1/projects/vision/members/alice", json={"role": "member"}, headers=admin)
    params = {"action": "project:member:set"}
    en = api.client.get("/api/v1/operation-logs", params=params, headers=admin).json()["items"][0]
    zh = api.client.get("/api/v1/operation-logs", params=params, headers={**admin, **ZH}).json()["items"][0]
    assert en["code"] == zh["code"] == "project.member_added" and en["args"] == zh["args"]
    assert en["details"] == "added as Member" and zh["details"] != en["details"] and "成员" in zh["details"]
    exported = api.client.get("/api/v1/operation-logs", params={**params, "format": "csv"}, headers={**admin, **ZH})
    assert exported.headers["content-language"] == "zh-CN"
    [row] = list(csv.DictReader(io.StringIO(exported.text)))
    assert row["details"] == zh["details"]
    assert_error(api.client.get("/api/v1/operation-logs", headers={**api.auth("alice"), **ZH}), 403, "forbidden")
