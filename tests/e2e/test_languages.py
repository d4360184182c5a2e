"""简体中文 in a real browser: a Chinese page renders glyphs, not boxes, and the new-job form shows a service error in
Chinese beside the field it names, which goes away as soon as that field is changed.

Glyphs: two different CJK characters are drawn in separate elements in the console's own font stack; tofu boxes
(a missing glyph) look the same whatever the character, so the two screenshots must differ from each other and
from the box of a character no font has (U+10FFFD, a noncharacter). Needs a CJK font on the machine
(``fonts-wqy-microhei`` or ``fonts-noto-cjk``: docs/languages.md; ``.ci/run`` installs one).

Runs against ``reflex run --env prod`` with the Redis state manager (see ``conftest.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.e2e.conftest import ADMIN_PASSWORD, Console, sign_in

pytestmark = pytest.mark.e2e

#: draws ``text`` in a box of its own inside the page's Radix theme (the console's font stack), returns its id
_DRAW = """([id, text]) => {
  const box = document.createElement('span');
  box.id = id;
  box.textContent = text;
  box.style.cssText = 'font-size:48px;line-height:1;padding:4px;display:inline-block;background:#fff;color:#000';
  (document.querySelector('.radix-themes') || document.body).appendChild(box);
  return getComputedStyle(box).fontFamily;
}"""


def _sign_in_in_chinese(page: Page, console: Console, path: str) -> None:
    sign_in(page, console.url, "admin", ADMIN_PASSWORD, path)
    page.click("#lang-switch")
    page.get_by_role("option", name="简体中文").click()
    expect(page.locator("#page-title")).to_have_text("新建作业")


def test_chinese_renders_glyphs_not_boxes(page: Page, console: Console, tmp_path: Path) -> None:
    _sign_in_in_chinese(page, console, "/jobs/new")
    family = page.evaluate(_DRAW, ["glyph-a", "作"])
    page.evaluate(_DRAW, ["glyph-b", "业"])
    page.evaluate(_DRAW, ["glyph-tofu", "\U0010fffd"])
    # The console's stack names the common CJK fonts before the generic families (assets/crater.css).
    for name in ("PingFang SC", "Microsoft YaHei", "Noto Sans CJK SC", "WenQuanYi Micro Hei"):
        assert name in family, family
    shots = {name: page.locator(f"#glyph-{name}").screenshot() for name in ("a", "b", "tofu")}
    assert shots["a"] != shots["b"], "two different characters drew the same picture: boxes, not glyphs"
    assert shots["a"] != shots["tofu"] and shots["b"] != shots["tofu"], "a character drew the missing-glyph box"
    # A whole Chinese page, for a person to look at (kept with the test's files).
    page.screenshot(path=str(tmp_path / "new-job-zh.png"), full_page=True)
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]


def test_a_field_error_sits_beside_its_field_in_chinese_and_goes_when_the_field_changes(
        page: Page, console: Console, tmp_path: Path) -> None:
    _sign_in_in_chinese(page, console, "/jobs/new")
    page.fill("#job-name", "zh-field-error")
    page.fill("#job-command", "true")
    page.fill("#job-cpu", "lots")
    page.click("#submit-job")
    error = page.locator("#job-cpu-error")
    expect(error).to_contain_text("不是 Kubernetes 数量")
    expect(error).to_contain_text("resources.cpu")
    expect(page.locator("#job-cpu")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#submit-error")).to_have_count(0)  # not a banner below the form
    expect(page.locator(".field-error")).to_have_count(1)
    # beside its field: the error is drawn right below the CPU input, in the same column
    field_box, error_box = page.locator("#job-cpu").bounding_box(), error.bounding_box()
    assert field_box and error_box and 0 <= error_box["y"] - (field_box["y"] + field_box["height"]) < 40
    assert abs(error_box["x"] - field_box["x"]) < 40
    page.screenshot(path=str(tmp_path / "field-error-zh.png"), full_page=True)
    # typing into another field leaves it; fixing the CPU field removes it at once, before any submit
    page.fill("#job-memory", "1Gi")
    expect(error).to_be_visible()
    page.fill("#job-cpu", "1")
    expect(error).to_have_count(0)
    expect(page.locator("#job-cpu")).to_have_attribute("aria-invalid", "false")
    page.click("#submit-job")
    page.wait_for_url(re.compile(r".*/jobs/\d+/?$"))
    assert not page.page_errors, page.page_errors  # type: ignore[attr-defined]
