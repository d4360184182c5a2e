"""services.idempotency: keys, claims, stored answers, reuse with another request, expiry and the sweep, and
concurrent first requests (SQLite and PostgreSQL: the unique (user, key) decides)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import func, select

from crater_app.db.models import IdempotencyRecord
from crater_app.domain import times
from crater_app.domain.errors import Conflict, InvalidInput
from crater_app.services import idempotency
from crater_app.services.idempotency import Claim, StoredAnswer

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)


@pytest.fixture
def clock():
    """A pinned clock: ``clock.now`` is what ``times.utcnow`` answers; move it with ``clock.now += ...``."""

    class Clock:
        now = T0

    pinned = Clock()
    times.set_clock(lambda: pinned.now)
    yield pinned
    times.set_clock(None)


def _records(ctx) -> list:
    with ctx.session(read_only=True) as s:
        return list(s.execute(select(IdempotencyRecord.__table__)).all())


def _begin(world, key="k-1", body=b'{"name": "a"}', user=None, method="POST", path="/api/v1/jobs"):
    user_id = (user or world.alice).user_id
    return idempotency.begin(world.ctx, user_id, key, method, path, idempotency.fingerprint(method, path, body))


@pytest.mark.parametrize(("raw", "key"), [
    ("abc", "abc"), ("  padded\t", "padded"), ("8e03978e-40d5-43e8-bc93-6894a57f9324", "8e03978e-40d5-43e8-bc93-6894a57f9324"),
    ('"quoted"', "quoted"), ('"with \\"escape\\" and \\\\"', 'with "escape" and \\'), ("a b~!", "a b~!"),
    ("x" * 255, "x" * 255), ('"', '"'),
])
def test_keys_are_printable_ascii_bare_or_as_a_structured_field_string(raw, key):
    assert idempotency.parse_key(raw) == key


@pytest.mark.parametrize("raw", ["", "   ", '""', "x" * 256, "caf\u00e9", "tab\there", "nul\x00", "\x7f", '"a\\b"',
                                 '"unterminated\\"', '"in"side"'])
def test_bad_keys_are_refused_naming_the_header_and_the_limit(raw):
    with pytest.raises(InvalidInput) as caught:
        idempotency.parse_key(raw)
    assert caught.value.code == "idempotency.key_format" and caught.value.field == "Idempotency-Key"
    assert caught.value.params == {"max": 255} and "255" in caught.value.message
    assert "255" in caught.value.message_in("zh-CN") and "可打印 ASCII" in caught.value.message_in("zh-CN")


def test_the_fingerprint_covers_method_path_and_body():
    base = idempotency.fingerprint("POST", "/api/v1/jobs", b"{}")
    assert len(base) == 64 and base == idempotency.fingerprint("post", "/api/v1/jobs", b"{}")
    others = {idempotency.fingerprint("PUT", "/api/v1/jobs", b"{}"),
              idempotency.fingerprint("POST", "/api/v1/projects", b"{}"),
              idempotency.fingerprint("POST", "/api/v1/jobs", b"{ }"),
              # the parts are length-prefixed: moving bytes from the path to the body is another request
              idempotency.fingerprint("POST", "/api/v1/job", b"s{}")}
    assert base not in others and len(others) == 4


def test_claim_store_and_replay(world, clock):
    claim = _begin(world)
    assert isinstance(claim, Claim) and claim.key == "k-1"
    [row] = _records(world.ctx)
    assert row.status_code is None and row.user_id == world.alice.user_id and row.method == "POST"
    # a claim is a lease that its worker renews; the answer is then kept for 24 h from the claim
    assert row.path == "/api/v1/jobs" and row.expires_at == T0 + timedelta(seconds=idempotency.CLAIM_LEASE_S)
    with pytest.raises(Conflict) as caught:  # the first request is still running
        _begin(world)
    assert caught.value.code == "idempotency.in_progress" and caught.value.params == {"retry_after": 1}
    assert idempotency.finish(world.ctx, claim, 201, "application/json", '{"id": 7, "name": "神"}'.encode())
    [row] = _records(world.ctx)
    assert row.expires_at == T0 + timedelta(hours=24) and row.status_code == 201
    clock.now += timedelta(hours=23, minutes=59)
    answer = _begin(world)
    assert answer == StoredAnswer(201, "application/json", '{"id": 7, "name": "神"}'.encode())
    assert len(_records(world.ctx)) == 1


def test_another_request_with_the_same_key_is_refused_and_changes_nothing(world, clock):
    claim = _begin(world)
    idempotency.finish(world.ctx, claim, 201, "application/json", b"{}")
    before = _records(world.ctx)
    for other in ({"body": b'{"name": "b"}'}, {"path": "/api/v1/projects"}, {"method": "PUT"}):
        with pytest.raises(InvalidInput) as caught:
            _begin(world, **other)
        assert caught.value.code == "idempotency.key_reused" and caught.value.field == "Idempotency-Key"
        assert caught.value.params == {"window": 86400} and "1d" in caught.value.message
    assert _records(world.ctx) == before


def test_keys_belong_to_their_caller(world, clock):
    mine = _begin(world, user=world.alice)
    idempotency.finish(world.ctx, mine, 201, "application/json", b'{"who": "alice"}')
    theirs = _begin(world, user=world.bob, body=b"something else")
    assert isinstance(theirs, Claim) and theirs.record_id != mine.record_id


def test_refusals_release_the_key_and_unknown_outcomes_are_kept(world, clock):
    claim = _begin(world)
    assert not idempotency.finish(world.ctx, claim, 422, "application/json", b'{"error": {}}')
    assert _records(world.ctx) == []
    again = _begin(world)  # the corrected request may use the key
    assert isinstance(again, Claim)
    idempotency.release(world.ctx, again)
    assert _records(world.ctx) == []
    failed = _begin(world)
    assert idempotency.finish(world.ctx, failed, 500, "text/plain", b"Internal Server Error")
    assert _begin(world) == StoredAnswer(500, "text/plain", b"Internal Server Error")


def test_stored_answers_are_encrypted_and_open_only_for_their_request(world, clock):
    """The answer to POST /tokens holds the personal token's secret, which Crater otherwise keeps only hashed: the
    database holds it encrypted (with a key derived from the deployment secret, bound to caller, key and request),
    and only the same caller's retry of the same request gets it back."""
    secret = b'{"id": 3, "access_token": "crt_s3cr3t-value"}'
    claim = _begin(world, path="/api/v1/tokens", body=b'{"name": "laptop"}')
    assert idempotency.finish(world.ctx, claim, 201, "application/json", secret)
    [row] = _records(world.ctx)
    assert row.response.startswith(idempotency.SEALED_PREFIX) and "crt_" not in row.response and "s3cr3t" not in row.response
    assert _begin(world, path="/api/v1/tokens", body=b'{"name": "laptop"}') == StoredAnswer(201, "application/json", secret)
    # any bytes, not only text; and a row moved to another caller (a database edit) does not open
    binary = _begin(world, key="bin")
    assert idempotency.finish(world.ctx, binary, 200, "application/octet-stream", b"\xff\xfe")
    assert _begin(world, key="bin") == StoredAnswer(200, "application/octet-stream", b"\xff\xfe")
    with world.ctx.session() as s:
        s.execute(IdempotencyRecord.__table__.update().where(IdempotencyRecord.__table__.c.key == "bin")
                  .values(user_id=world.bob.user_id))
    with pytest.raises(Conflict) as caught:
        _begin(world, key="bin", user=world.bob)
    assert caught.value.code == "idempotency.answer_unreadable" and "Idempotency-Key" in caught.value.message


def test_a_refusal_after_a_write_is_kept_for_the_key(world, clock):
    """A job written before the backend refused its workload: the 4xx answer is stored, so that a retry does not
    submit a second job (services call mark_written once such a change is committed)."""
    claim = _begin(world)
    assert idempotency.finish(world.ctx, claim, 422, "application/json", b'{"error": {}}', written=True)
    assert _begin(world) == StoredAnswer(422, "application/json", b'{"error": {}}')
    writes = idempotency.watch_writes()
    idempotency.mark_written("job")
    assert writes.written and writes.what == ["job"]


def test_a_renewed_claim_is_never_taken_over(world, clock):
    """A slow request keeps its key: its worker renews the lease while the request runs (every 15 s)."""
    claim = _begin(world)
    for _ in range(20):  # 20 renewals, 10 minutes: far past one lease
        clock.now += timedelta(seconds=idempotency.RENEW_EVERY_S * 2)
        assert idempotency.renew(world.ctx, claim)
        with pytest.raises(Conflict):
            _begin(world)
    assert idempotency.finish(world.ctx, claim, 201, "application/json", b'{"slow": true}')
    assert not idempotency.renew(world.ctx, claim)  # finished: nothing left to renew
    assert _begin(world) == StoredAnswer(201, "application/json", b'{"slow": true}')
    # a lease never outlives the record's window
    late = _begin(world, key="late")
    clock.now += timedelta(hours=24)
    idempotency.renew(world.ctx, late, now=clock.now - timedelta(seconds=1))
    assert [r.expires_at for r in _records(world.ctx) if r.key == "late"] == [late.created_at + timedelta(hours=24)]


def test_a_late_finish_does_not_overwrite_the_claim_that_took_over(world, clock):
    first = _begin(world)
    clock.now += timedelta(seconds=idempotency.CLAIM_LEASE_S + 1)  # not renewed: its worker is gone
    second = _begin(world)
    assert isinstance(second, Claim) and second != first  # SQLite may reuse the row id: the claim time differs
    assert not idempotency.finish(world.ctx, first, 201, "application/json", b'{"late": true}')
    idempotency.release(world.ctx, first)  # neither does a late release
    assert [r.id for r in _records(world.ctx)] == [second.record_id]
    with pytest.raises(Conflict):  # the new claim is young
        _begin(world)


def test_expired_records_start_afresh_and_are_swept(world, clock):
    old = _begin(world, key="old")
    idempotency.finish(world.ctx, old, 201, "application/json", b'{"n": 1}')
    clock.now += timedelta(hours=12)
    young = _begin(world, key="young")
    idempotency.finish(world.ctx, young, 201, "application/json", b'{"n": 2}')
    clock.now = T0 + timedelta(hours=24)  # 'old' expires now, 'young' in 12 h
    renewed = _begin(world, key="old", body=b"another body: a new request after expiry")
    assert isinstance(renewed, Claim)
    idempotency.release(world.ctx, renewed)
    assert {r.key for r in _records(world.ctx)} == {"young"}
    assert idempotency.sweep(world.ctx, now=T0 + timedelta(hours=36)) == 1
    assert _records(world.ctx) == []


def test_writes_sweep_expired_records_at_most_once_per_interval(world, clock):
    for i in range(3):
        claim = _begin(world, key=f"k{i}")
        idempotency.finish(world.ctx, claim, 201, "application/json", b"{}")
    clock.now += timedelta(hours=25)
    idempotency.release(world.ctx, _begin(world, key="fresh"))  # the first write after 25 h sweeps
    assert _records(world.ctx) == []
    for i in range(2):
        idempotency.finish(world.ctx, _begin(world, key=f"later{i}"), 201, "application/json", b"{}")
    clock.now += timedelta(hours=25)
    world.ctx.cache[("idempotency", "swept-at")] = clock.now  # swept a moment ago (another write)
    idempotency.release(world.ctx, _begin(world, key="fresh-2"))
    assert {r.key for r in _records(world.ctx)} == {"later0", "later1"}


def test_concurrent_first_requests_run_once(world):
    """Eight threads send the same key at once: one claims it, the others are told it is in progress; once the
    answer is stored every one of them gets it. The unique (user, key) decides, on SQLite and PostgreSQL."""
    ctx, threads, barrier = world.ctx, 8, threading.Barrier(8)
    results: list = [None] * threads

    def attempt(i: int) -> None:
        barrier.wait()
        try:
            results[i] = _begin(world, key="race")
        except Conflict as exc:
            results[i] = exc

    workers = [threading.Thread(target=attempt, args=(i,)) for i in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    claims = [r for r in results if isinstance(r, Claim)]
    assert len(claims) == 1, results
    assert all(isinstance(r, Conflict) and r.code == "idempotency.in_progress" for r in results if r is not claims[0])
    with ctx.session(read_only=True) as s:
        assert s.execute(select(func.count()).select_from(IdempotencyRecord.__table__)).scalar_one() == 1
    idempotency.finish(ctx, claims[0], 201, "application/json", b'{"id": 1}')
    assert _begin(world, key="race") == StoredAnswer(201, "application/json", b'{"id": 1}')
