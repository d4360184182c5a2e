"""The governance pages in a real browser: projects and members, personal API tokens, the operation log.

An admin creates a project (a bad name is refused under its field) and adds alice; alice sees the project but
not its members, creates a token whose secret is shown once (and works against the API), then revokes it
(and it stops working); alice cannot open the operation log; the admin filters the log by action, exports the
filtered CSV, switches to 简体中文, and the top bar still fits a 390 px phone.

Runs against ``reflex run --env prod`` with the Redis state manager (see ``conftest.py``).
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ADMIN_PASSWORD, Console, sign_in

pytestmark = pytest.mark.e2e

PROJECT = "vision-lab"
# test_console.py creates alice through the console with this password; whichever test runs first creates her.
ALICE_PASSWORD = "alice-password-1"


def _api(console: Console, method: str, path: str, body: dict | None = None, token: str | None = None) -> tuple[int, object]:
    req = urllib.request.Request(console.url + path, method=method,
                                 data=None if body is None else json.dumps(body).encode())
    req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, json.loads(resp.read() or b"null")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"null")


def _ensure_alice(console: Console) -> None:
    status, token = _api(console, "POST", "/api/v1/auth/token", {"username": "admin", "password": ADMIN_PASSWORD})
    assert status == 200, token
    status, body = _api(console, "POST", "/api/v1/users", {"username": "alice", "password": ALICE_PASSWORD},
                        token["access_token"])  # type: ignore[index]
    assert status in (201, 409), body


def _sign_out(page: Page) -> None:
    page.click("#user-menu")
    page.click("#sign-out")
    page.wait_for_url(re.compile(r".*/login/?$"))


def _choose(page: Page, trigger: str, option: str, scope=None) -> None:
    (scope or page).locator(trigger).click()
    page.get_by_role("option", name=option, exact=True).click()


def test_projects_tokens_and_operation_log(browser, page: Page, console: Console, tmp_path: Path) -> None:
    url = console.url
    _ensure_alice(console)
    expiry = (datetime.now(timezone.utc) + timedelta(days=30)).date().isoformat()

    # --- the admin creates a project; a bad name is refused under the name field, nothing is created --------------
    sign_in(page, url, "admin", ADMIN_PASSWORD, "/jobs")
    page.click("#nav-projects")
    page.wait_for_url(re.compile(r".*/projects/?$"))
    expect(page.locator("#page-title")).to_have_text("Projects")
    page.fill("#new-project-name", "Vision_Lab")
    page.click("#create-project")
    expect(page.locator("#project-name-error")).to_contain_text("lowercase letters")
    expect(page.locator(".project-row[data-project='vision_lab']")).to_have_count(0)
    page.fill("#new-project-name", PROJECT)
    page.fill("#new-project-display-name", "Vision Lab")
    page.fill("#new-project-description", "Detection and segmentation")
    page.fill("#new-project-expiry", expiry)
    page.click("#create-project")
    row = page.locator(f".project-row[data-project='{PROJECT}']")
    expect(row).to_contain_text("Vision Lab")
    expect(row.locator(".expiry-badge")).to_have_attribute("data-expiry", "active")
    expect(row.locator(".project-expiry")).to_contain_text(f"{expiry} 23:59:59")
    expect(page.locator("#project-name-error")).to_have_count(0)
    expect(page.locator("#new-project-name")).to_have_value("")  # the form starts again

    # --- members: add alice, change her role; add and remove the admin (confirm dialog) -------------------------
    row.locator(".project-link").click()
    page.wait_for_url(re.compile(rf".*/projects/{PROJECT}/?$"))
    expect(page.locator("#page-title")).to_have_text("Vision Lab")
    expect(page.locator("#project-expiry")).to_contain_text(expiry)
    expect(page.locator("#members-empty")).to_be_visible()
    page.fill("#member-username", "no-such-user")
    page.click("#add-member")
    expect(page.locator("#member-username-error")).to_contain_text("does not exist")
    page.fill("#member-username", "alice")
    page.click("#add-member")
    alice = page.locator(".member-row[data-username='alice']")
    expect(alice.locator(".member-role")).to_have_attribute("data-role", "member")
    expect(page.locator("#member-username")).to_have_value("")
    _choose(page, ".member-role-select", "Viewer", alice)
    expect(alice.locator(".member-role")).to_have_attribute("data-role", "viewer")
    page.fill("#member-username", "admin")
    _choose(page, "#member-role", "Project admin")
    page.click("#add-member")
    admin_row = page.locator(".member-row[data-username='admin']")
    expect(admin_row.locator(".member-role")).to_have_attribute("data-role", "admin")
    admin_row.locator(".remove-member").click()
    expect(page.get_by_role("alertdialog")).to_contain_text("admin loses access to project vision-lab")
    page.get_by_role("alertdialog").get_by_role("button", name="Back").click()
    expect(admin_row).to_have_count(1)
    admin_row.locator(".remove-member").click()
    page.click("#confirm-remove")
    expect(admin_row).to_have_count(0)
    expect(page.locator(".member-row")).to_have_count(1)
    _sign_out(page)

    # --- alice sees the project (as viewer) but not its members --------------------------------------------------
    sign_in(page, url, "alice", ALICE_PASSWORD, "/projects")
    expect(page.locator("#nav-oplog")).to_have_count(0)
    expect(page.locator("#nav-admin")).to_have_count(0)
    expect(page.locator("#create-project")).to_have_count(0)
    row = page.locator(f".project-row[data-project='{PROJECT}']")
    expect(row.locator(".project-role")).to_contain_text("Viewer")
    row.locator(".project-link").click()
    page.wait_for_url(re.compile(rf".*/projects/{PROJECT}/?$"))
    expect(page.locator("#project-description")).to_have_text("Detection and segmentation")
    expect(page.locator("#members-hidden")).to_be_visible()
    expect(page.locator("#members-table")).to_have_count(0)
    expect(page.locator("#add-member")).to_have_count(0)
    page.goto(url + "/projects/not-hers")
    expect(page.locator("#project-not-found")).to_be_visible()

    # --- alice creates a token: the secret is shown once, copied, and works; then she revokes it -----------------
    page.click("#nav-tokens")
    page.wait_for_url(re.compile(r".*/tokens/?$"))
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=url)
    page.fill("#token-name", "alice-cli")
    page.fill("#token-days", "30")
    page.click("#create-token")
    secret_box = page.locator("#token-secret")
    expect(secret_box).to_be_visible()
    expect(page.locator("#token-secret-warning")).to_contain_text("will not be shown again")
    expect(secret_box).to_have_attribute("data-filled", "true")  # written by a script: it is not console state
    secret = secret_box.input_value()
    assert len(secret) >= 32, secret
    page.click("#copy-token")
    page.wait_for_function("s => navigator.clipboard.readText().then(t => t === s)", arg=secret)
    status, listed = _api(console, "GET", "/api/v1/tokens", token=secret)
    assert status == 200 and [t["name"] for t in listed] == ["alice-cli"], listed  # type: ignore[union-attr]
    page.click("#token-secret-done")
    expect(secret_box).to_have_count(0)
    assert secret not in page.content()
    token_row = page.locator(".token-row[data-token-name='alice-cli']")
    expect(token_row.locator(".token-status")).to_have_attribute("data-status", "active")
    page.reload()
    expect(token_row.locator(".token-status")).to_have_attribute("data-status", "active")
    assert secret not in page.content()  # shown once: never again
    token_row.locator(".revoke-token").click()
    expect(page.locator("#confirm-revoke")).to_be_visible()
    page.locator("#confirm-revoke").click()
    expect(token_row.locator(".token-status")).to_have_attribute("data-status", "revoked")
    expect(token_row.locator(".revoke-token")).to_have_count(0)
    # Revoked: refused at once by the worker that revoked it, within 5 s by the other worker (its identity cache).
    deadline = time.monotonic() + 15
    while (status := _api(console, "GET", "/api/v1/tokens", token=secret)[0]) != 401 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert status == 401

    # --- the operation log is for platform admins only ------------------------------------------------------------
    page.goto(url + "/admin/operation-logs")
    expect(page.locator("#oplog-forbidden")).to_be_visible()
    expect(page.locator("#oplog-table")).to_have_count(0)
    expect(page.locator("#oplog-export")).to_have_count(0)
    _sign_out(page)

    # --- the admin filters the log by action, exports the filtered CSV -------------------------------------------
    sign_in(page, url, "admin", ADMIN_PASSWORD, "/jobs")
    page.click("#nav-oplog")
    page.wait_for_url(re.compile(r".*/admin/operation-logs/?$"))
    # The page's on_load reads the log after the navigation: allow for a slow round trip on a busy machine.
    expect(page.locator(".oplog-row").first).to_be_visible(timeout=20_000)
    for action in ("project:create", "project:member:set", "project:member:remove", "token:create"):
        expect(page.locator(f".oplog-row[data-action='{action}']").first).to_be_visible()
    expect(page.locator("#oplog-table button, #oplog-table input")).to_have_count(0)  # read-only
    _choose(page, "#oplog-action", "token:revoke")
    page.click("#oplog-apply")
    page.wait_for_url(re.compile(r".*/admin/operation-logs\?action=token%3Arevoke$"))
    rows = page.locator(".oplog-row")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("alice")
    expect(rows.first).to_contain_text("Revoked token 'alice-cli'")  # the details, from the code oplog.token.revoked
    expect(page.locator("#oplog-total")).to_contain_text("1–1 / 1")
    with page.expect_download() as download:
        page.click("#oplog-export")
    saved = tmp_path / "export.csv"
    download.value.save_as(saved)
    assert re.fullmatch(r"operation-log-\d{8}-\d{6}\.csv", download.value.suggested_filename)
    lines = saved.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "id,at,actor,actor_role,action,target,result,details"
    assert len(lines) == 2 and ",alice,user,token:revoke,alice/" in lines[1], lines
    # A range that ends before today finds nothing; from after to is refused under the field.
    page.fill("#oplog-to", "2020-01-01")
    page.click("#oplog-apply")
    expect(page.locator("#oplog-empty")).to_be_visible()
    page.fill("#oplog-from", "2020-01-02")
    page.click("#oplog-apply")
    expect(page.locator("#oplog-from-error")).to_contain_text("after the end day")
    page.click("#oplog-clear")
    expect(rows.first).to_be_visible()
    page.wait_for_url(re.compile(r".*/admin/operation-logs$"))

    # --- 简体中文 ---------------------------------------------------------------------------------------------------
    page.click("#lang-switch")
    page.get_by_role("option", name="简体中文").click()
    expect(page.locator("#page-title")).to_have_text("操作日志")
    expect(page.locator("#oplog-export")).to_contain_text("导出 CSV")
    expect(page.locator("#nav-projects")).to_have_attribute("title", "项目")
    page.click("#nav-projects")
    expect(page.locator("#page-title")).to_have_text("项目")
    expect(page.locator("#create-project")).to_contain_text("创建项目")
    page.locator(f".project-row[data-project='{PROJECT}'] .project-link").click()
    expect(page.locator(".member-row[data-username='alice'] .member-role")).to_contain_text("只读成员")
    expect(page.locator("#project-expiry-badge")).to_contain_text("剩余")
    page.click("#nav-tokens")
    expect(page.locator("#page-title")).to_have_text("API 令牌")
    page.click("#lang-switch")
    page.get_by_role("option", name="English").click()
    expect(page.locator("#page-title")).to_have_text("API tokens")
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]

    # --- a 390 px phone: the admin's top bar (six sections) still fits; tokens are in the user menu -----------
    phone_context = browser.new_context(viewport={"width": 390, "height": 844}, locale="en-US")
    phone_context.set_default_timeout(20_000)
    phone = phone_context.new_page()
    try:
        sign_in(phone, url, "admin", ADMIN_PASSWORD, "/projects")
        for selector in ("#nav-jobs", "#nav-projects", "#nav-admin", "#nav-oplog", "#lang-switch", "#user-menu"):
            box = phone.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (selector, box)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        phone.click("#user-menu")
        phone.click("#menu-tokens")
        phone.wait_for_url(re.compile(r".*/tokens/?$"))
        expect(phone.locator(".token-row")).to_have_count(0)  # the admin's own tokens: none
        expect(phone.locator("#tokens-empty")).to_be_visible()
    finally:
        phone_context.close()
