"""Quotas in a real browser: the admin sets a capability of 1 GPU on a project through the "Edit quota" dialog (a
bad amount is refused under its cell and nothing typed is lost) and a member's share through the "Share" dialog;
alice submits two 1-GPU jobs in that project from the new-job form (the first an interactive, preemptible
session); the second is Held and "Why is this job waiting?" names the project's quota; the project page shows the
usage at its capability, read-only for her; once she cancels the first job the second is admitted.

Runs against ``reflex run --env prod`` with the Redis state manager (see ``conftest.py``).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ADMIN_PASSWORD, Console, sign_in
from tests.e2e.test_governance_console import ALICE_PASSWORD, _api, _choose, _ensure_alice, _sign_out

pytestmark = pytest.mark.e2e

PROJECT = "quota-lab"
SCREENSHOTS = os.environ.get("CRATER_SCREENSHOTS") == "1"
ROOT = Path(__file__).resolve().parents[2]
GPU = "nvidia.com/gpu"


def _cell(column: str) -> str:
    """The input of a dialog cell (the class is on Radix's text-field root or on the input itself)."""
    return f"input.cell-{column}, .cell-{column} input"


def _make_project(console: Console) -> None:
    """``quota-lab`` with alice as a member (created through the API: the projects page has its own test)."""
    status, token = _api(console, "POST", "/api/v1/auth/token", {"username": "admin", "password": ADMIN_PASSWORD})
    assert status == 200, token
    bearer = token["access_token"]  # type: ignore[index]
    status, body = _api(console, "POST", "/api/v1/projects", {"name": PROJECT, "display_name": "Quota Lab"}, bearer)
    assert status in (201, 409), body
    status, body = _api(console, "PUT", f"/api/v1/projects/{PROJECT}/members/alice", {"role": "member"}, bearer)
    assert status == 200, body


def _submit(page: Page, url: str, name: str, interactive: bool = False) -> str:
    """Submit a 1-GPU job to the project from the form; the new job's id."""
    page.goto(url + "/jobs/new")
    expect(page.locator("#job-name")).to_be_visible()
    _choose(page, "#job-project", PROJECT)
    expect(page.locator("#job-project")).to_have_text(PROJECT)
    if interactive:
        _choose(page, "#job-kind", "Interactive session")
        page.locator("#job-preemptible").click()
        expect(page.locator("#job-preemptible [role=checkbox]")).to_have_attribute("data-state", "checked")
    page.fill("#job-name", name)
    page.fill("#job-command", "sleep\n600")
    expect(page.locator("#gpu-count")).to_have_text("1")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/?$"))
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def test_quota_holds_the_second_job_until_the_first_ends(page: Page, console: Console) -> None:
    url = console.url
    _ensure_alice(console)
    _make_project(console)

    # --- the admin sets the quota: a bad amount is refused under its cell, the rows stay as typed ----------------
    sign_in(page, url, "admin", ADMIN_PASSWORD, f"/projects/{PROJECT}")
    expect(page.locator("#quota-empty")).to_be_visible()
    page.click("#edit-quota")
    dialog = page.locator("#quota-dialog")
    rows = dialog.locator(".quota-edit-row")
    expect(rows).to_have_count(1)
    expect(rows.nth(0).locator(_cell("resource"))).to_have_value(GPU)
    rows.nth(0).locator(_cell("guarantee")).fill("2")
    rows.nth(0).locator(_cell("capability")).fill("1")
    page.click("#add-quota-row")
    expect(rows).to_have_count(2)
    rows.nth(1).locator(_cell("resource")).fill("cpu")
    rows.nth(1).locator(_cell("capability")).fill("lots")
    page.click("#save-quota")  # quantities are checked first: "lots" is refused under its cell
    expect(rows.nth(1).locator(".cell-error[data-column='capability']")).to_contain_text("not a Kubernetes quantity")
    expect(rows.nth(1).locator(_cell("capability"))).to_have_value("lots")
    expect(rows.nth(0).locator(_cell("guarantee"))).to_have_value("2")
    rows.nth(1).locator(".remove-quota-row").click()
    expect(rows).to_have_count(1)
    page.click("#save-quota")  # then guarantee <= capability
    expect(rows.nth(0).locator(".cell-error[data-column='guarantee']")).to_contain_text("must not exceed")
    expect(rows.nth(0).locator(_cell("capability"))).to_have_value("1")
    expect(page.locator("#quota-empty")).to_be_visible()  # nothing saved
    if SCREENSHOTS:
        page.screenshot(path=str(ROOT / "docs" / "screenshot-quota-edit.png"))
    rows.nth(0).locator(_cell("guarantee")).fill("")
    page.click("#save-quota")
    expect(dialog).to_have_count(0)
    gpu_row = page.locator(f".quota-row[data-key='{GPU}']")
    expect(gpu_row.locator(".quota-capability")).to_have_text("1")
    expect(gpu_row).to_have_attribute("data-level", "ok")
    expect(page.locator(".quota-row")).to_have_count(1)

    # --- and alice's share, through the members table ---------------------------------------------------------
    alice = page.locator(".member-row[data-username='alice']")
    expect(alice.locator(".share-text")).to_have_text("No limit")
    alice.locator(".edit-share").click()
    share_rows = page.locator("#share-dialog .share-edit-row")
    share_rows.nth(0).locator(_cell("amount")).fill("2")
    page.click("#save-share")  # above the project's capability of 1
    expect(share_rows.nth(0).locator(".cell-error[data-column='amount']")).to_contain_text("capability")
    share_rows.nth(0).locator(_cell("amount")).fill("1")
    page.click("#save-share")
    expect(page.locator("#share-dialog")).to_have_count(0)
    expect(alice.locator(".share-text")).to_have_text(f"1 × {GPU}")
    _sign_out(page)

    # --- alice submits two 1-GPU jobs: the second is held by the quota ---------------------------------------------
    sign_in(page, url, "alice", ALICE_PASSWORD, "/jobs")
    first = _submit(page, url, "quota-first", interactive=True)
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute("data-phase", re.compile("Queued|Running"))
    expect(page.locator("#job-kind")).to_contain_text("Interactive session")
    expect(page.locator("#job-preemptible [data-preemptible]")).to_have_attribute("data-preemptible", "yes")
    second = _submit(page, url, "quota-second")
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute("data-phase", "Held", timeout=30_000)
    expect(page.locator("#job-kind")).to_contain_text("Batch job")
    expect(page.locator("#job-preemptible [data-preemptible]")).to_have_attribute("data-preemptible", "no")
    waiting = page.locator("#job-waiting")
    expect(waiting).to_contain_text("Why is this job waiting?")
    expect(page.locator("#job-wait-reason")).to_contain_text(f"quota of project {PROJECT}")

    # --- the project page: usage at the capability, one admitted and one held job, read-only for her ------------
    page.goto(url + f"/projects/{PROJECT}")
    gpu_row = page.locator(f".quota-row[data-key='{GPU}']")
    expect(gpu_row).to_have_attribute("data-level", "full")
    expect(gpu_row.locator(".quota-used")).to_have_text("1")
    expect(gpu_row.locator(".quota-bar")).to_have_attribute("aria-valuenow", "100")
    expect(page.locator("#quota-admitted")).to_have_text("1")
    expect(page.locator("#quota-held")).to_have_text("1")
    expect(page.locator("#edit-quota")).to_have_count(0)
    expect(page.locator("#members-hidden")).to_be_visible()
    if SCREENSHOTS:
        page.screenshot(path=str(ROOT / "docs" / "screenshot-quota.png"), full_page=True)

    # --- 简体中文 on the card ---------------------------------------------------------------------------------------
    page.click("#lang-switch")
    page.get_by_role("option", name="简体中文").click()
    expect(page.locator("#quota-card")).to_contain_text("配额")
    expect(page.locator("#quota-card")).to_contain_text("上限")
    page.click("#lang-switch")
    page.get_by_role("option", name="English").click()
    expect(page.locator("#quota-card")).to_contain_text("Capability")

    # --- cancelling the first admits the second -------------------------------------------------------------------
    page.goto(url + f"/jobs/{first}")
    page.click("#cancel-job")
    page.click("#confirm-cancel")
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute("data-phase", "Cancelled", timeout=30_000)
    page.goto(url + f"/jobs/{second}")
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute(
        "data-phase", re.compile("Queued|Running"), timeout=30_000)
    page.goto(url + f"/jobs/{second}")
    page.click("#cancel-job")
    page.click("#confirm-cancel")
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute("data-phase", "Cancelled", timeout=30_000)
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]
