"""Client input shapes: ISO 8601 instants (``domain.times.parse_utc``) and pages (the YAML body loader has its own
tests: test_yaml_loader.py)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from crater_app.domain.errors import InvalidInput
from crater_app.domain.times import parse_utc


@pytest.mark.parametrize("raw", ["9999-12-31T23:59:59-12:00", "0001-01-01T00:00:00+14:00"])
def test_instants_past_the_calendar_in_utc_are_refused_with_the_field(raw):
    with pytest.raises(InvalidInput) as err:
        parse_utc(raw, "expires_at")
    assert err.value.field == "expires_at" and "0001..9999" in str(err.value)


def test_instants_with_an_offset_become_utc():
    assert parse_utc("2026-12-31T23:00:00-02:00", "to") == datetime(2027, 1, 1, 1, 0, tzinfo=timezone.utc)
    assert parse_utc("9999-12-31T23:59:59Z", "to").year == 9999


@pytest.mark.parametrize("page, page_size, field", [
    (0, 20, "page"), (1_000_001, 20, "page"), (True, 20, "page"), ("1", 20, "page"),
    (1, 0, "page_size"), (1, 201, "page_size"), (1, False, "page_size"),
])
def test_page_and_page_size_out_of_range_name_the_field(page, page_size, field):
    from crater_app.domain.paging import check_page

    with pytest.raises(InvalidInput) as err:
        check_page(page, page_size, 200)
    assert err.value.field == field and "between 1 and" in str(err.value)
    check_page(1, 200, 200)
    check_page(1_000_000, 1, 200)
