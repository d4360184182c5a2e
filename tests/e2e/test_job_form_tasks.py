"""The new-job form in a real browser for a job with tasks: a PyTorch DDP job of one master and one worker, one GPU
each, submitted on the local backend (4 virtual A100s) and seen on its job page; on the way, the live GPU total
and the "Edit as YAML" view of the same spec."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ADMIN_PASSWORD, Console, sign_in
from tests.e2e.test_governance_console import _choose

pytestmark = pytest.mark.e2e

JOB_NAME = "ddp-two-replicas"
# every replica prints what Crater set for the rendezvous (the shell-like line is split, never run by a shell)
COMMAND = ("python3 -c \"import os;print('rank', os.environ['RANK'], 'of', os.environ['WORLD_SIZE'], "
           "os.environ['MASTER_ADDR'], os.environ['MASTER_PORT'])\"")


def test_submit_a_pytorch_job_of_a_master_and_a_worker(page: Page, console: Console) -> None:
    sign_in(page, console.url, "admin", ADMIN_PASSWORD, "/jobs/new")
    expect(page.locator("#job-name")).to_be_visible()
    _choose(page, "#job-kind", "PyTorch DDP")
    expect(page.locator("#job-kind-about")).to_contain_text("a master and workers")
    expect(page.locator("#job-rendezvous")).to_contain_text("MASTER_ADDR")
    expect(page.locator("#job-replicas")).to_have_value("1")  # one worker besides the master
    expect(page.locator("#gpu-count")).to_have_text("1")
    expect(page.locator("#job-gpu-total")).to_have_text("Replicas: 2 · GPUs per replica: 1 · total GPUs: 2")
    page.fill("#job-replicas", "3")
    expect(page.locator("#job-gpu-total")).to_have_text("Replicas: 4 · GPUs per replica: 1 · total GPUs: 4")
    page.fill("#job-replicas", "1")
    expect(page.locator("#job-gpu-total")).to_have_text("Replicas: 2 · GPUs per replica: 1 · total GPUs: 2")
    page.fill("#job-name", JOB_NAME)
    page.click("#mode-shell")
    page.fill("#job-command", COMMAND)

    # The YAML view shows the spec the form would submit; back to the form, which kept what was typed.
    page.click("#edit-yaml")
    editor = page.locator("#job-yaml")
    expect(editor).to_be_visible()
    text = editor.input_value()
    assert "kind: pytorch" in text and "name: master" in text and "name: worker" in text, text
    assert f"name: {JOB_NAME}" in text, text
    page.click("#yaml-back")
    expect(page.locator("#job-name")).to_have_value(JOB_NAME)

    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/?$"))
    expect(page.locator("#job-name")).to_have_text(JOB_NAME)
    expect(page.locator("#job-phase .phase-badge")).to_have_attribute("data-phase", "Succeeded", timeout=60_000)
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]
