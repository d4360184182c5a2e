"""``Idempotency-Key`` on the creating POSTs: a retry gets the first answer and creates nothing more; another body
with the key is a 422 naming the header; a request while the first runs is a 409; keys expire after 24 h; a
refusal frees the key; concurrent first requests create one object (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta, timezone

from fastapi import Request, Response
from fastapi.concurrency import run_in_threadpool
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from crater_app.api.app import build_api
from crater_app.db.models import ApiToken, Approval, IdempotencyRecord, Job, Project, User
from crater_app.domain import times
from crater_app.services import idempotency, tokens
from tests.api.conftest import assert_error
from tests.helpers import counts

JOB = {"name": "train", "command": ["sh", "-c", "echo hi"]}


def _count(ctx, model) -> int:
    with ctx.session(read_only=True) as s:
        return s.execute(select(func.count()).select_from(model)).scalar_one()


def _post(api, path: str, key: str | None, who: str = "alice", **kwargs):
    headers = {**api.auth(who), **({"Idempotency-Key": key} if key is not None else {})}
    return api.client.post(path, headers=headers, **kwargs)


def test_a_retry_gets_the_first_answer_and_creates_no_second_job(api):
    first = _post(api, "/api/v1/jobs", "retry-1", json=JOB)
    assert first.status_code == 201, first.text
    assert "idempotent-replayed" not in first.headers
    before = counts(api.world.ctx)
    again = _post(api, "/api/v1/jobs", "retry-1", json=JOB)
    assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content and again.headers["content-type"] == first.headers["content-type"]
    assert counts(api.world.ctx) == before and _count(api.world.ctx, Job) == 1
    # without the header each POST is a new job, as always
    assert _post(api, "/api/v1/jobs", None, json=JOB).status_code == 201
    assert _post(api, "/api/v1/jobs", None, json=JOB).status_code == 201
    assert _count(api.world.ctx, Job) == 3


def test_the_same_key_with_another_body_is_a_422_naming_the_header(api):
    assert _post(api, "/api/v1/jobs", "reused", json=JOB).status_code == 201
    before = counts(api.world.ctx)
    r = _post(api, "/api/v1/jobs", "reused", json={**JOB, "name": "other"})
    error = assert_error(r, 422, "invalid", "Idempotency-Key", "Idempotency-Key", code="idempotency.key_reused")
    assert error["args"] == {"window": 86400}
    # on another path (a project with the key of a job) as well; and in the caller's language
    r = api.client.post("/api/v1/projects", json={"name": "p1"},
                        headers={**api.auth("admin"), "Idempotency-Key": "reused", "Accept-Language": "zh-CN"})
    assert r.status_code == 201, "keys are per caller: the admin's 'reused' is a new key"
    r = api.client.post("/api/v1/projects", json={"name": "p1"},
                        headers={**api.auth("alice"), "Idempotency-Key": "reused", "Accept-Language": "zh-CN"})
    error = assert_error(r, 422, "invalid", "Idempotency-Key", code="idempotency.key_reused")
    assert "已用于另一个请求" in error["message"]
    assert counts(api.world.ctx) == {**before, "operation_logs": before["operation_logs"] + 1}  # admin's project


def test_the_same_key_and_body_with_other_query_parameters_is_another_request(api):
    assert _post(api, "/api/v1/jobs?dry=1", "with-query", json=JOB).status_code == 201
    r = _post(api, "/api/v1/jobs?dry=2", "with-query", json=JOB)
    assert_error(r, 422, "invalid", "Idempotency-Key", code="idempotency.key_reused")
    again = _post(api, "/api/v1/jobs?dry=1", "with-query", json=JOB)
    assert again.headers["idempotent-replayed"] == "true" and _count(api.world.ctx, Job) == 1


def test_keys_are_per_caller(api):
    mine = _post(api, "/api/v1/jobs", "shared-key", who="alice", json=JOB)
    theirs = _post(api, "/api/v1/jobs", "shared-key", who="bob", json=JOB)
    assert mine.status_code == theirs.status_code == 201 and mine.json()["id"] != theirs.json()["id"]
    assert theirs.json()["user"] == "bob" and "idempotent-replayed" not in theirs.headers


def test_a_malformed_key_is_refused_before_anything_runs(api):
    before = counts(api.world.ctx)
    for key in ("", "x" * 256, "naïve", "tab\tinside"):
        r = api.client.post("/api/v1/jobs", json=JOB,
                            headers={**api.auth("alice"), "Idempotency-Key": key.encode("latin-1")})
        error = assert_error(r, 422, "invalid", "Idempotency-Key", "255", code="idempotency.key_format")
        assert error["args"] == {"max": 255}
    assert counts(api.world.ctx) == before and _count(api.world.ctx, IdempotencyRecord) == 0


def test_a_structured_field_string_is_the_same_key_as_its_bare_value(api):
    first = _post(api, "/api/v1/jobs", "8e03978e-40d5-43e8-bc93-6894a57f9324", json=JOB)
    again = _post(api, "/api/v1/jobs", '"8e03978e-40d5-43e8-bc93-6894a57f9324"', json=JOB)
    assert again.headers["idempotent-replayed"] == "true" and again.json() == first.json()


def test_a_refused_request_frees_its_key_for_the_corrected_one(api):
    bad = _post(api, "/api/v1/jobs", "fix-me", json={**JOB, "name": "Not_A_Label"})
    assert_error(bad, 422, "invalid", "name")
    assert _count(api.world.ctx, IdempotencyRecord) == 0
    # also refusals before the spec is read: an unknown project, a wrong content type, a bad path parameter
    assert _post(api, "/api/v1/jobs", "fix-me", json={**JOB, "project": "nope"}).status_code == 404
    r = api.client.post("/api/v1/jobs", content=b"x", headers={**api.auth("alice"), "Idempotency-Key": "fix-me",
                                                                "Content-Type": "text/plain"})
    assert r.status_code == 415
    assert _post(api, "/api/v1/jobs/abc/resubmit", "fix-me").status_code == 422
    assert _count(api.world.ctx, IdempotencyRecord) == 0
    good = _post(api, "/api/v1/jobs", "fix-me", json=JOB)
    assert good.status_code == 201 and "idempotent-replayed" not in good.headers
    assert _post(api, "/api/v1/jobs", "fix-me", json=JOB).headers["idempotent-replayed"] == "true"


def test_a_request_while_the_first_runs_gets_409_with_retry_after(api):
    path, body = "/api/v1/jobs", b'{"name": "train", "command": ["true"]}'
    running = idempotency.begin(api.world.ctx, api.world.alice.user_id, "busy", "POST", path,
                                idempotency.fingerprint("POST", path, body))
    before = counts(api.world.ctx)
    r = api.client.post(path, content=body, headers={**api.auth("alice"), "Idempotency-Key": "busy",
                                                     "Content-Type": "application/json"})
    error = assert_error(r, 409, "conflict", "Idempotency-Key", code="idempotency.in_progress")
    assert r.headers["retry-after"] == "1" and error["args"] == {"retry_after": 1}
    assert counts(api.world.ctx) == before
    idempotency.release(api.world.ctx, running)


def test_every_creating_post_replays(api):
    """Projects, tokens (the secret is in the replay too), approvals, users, grants and resubmissions."""
    ctx, admin = api.world.ctx, "admin"
    job = _post(api, "/api/v1/jobs", None, json=JOB).json()
    cases = [
        ("admin", "/api/v1/projects", {"name": "vision"}, Project),
        ("alice", "/api/v1/tokens", {"name": "laptop"}, ApiToken),
        ("alice", "/api/v1/approvals", {"kind": "reclaim_lock", "reason": "a long run", "job_id": job["id"]}, Approval),
        (admin, "/api/v1/users", {"username": "carol", "password": "user-password-1"}, User),
        ("alice", f"/api/v1/jobs/{job['id']}/resubmit", None, Job),
    ]
    for who, path, body, model in cases:
        first = _post(api, path, f"key-{path}", who=who, json=body)
        assert first.status_code == 201, (path, first.text)
        rows = _count(ctx, model)
        again = _post(api, path, f"key-{path}", who=who, json=body)
        assert (again.status_code, again.content) == (201, first.content), path
        assert again.headers["idempotent-replayed"] == "true" and _count(ctx, model) == rows, path
    secret = _post(api, "/api/v1/tokens", "key-/api/v1/tokens", json={"name": "laptop"}).json()["access_token"]
    assert secret.startswith("crt_")


def test_a_backend_failure_after_the_write_answers_the_job_and_its_retry_replays_it(api, make_ctx):
    """A failure after the job was written (here: the backend refuses the workload) does not fail the submission:
    the job is written, the leader's repair hands it over again later (services.reconcile), and a retry with the
    same key gets the same answer rather than a second job."""
    ctx = api.world.ctx

    class RefusingBackend:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def create(self, workload):
            raise RuntimeError("the cluster refused the workload")

        def create_many(self, workloads):
            raise RuntimeError("the cluster refused the workloads")

    ctx.backend = RefusingBackend(ctx.backend)
    with TestClient(build_api(lambda: ctx), raise_server_exceptions=False) as client:
        headers = {**api.auth("alice"), "Idempotency-Key": "unknown-outcome"}
        first = client.post("/api/v1/jobs", json=JOB, headers=headers)
        assert first.status_code == 201 and first.json()["phase"] == "Queued" and _count(ctx, Job) == 1
        again = client.post("/api/v1/jobs", json=JOB, headers=headers)
        assert again.status_code == 201 and again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json() and _count(ctx, Job) == 1


def test_keys_expire_after_24_hours(api):
    """With a pinned clock: the same key and body 24 h after the first use is a new request (a second job)."""
    ctx = api.world.ctx
    secret = tokens.create_token(ctx, api.world.alice, "long-lived", 30).access_token  # outlives the login token
    headers = {"Authorization": f"Bearer {secret}", "Idempotency-Key": "daily"}
    now = [datetime.now(timezone.utc)]
    times.set_clock(lambda: now[0])
    try:
        first = api.client.post("/api/v1/jobs", json=JOB, headers=headers)
        now[0] += timedelta(hours=23, minutes=59)
        assert api.client.post("/api/v1/jobs", json=JOB, headers=headers).headers.get("idempotent-replayed") == "true"
        now[0] += timedelta(minutes=1)
        renewed = api.client.post("/api/v1/jobs", json=JOB, headers=headers)
    finally:
        times.set_clock(None)
    assert first.status_code == renewed.status_code == 201 and "idempotent-replayed" not in renewed.headers
    assert renewed.json()["id"] != first.json()["id"] and _count(ctx, Job) == 2
    with ctx.session(read_only=True) as s:  # the expired record was replaced, not kept beside the new one
        assert s.execute(select(func.count()).select_from(IdempotencyRecord)).scalar_one() == 1


def test_concurrent_retries_create_one_job(api):
    """Eight clients send the same key and body at once (own connections, own threads): one job is created; each
    answer is that job (201, replayed or not) or a 409 to retry. On SQLite and PostgreSQL."""
    app, ctx = api.client.app, api.world.ctx
    threads, barrier, answers = 8, threading.Barrier(8), [None] * 8

    def send(i: int) -> None:
        with TestClient(app) as client:
            barrier.wait()
            answers[i] = client.post("/api/v1/jobs", json=JOB, headers={**api.auth("alice"), "Idempotency-Key": "race"})

    workers = [threading.Thread(target=send, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(60)
    assert _count(ctx, Job) == 1
    statuses = sorted(a.status_code for a in answers)
    assert set(statuses) <= {201, 409}, [a.text for a in answers]
    created = [a for a in answers if a.status_code == 201]
    assert sum("idempotent-replayed" not in a.headers for a in created) == 1
    assert len({a.content for a in created}) == 1
    for a in answers:
        if a.status_code == 409:
            assert a.json()["error"]["code"] == "idempotency.in_progress"
    final = api.client.post("/api/v1/jobs", json=JOB, headers={**api.auth("alice"), "Idempotency-Key": "race"})
    assert final.status_code == 201 and final.headers["idempotent-replayed"] == "true" and _count(ctx, Job) == 1


def test_openapi_documents_the_header_on_the_creating_posts(api):
    paths = api.client.get("/api/v1/openapi.json").json()["paths"]
    documented = {path for path, ops in paths.items()
                  if any(p["name"] == "Idempotency-Key" for p in ops.get("post", {}).get("parameters", []))}
    assert documented == {
        "/api/v1/jobs", "/api/v1/jobs/{id}/resubmit", "/api/v1/projects", "/api/v1/tokens", "/api/v1/users",
        "/api/v1/approvals", "/api/v1/approvals/{id}/approve", "/api/v1/approvals/{id}/reject",
        "/api/v1/billing/grants",
    }
    submit = paths["/api/v1/jobs"]["post"]
    header = next(p for p in submit["parameters"] if p["name"] == "Idempotency-Key")
    assert header["in"] == "header" and header["schema"]["maxLength"] == 255 and not header["required"]
    assert {"201", "409", "422"} <= set(submit["responses"])


def test_a_failure_to_release_the_key_does_not_hide_the_refusal(api, monkeypatch):
    """The refusal (here: a bad name) reaches the client even when the key cannot be released (the database
    went away meanwhile); the claim is then taken over once abandoned."""
    def unreachable(*args):
        raise ConnectionError("database is gone")

    monkeypatch.setattr(idempotency, "release", unreachable)
    r = _post(api, "/api/v1/jobs", "lost-release", json={**JOB, "name": "Not_A_Label"})
    assert_error(r, 422, "invalid", "name")
    assert _count(api.world.ctx, IdempotencyRecord) == 1 and _count(api.world.ctx, Job) == 0


def test_a_personal_tokens_secret_is_never_stored_in_clear(api):
    """The replay of POST /tokens gives the secret again (the retry of a lost answer needs it), but the record keeps
    it only encrypted: the database alone does not reveal a token Crater otherwise keeps hashed."""
    first = _post(api, "/api/v1/tokens", "token-key", json={"name": "ci"})
    assert first.status_code == 201 and first.headers["cache-control"] == "no-store"
    secret = first.json()["access_token"]
    with api.world.ctx.session(read_only=True) as s:
        [stored] = s.execute(select(IdempotencyRecord.response)).scalars().all()
    assert secret not in stored and secret[4:20] not in stored and stored.startswith(idempotency.SEALED_PREFIX)
    again = _post(api, "/api/v1/tokens", "token-key", json={"name": "ci"})
    assert again.headers["idempotent-replayed"] == "true" and again.json()["access_token"] == secret
    assert _post(api, "/api/v1/tokens", "token-key", who="bob", json={"name": "ci"}).json()["access_token"] != secret


def _route_that_writes_then_fails(api, failure: Exception) -> None:
    """An idempotent POST /api/v1/test-writes that creates a project (a real write, recorded with mark_written as
    services do after a commit) and then fails with ``failure``, placed first among the app's routes."""
    from fastapi import APIRouter

    from crater_app.api.body import decode_object
    from crater_app.api.idempotency import IdempotentRoute
    from crater_app.services import projects

    router = APIRouter(route_class=IdempotentRoute)

    @router.post("/api/v1/test-writes", status_code=201)
    async def writes_then_fails(request: Request) -> Response:
        body = await decode_object(request, ("name",))
        await run_in_threadpool(projects.create_project, api.world.ctx, api.world.admin, body["name"])
        idempotency.mark_written("project")
        raise failure

    api.client.app.router.routes.insert(0, router.routes[0])


def test_a_refusal_after_a_write_is_kept_and_never_repeated(api):
    """A refusal (a Crater error) raised after the request wrote something does not release the key: a retry gets
    the same refusal instead of writing again."""
    from crater_app.domain.errors import Conflict

    _route_that_writes_then_fails(api, Conflict("job.already_final", "id", id=1, phase="Succeeded"))
    first = _post(api, "/api/v1/test-writes", "after-write", who="admin", json={"name": "written"})
    assert_error(first, 409, "conflict", "id", code="job.already_final")
    assert _count(api.world.ctx, Project) == 2  # default and the new one
    again = _post(api, "/api/v1/test-writes", "after-write", who="admin", json={"name": "written"})
    assert again.status_code == 409 and again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content and _count(api.world.ctx, Project) == 2


def test_an_unknown_outcome_is_the_stored_500_envelope(api):
    """An exception no handler maps, after a write: the answer is the 500 envelope (request id named), stored, so
    that a retry gets it again rather than a second write."""
    _route_that_writes_then_fails(api, RuntimeError("lost the connection after the commit"))
    first = api.client.post("/api/v1/test-writes", json={"name": "maybe"},
                            headers={**api.auth("admin"), "Idempotency-Key": "unknown", "Accept-Language": "zh-CN"})
    error = assert_error(first, 500, "internal", None, code="http.internal")
    assert error["args"]["request_id"] in error["message"] and "服务器出错" in error["message"]
    again = _post(api, "/api/v1/test-writes", "unknown", who="admin", json={"name": "maybe"})
    assert again.status_code == 500 and again.headers["idempotent-replayed"] == "true"
    assert again.content == first.content and _count(api.world.ctx, Project) == 2


class RefusingBackend:
    """A backend wrapper (the boundary) whose calls pass through unless a test overrides them."""

    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_slow_request_keeps_its_key(api, monkeypatch):
    """While the first request runs, its worker renews the claim: a retry is told to wait (409), however long the
    first one takes, instead of taking the key over and creating a second job."""
    ctx = api.world.ctx
    # A lease far longer than the renewal period: a loaded machine may delay one renewal, not twenty.
    monkeypatch.setattr(idempotency, "CLAIM_LEASE_S", 2.0)
    monkeypatch.setattr(idempotency, "RENEW_EVERY_S", 0.1)
    started, release = threading.Event(), threading.Event()

    class SlowBackend(RefusingBackend):
        def create(self, workload):
            started.set()
            release.wait(10)
            return self.inner.create(workload)

        def create_many(self, workloads):
            for w in workloads:
                self.create(w)

    ctx.backend = SlowBackend(ctx.backend)
    answers = []
    worker = threading.Thread(target=lambda: answers.append(_post(api, "/api/v1/jobs", "slow", json=JOB)))
    worker.start()
    assert started.wait(10)
    time.sleep(2.5)  # past the first lease: only the renewals keep the claim
    retry = _post(api, "/api/v1/jobs", "slow", json=JOB)
    assert_error(retry, 409, "conflict", "Idempotency-Key", code="idempotency.in_progress")
    release.set()
    worker.join(20)
    assert answers[0].status_code == 201 and _count(ctx, Job) == 1
    replay = _post(api, "/api/v1/jobs", "slow", json=JOB)
    assert replay.headers["idempotent-replayed"] == "true" and replay.content == answers[0].content
