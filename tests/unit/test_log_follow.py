"""What a later tail of a growing log adds (domain.log_follow.appended) and how a tail is cut (tail)."""

from __future__ import annotations

import pytest

from crater_app.domain.log_follow import ANCHOR_CHARS, appended, tail

LINES = "".join(f"line {i}\n" for i in range(100))


@pytest.mark.parametrize(("previous", "current", "new"), [
    ("", "", ""),
    ("", "a\n", "a\n"),  # the first output
    ("a\n", "a\n", ""),  # nothing written since
    ("a\n", "a\nb\n", "b\n"),  # the log still fits the window: it grows at its end
    (LINES[:400], LINES[100:500], LINES[400:500]),  # the window slid: the overlap found from the new start
    (LINES[:400], LINES[390:], LINES[400:]),  # the overlap shorter than the anchor
    (LINES[:200], LINES[300:], LINES[300:]),  # more written between two reads than the window holds: all is new
    ("old run\n", "new run\n", "new run\n"),  # the log was replaced (a new run)
    ("x\n" * 50, "x\n" * 50, ""),  # a log repeating itself: the longest overlap, nothing sent twice
])
def test_appended(previous, current, new):
    assert appended(previous, current) == new


def test_an_anchor_found_where_the_rest_does_not_match_is_passed_over():
    start = "s" * ANCHOR_CHARS
    previous = start + "-first-" + start + "-end\n"
    current = start + "-end\nmore\n"
    assert appended(previous, current) == "more\n"


@pytest.mark.parametrize(("text", "tail_bytes", "cut"), [
    ("ab\ncd\n", 100, "ab\ncd\n"),  # shorter than the tail: all of it
    ("ab\ncd\n", 3, "cd\n"),  # the tail starts at a line boundary: kept whole
    ("ab\ncd\n", 4, "cd\n"),  # a partial first line is dropped
    ("abcdef", 3, "def"),  # ... unless nothing would be left
    ("\u4e2d\u6587", 4, "\u6587"),  # a character cut in two is dropped
])
def test_tail(text, tail_bytes, cut):
    assert tail(text, tail_bytes) == cut
