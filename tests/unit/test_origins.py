"""The pure pieces of cookie sign-in: serialised origins, the public URL list, the Origin rule, reading the session
cookie out of a Cookie header, and the request data identity is resolved from."""

from __future__ import annotations

import pytest

from crater_app.auth.cookies import cookie_value, is_cookie_name
from crater_app.auth.origins import origin_allowed, origin_of, parse_public_urls, request_origin
from crater_app.services.identity import Credentials


@pytest.mark.parametrize(("url", "origin"), [
    ("https://crater.example.org", "https://crater.example.org"),
    ("HTTPS://Crater.Example.org:443/jobs?x=1", "https://crater.example.org"),
    ("http://10.0.0.5:3000/", "http://10.0.0.5:3000"),
    ("http://localhost:80", "http://localhost"),
    ("http://[::1]:3000", "http://[::1]:3000"),
    ("null", None),
    ("", None),
    ("ftp://files.example.org", None),
    ("crater.example.org", None),
    ("http://:3000", None),
    ("http://host:99999", None),
    (None, None),
])
def test_origin_of(url, origin):
    assert origin_of(url) == origin


def test_public_urls():
    assert parse_public_urls("") == ()
    assert parse_public_urls("https://a.example, http://10.0.0.5:3000 https://A.example/") == (
        "https://a.example", "http://10.0.0.5:3000")
    with pytest.raises(ValueError, match="'a.example'"):
        parse_public_urls("https://ok.example,a.example")


@pytest.mark.parametrize(("origin", "referer", "seen"), [
    ("https://a.example", "https://b.example/x", "https://a.example"),
    ("", "https://b.example/jobs", "https://b.example"),
    (None, None, None),
    ("null", "https://b.example/jobs", None),  # an opaque origin says "from nowhere", whatever the Referer
])
def test_request_origin(origin, referer, seen):
    assert request_origin(origin, referer) == seen


@pytest.mark.parametrize(("origin", "host", "public", "allowed"), [
    ("http://localhost:3000", "localhost:3000", (), True),
    ("https://crater.example.org", "crater.example.org", (), True),  # TLS ended by a proxy: hosts match
    ("https://crater.example.org", "crater.example.org:443", (), True),
    ("http://localhost:3000", "localhost:3001", (), False),
    ("https://evil.example", "crater.example.org", (), False),
    ("http://localhost:3000", "", (), False),
    (None, "localhost:3000", (), False),
    ("https://crater.example.org", "10.0.0.5:3000", ("https://crater.example.org",), True),
    ("http://10.0.0.5:3000", "10.0.0.5:3000", ("https://crater.example.org",), False),  # not listed
    ("http://crater.example.org", "crater.example.org", ("https://crater.example.org",), False),  # scheme
])
def test_origin_allowed(origin, host, public, allowed):
    assert origin_allowed(origin, host, public) is allowed


@pytest.mark.parametrize(("header", "value"), [
    ("crater_session=crs_abc", "crs_abc"),
    ("theme=dark; crater_session=crs_abc; other=1", "crs_abc"),
    ('crater_session="crs_abc"', "crs_abc"),
    ("crater_session=crs_first; crater_session=crs_second", "crs_first"),  # RFC 6265 §5.4: the longest path first
    ("my_crater_session=crs_abc", None),
    ("crater_session=", None),
    ("crater_session", None),
    ("crater_session=" + "x" * 300, None),
    ("", None),
    (None, None),
])
def test_cookie_value(header, value):
    assert cookie_value(header, "crater_session") == value


def test_cookie_names():
    assert is_cookie_name("crater_session") and is_cookie_name("__Host-crater")
    for bad in ("", "two words", "semi;colon", "a=b", "x" * 65, None, 5):
        assert not is_cookie_name(bad)


@pytest.mark.parametrize(("header", "token"), [
    ("Bearer crt_abc", "crt_abc"), ("bearer   crt_abc ", "crt_abc"), ("Bearer ", ""), ("Basic YWxpY2U6eA==", None),
    ("", None), ("crt_abc", None),
])
def test_bearer(header, token):
    assert Credentials(authorization=header).bearer() == token
