"""Redis, used in production as Reflex's state manager (``REFLEX_REDIS_URL``): the server answers, accepts the
keyspace-notification setting Reflex's manager applies at startup, and what console state holds (the services'
frozen public schemas, never ORM rows or clients) survives a pickle round trip through it."""

from __future__ import annotations

import asyncio
import pickle
from concurrent.futures import ThreadPoolExecutor

import redis
import redis.asyncio as aioredis
from reflex.istate.manager.redis import NOTIFY_KEYSPACE_EVENTS, enable_keyspace_notifications

from crater_app.services import jobs, nodes, users
from tests.helpers import spec


def test_redis_answers_ping(redis_url):
    client = redis.Redis.from_url(redis_url)
    try:
        assert client.ping() is True
    finally:
        client.close()


def test_redis_accepts_the_state_managers_keyspace_notifications(redis_url):
    async def configure() -> str:
        client = aioredis.Redis.from_url(redis_url)
        try:
            before = (await client.config_get("notify-keyspace-events"))["notify-keyspace-events"]
            try:
                await enable_keyspace_notifications(client)
                now = (await client.config_get("notify-keyspace-events"))["notify-keyspace-events"]
            finally:
                await client.config_set("notify-keyspace-events", before)
            return now
        finally:
            await client.aclose()

    # In a thread of its own: a session-wide Playwright browser (tests/e2e) keeps an event loop running in the
    # main thread, where asyncio.run() refuses to start.
    with ThreadPoolExecutor(1) as pool:
        flags = pool.submit(asyncio.run, configure()).result()
    assert set(flags) == set(NOTIFY_KEYSPACE_EVENTS), flags


def test_service_results_round_trip_through_redis(redis_url, world):
    ctx = world.ctx
    job = jobs.submit_job(ctx, world.alice, spec("pickled", ["sh", "-c", "echo <b>ok</b>"], resources={"nvidia.com/gpu": 1}))
    values = {
        "page": jobs.list_jobs(ctx, world.alice),
        "job": jobs.get_job(ctx, world.alice, job.id),
        "events": jobs.job_events(ctx, world.alice, job.id),
        "nodes": nodes.list_nodes(ctx, world.alice),
        "me": users.me(ctx, world.alice),
    }
    client = redis.Redis.from_url(redis_url)
    try:
        key = f"crater-test:{job.uid}"
        client.set(key, pickle.dumps(values), ex=60)
        restored = pickle.loads(client.get(key))
        client.delete(key)
    finally:
        client.close()
    assert restored == values
    assert restored["job"].command == ["sh", "-c", "echo <b>ok</b>"]
