"""A gang job's page in a real browser: its replicas table, the log of the replica picked, no manifest section on
the local backend."""

from __future__ import annotations

import json
import os
import urllib.request

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ADMIN_PASSWORD, Console, sign_in

pytestmark = pytest.mark.e2e

SMALL = {"nvidia.com/gpu": 1, "cpu": "100m", "memory": "64Mi"}


def _api(console: Console, path: str, body: dict, token: str | None = None) -> dict:
    req = urllib.request.Request(console.url + path, method="POST", data=json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def test_a_gang_shows_its_replicas_and_the_log_of_the_one_picked(page: Page, console: Console) -> None:
    token = _api(console, "/api/v1/auth/token", {"username": "admin", "password": ADMIN_PASSWORD})["access_token"]
    tasks = [{"name": "master", "replicas": 1, "command": ["sh", "-c", "echo master-out; sleep 60"], "resources": SMALL},
             {"name": "worker", "replicas": 2, "command": ["sh", "-c", "echo worker-out $VC_TASK_INDEX; sleep 60"],
              "resources": SMALL}]
    job = _api(console, "/api/v1/jobs", {"name": "gang-e2e", "tasks": tasks}, token)
    sign_in(page, console.url, "admin", ADMIN_PASSWORD, path=f"/jobs/{job['id']}")

    rows = page.locator("#job-replicas [data-replica]")
    expect(rows).to_have_count(3)
    expect(page.locator('#job-replicas [data-replica="worker/1"] [data-phase]')).to_have_attribute(
        "data-phase", "Running", timeout=30_000)
    expect(page.locator("#job-logs")).to_contain_text("master-out")  # the first replica by default

    page.locator("#log-replica").click()
    page.get_by_role("option", name="worker/1").click()
    expect(page.locator("#job-logs")).to_contain_text("worker-out 1")
    expect(page.locator("#job-logs")).not_to_contain_text("master-out")
    expect(page.locator("#job-manifest-section")).to_have_count(0)  # the local backend keeps no objects
    # the Command card: one block per task, with its replicas and per-replica resources; memory as a size
    blocks = page.locator("#job-tasks [data-task]")
    expect(blocks).to_have_count(2)
    expect(page.locator('#job-tasks [data-task="worker"]')).to_contain_text("Replicas: 2")
    expect(page.locator('#job-tasks [data-task="worker"]')).to_contain_text("64 MiB memory")
    expect(page.locator('#job-tasks [data-task="worker"]')).to_contain_text("worker-out $VC_TASK_INDEX; sleep 60")
    expect(page.get_by_text("192 MiB", exact=True)).to_be_visible()  # the job's memory: three replicas of 64 MiB
    if os.environ.get("CRATER_SCREENSHOT_DIR"):
        page.screenshot(path=os.path.join(os.environ["CRATER_SCREENSHOT_DIR"], "job-replicas.png"), full_page=True)
    assert page.page_errors == []  # type: ignore[attr-defined]
