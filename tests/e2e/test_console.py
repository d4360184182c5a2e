"""The console in a real browser: sign in, submit a 2-GPU job from the form, watch it succeed with its logs.

Runs against ``reflex run --env prod`` with the Redis state manager (see ``conftest.py``). With
``CRATER_SCREENSHOTS=1`` it also writes ``docs/screenshot-jobs.png`` and ``docs/screenshot-job.png``.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.request

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ADMIN_PASSWORD, ROOT, Console

pytestmark = pytest.mark.e2e

JOB_NAME = "hello-crater"
# Typed as one shell-like line: the console splits it with shlex.split and never runs a shell.
COMMAND = (
    "python3 -c \"import os,time;print('hello-crater');print('cuda='+os.environ['CUDA_VISIBLE_DEVICES']);"
    "time.sleep(5)\""
)
SCREENSHOTS = os.environ.get("CRATER_SCREENSHOTS") == "1"


def _path(page: Page) -> str:
    return re.sub(r"^https?://[^/]+", "", page.url).rstrip("/") or "/"


def _api(console: Console, method: str, path: str, body: dict | None = None, token: str | None = None) -> dict:
    req = urllib.request.Request(console.url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _sample_jobs(console: Console) -> None:
    """More jobs for a realistic list screenshot (only with CRATER_SCREENSHOTS=1), through the HTTP API."""
    token = _api(console, "POST", "/api/v1/auth/token", {"username": "admin", "password": ADMIN_PASSWORD})["access_token"]
    specs = [
        ("preprocess-imagenet", ["python3", "-c", "print('shards ok')"], 0, "0.5"),
        ("eval-bert-large", ["python3", "-c", "import sys; print('missing checkpoint'); sys.exit(3)"], 1, "1"),
        ("train-resnet50", ["python3", "-c", "import time; print('epoch 1/90'); time.sleep(120)"], 2, "2"),
        ("finetune-llama-7b", ["python3", "-c", "import time; time.sleep(120)"], 4, "1"),
    ]
    for name, command, gpus, cpu in specs:
        resources = {"cpu": cpu, "memory": "1Gi"}
        if gpus:
            resources["nvidia.com/gpu"] = gpus
        _api(console, "POST", "/api/v1/jobs", {"name": name, "command": command, "resources": resources}, token)
        time.sleep(0.4)


def test_submit_two_gpu_job_and_read_its_logs(page: Page, console: Console) -> None:
    started = time.monotonic()
    url = console.url

    # A signed-out visit to a console page lands on the sign-in form.
    page.goto(url + "/jobs")
    page.wait_for_url(re.compile(r".*/login/?$"))
    page.fill("#username", "admin")
    page.fill("#password", "wrong-password")
    page.click("#login-submit")
    expect(page.locator("#login-error")).to_contain_text("Wrong user name or password")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("#login-submit")
    page.wait_for_url(re.compile(r".*/jobs/?$"))
    expect(page.locator("#nav-username")).to_have_text("admin")

    # The new-job form offers the node's real accelerator model and counts 0..4, and starts with the cpu/memory
    # defaults the API applies too (settings default_job_cpu/default_job_memory).
    page.click("#new-job")
    page.wait_for_url(re.compile(r".*/jobs/new/?$"))
    expect(page.locator("#gpu-model")).to_contain_text("NVIDIA-A100-SXM4-80GB")
    expect(page.locator("#job-cpu")).to_have_value("1")
    expect(page.locator("#job-memory")).to_have_value("2Gi")
    expect(page.locator("#job-memory-hint")).to_contain_text("the default is 2Gi")
    page.fill("#job-name", JOB_NAME)
    page.click("#mode-shell")
    page.fill("#job-command", COMMAND)
    page.fill("#job-env", "GREETING=hello")
    page.click("#gpu-count")
    options = page.get_by_role("option")
    expect(options).to_have_text(["0", "1", "2", "3", "4"])
    page.get_by_role("option", name="2", exact=True).click()
    expect(page.locator("#gpu-count")).to_have_text("2")
    page.click("#submit-job")

    # The detail page follows the job live: it is not finished when the page opens, then succeeds.
    page.wait_for_url(re.compile(r".*/jobs/\d+/?$"))
    job_id = _path(page).rsplit("/", 1)[-1]
    expect(page.locator("#job-name")).to_have_text(JOB_NAME)
    first_phase = page.locator("#job-phase .phase-badge").get_attribute("data-phase")
    assert first_phase in ("Queued", "Running"), first_phase
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute("data-phase", "Succeeded", timeout=30_000)
    logs = page.locator("#job-logs")
    expect(logs).to_contain_text("hello-crater")
    expect(logs).to_contain_text("cuda=0,1")
    expect(page.locator("#job-exit-code")).to_have_text("0")
    expect(page.locator("#job-reason")).to_have_text("exited with code 0")
    expect(page.locator("#job-devices")).to_contain_text("GPU 0")
    expect(page.locator("#job-devices")).to_contain_text("GPU 1")
    expect(page.locator("#job-events")).to_contain_text("Completed")
    expect(page.locator("#cancel-job")).to_have_count(0)
    if SCREENSHOTS:
        page.screenshot(path=str(ROOT / "docs" / "screenshot-job.png"), full_page=True)

    # The list shows it (newest first) with its phase; the language switch translates the console.
    page.click("#nav-jobs")
    page.wait_for_url(re.compile(r".*/jobs/?$"))
    row = page.locator(f".job-row[data-job-id='{job_id}']")
    expect(row).to_contain_text(JOB_NAME)
    expect(row.locator(".phase-badge")).to_have_attribute("data-phase", "Succeeded")
    expect(row).to_contain_text("2 × NVIDIA-A100-SXM4-80GB")
    if SCREENSHOTS:
        _sample_jobs(console)
        expect(page.locator(".job-row")).to_have_count(5, timeout=15_000)  # the live list picks them up
        page.wait_for_timeout(2500)
        page.screenshot(path=str(ROOT / "docs" / "screenshot-jobs.png"))
    page.click("#lang-switch")
    page.get_by_role("option", name="简体中文").click()
    expect(page.locator("#page-title")).to_have_text("作业")
    expect(row.locator(".phase-badge")).to_contain_text("已成功")
    expect(row).to_contain_text("进程退出，退出码 0")  # the status sentence, rendered from its code
    # The job's events: reason words in Chinese (the API word stays in data-reason) and each message rendered from
    # its code and arguments.
    row.locator(".job-link").click()
    page.wait_for_url(re.compile(rf".*/jobs/{job_id}/?$"))
    expect(page.locator("#job-reason")).to_have_text("进程退出，退出码 0")
    events = page.locator("#job-events")
    for reason, word in (("Submitted", "已提交"), ("HostEnvironment", "主机环境"), ("Started", "已启动"),
                         ("Completed", "已完成")):
        expect(events.locator(f".event-reason[data-reason='{reason}']")).to_have_text(word)
    expect(events).to_contain_text("由 admin 提交")
    expect(events).to_contain_text("本地后端在主机环境中运行命令")
    expect(events).to_contain_text(re.compile(r"使用设备 \[?0,1"))  # the Started event names its devices
    expect(events).to_contain_text("进程退出，退出码 0")
    expect(events).not_to_contain_text("Submitted")
    expect(events).not_to_contain_text("exited with code")
    page.click("#lang-switch")
    page.get_by_role("option", name="English").click()
    expect(events.locator(".event-reason[data-reason='Completed']")).to_have_text("Completed")
    expect(events).to_contain_text("submitted by admin")
    expect(events).to_contain_text("exited with code 0")
    expect(page.locator("#job-reason")).to_have_text("exited with code 0")
    page.click("#nav-jobs")
    expect(page.locator("#page-title")).to_have_text("Jobs")

    # The list's filters come from the URL and go back into it.
    page.goto(url + "/jobs?phase=Failed")
    phase_filter = page.locator("#phase-filter")
    expect(phase_filter.get_by_role("radio", name="Failed")).to_have_attribute("aria-checked", "true")
    expect(page.locator(".job-row")).to_have_count(0)
    phase_filter.get_by_role("radio", name="Succeeded").click()
    page.wait_for_url(re.compile(r".*/jobs\?phase=Succeeded$"))
    expect(row).to_contain_text(JOB_NAME)
    page.goto(url + f"/jobs?q={JOB_NAME}&phase=Succeeded")
    expect(page.locator("#job-search")).to_have_value(JOB_NAME)
    expect(page.locator(".job-row")).to_have_count(1)

    # After a submit, the new-job form starts again from its defaults.
    page.goto(url + "/jobs/new")
    expect(page.locator("#gpu-count")).to_have_text("1")
    expect(page.locator("#mode-lines")).to_have_attribute("data-state", "checked")
    expect(page.locator("#job-name")).to_have_value("")

    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]
    print(f"browser flow took {time.monotonic() - started:.1f} s (server start {console.startup_s:.1f} s)")


def test_sign_in_returns_to_page_and_only_admins_manage_users(page: Page, console: Console) -> None:
    """Signed-out visits go to /login and come back after signing in; an admin creates a user in the
    console; that user sees no admin section, and the users page refuses them (the service enforces it)."""
    for path in ("/", "/jobs/new", "/admin/users", "/nodes"):
        page.goto(console.url + path)
        page.wait_for_url(re.compile(r".*/login/?$"))
    page.fill("#username", "admin")
    page.fill("#password", ADMIN_PASSWORD)
    page.click("#login-submit")
    page.wait_for_url(re.compile(r".*/nodes/?$"))
    expect(page.locator(".device-row")).to_have_count(4)
    expect(page.locator(".device-row").first).to_contain_text("NVIDIA-A100-SXM4-80GB")

    page.click("#nav-admin")
    page.wait_for_url(re.compile(r".*/admin/users/?$"))
    page.fill("#new-username", "alice")
    page.fill("#new-password", "short")
    page.click("#create-user")
    expect(page.locator("#password-error")).to_contain_text("password")  # beside the password field
    page.fill("#new-password", "alice-password-1")
    page.fill("#new-display-name", "Alice <b>Liddell</b>")
    page.click("#create-user")
    expect(page.locator("#users-table")).to_contain_text("alice")
    expect(page.locator("#users-table")).to_contain_text("Alice <b>Liddell</b>")  # shown as text, not HTML

    page.click("#user-menu")
    page.click("#sign-out")
    page.wait_for_url(re.compile(r".*/login/?$"))
    page.fill("#username", "alice")
    page.fill("#password", "alice-password-1")
    page.click("#login-submit")
    page.wait_for_url(re.compile(r".*/jobs/?$"))
    expect(page.locator("#nav-username")).to_have_text("alice")
    expect(page.locator("#nav-admin")).to_have_count(0)
    page.goto(console.url + "/admin/users")
    expect(page.locator("#admin-forbidden")).to_be_visible()
    expect(page.locator("#users-table")).to_have_count(0)
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]


def test_unknown_pages_favicon_and_a_phone_sized_screen(browser, page: Page, console: Console) -> None:
    """Unknown routes get a styled, translated 404 page; /favicon.ico exists; at 390 px the top bar fits."""
    with urllib.request.urlopen(console.url + "/favicon.ico", timeout=10) as resp:
        assert resp.status == 200 and resp.read(4) == b"\x00\x00\x01\x00"  # an ICO file

    failed: list[str] = []
    page.on("response", lambda r: failed.append(r.url) if r.status >= 400 else None)
    page.goto(console.url + "/no/such/page")
    expect(page.locator("#not-found")).to_be_visible()
    expect(page.locator("#page-title")).to_have_text("Page not found")
    page.click("#lang-switch")
    page.get_by_role("option", name="简体中文").click()
    expect(page.locator("#page-title")).to_have_text("页面不存在")
    assert [u for u in failed if not u.endswith("/no/such/page")] == []

    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    context.set_default_timeout(20_000)
    phone = context.new_page()
    try:
        phone.goto(console.url + "/login")
        phone.fill("#username", "admin")
        phone.fill("#password", ADMIN_PASSWORD)
        phone.click("#login-submit")
        phone.wait_for_url(re.compile(r".*/jobs/?$"))
        for selector in ("#nav-jobs", "#nav-nodes", "#nav-admin", "#lang-switch", "#user-menu"):
            box = phone.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (selector, box)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.click("#user-menu")
        expect(phone.locator("#sign-out")).to_be_visible()
    finally:
        context.close()
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]
