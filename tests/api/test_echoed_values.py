"""A refused value is echoed so that the caller recognises it, not given back in full: a 4,000-digit priority, a
300-character content type or path appear cut to 64 characters (ending with …) in ``args`` and in the message."""

from __future__ import annotations

import re

import pytest

from crater_app.domain.errors import MAX_ECHO_CHARS, InvalidInput, echo
from tests.api.conftest import assert_error

LONGEST_RUN = re.compile(r"(7{65,}|q{65,}|z{65,}|n{65,})")


def _no_long_echo(error: dict) -> None:
    text = error["message"] + repr(error["args"]) + str(error["field"])
    assert not LONGEST_RUN.search(text), text[:300]


@pytest.mark.parametrize("body", [
    b'{"name": "x", "command": ["true"], "priority": ' + b"7" * 4000 + b"}",
    b'{"name": "x", "command": ["true"], "max_runtime": ' + b"7" * 4000 + b"}",
    b'{"name": "x", "command": ["true"], "env": {"' + b"q" * 300 + b'": "1"}}',
    b'{"name": "x", "command": ["true"], "' + b"q" * 300 + b'": 1}',
])
def test_long_refused_values_are_cut_in_args_and_message(api, body):
    r = api.client.post("/api/v1/jobs", content=body, headers={**api.auth("alice"), "Content-Type": "application/json"})
    assert r.status_code == 422 and len(r.content) < 2000, r.text[:300]
    _no_long_echo(assert_error(r, 422, "invalid"))


def test_headers_and_paths_are_cut_too(api):
    for headers, path, status in (({"Content-Type": "application/" + "z" * 300}, "/api/v1/jobs", 415),
                                  ({"Content-Type": "application/json; charset=" + "z" * 300}, "/api/v1/jobs", 415),
                                  ({}, "/api/v1/" + "n" * 300, 404)):
        r = api.client.post(path, content=b"{}", headers={**api.auth("alice"), **headers})
        _no_long_echo(assert_error(r, status))


def test_the_priority_is_echoed_with_its_first_digits():
    error = InvalidInput("job.priority_range", "priority", min=-1000, max=1000, value=int("7" * 4000))
    assert error.params["value"] == "7" * (MAX_ECHO_CHARS - 1) + "…" and error.params["min"] == -1000
    assert ("7" * 63 + "…") in error.message and ("7" * 63 + "…") in error.message_in("zh-CN")
    assert echo(10**63) == 10**63 and echo("x" * 64) == "x" * 64 and echo(None) is None
