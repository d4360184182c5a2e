"""services.oplog.list_logs / export_csv: filters, paging, newest first, CSV (formula-safe), admin only."""

from __future__ import annotations

import csv
import io
from datetime import timedelta

import pytest

from crater_app.db.types import utcnow
from crater_app.domain.errors import Forbidden, InvalidInput
from crater_app.services import oplog, projects

pytestmark = pytest.mark.both_databases  # LIKE filters (case, escapes) and time ranges differ between the dialects


def test_filters_paging_and_order(world):
    ctx, admin = world.ctx, world.admin
    t0 = utcnow()
    for name in ("alpha", "beta", "gamma"):
        projects.create_project(ctx, admin, name)
    page = oplog.list_logs(ctx, admin, action="project:create", since=t0.isoformat())
    assert [r.target for r in page.items] == ["gamma", "beta", "alpha"] and page.total == 3
    assert oplog.list_logs(ctx, admin, action="project:create", target="amm").items[0].target == "gamma"
    assert oplog.list_logs(ctx, admin, target="%").total == 0  # LIKE wildcards are literal
    assert oplog.list_logs(ctx, admin, actor="alice", action="auth:login").total == 1
    two = oplog.list_logs(ctx, admin, action="project:create", since=t0.isoformat(), page=2, page_size=2)
    assert [r.target for r in two.items] == ["alpha"] and two.total == 3
    future = (utcnow() + timedelta(hours=1)).isoformat()
    assert oplog.list_logs(ctx, admin, since=future).total == 0
    assert oplog.list_logs(ctx, admin, until=t0.isoformat(), action="project:create").total == 1  # 'default'


@pytest.mark.parametrize("kwargs, field", [
    ({"since": "yesterday"}, "from"), ({"until": "2026-01-01T00:00:00"}, "to"),
    ({"since": "2026-02-01T00:00:00Z", "until": "2026-01-01T00:00:00Z"}, "from"),
    ({"actor": "a" * 65}, "actor"), ({"target": "t" * 256}, "target"), ({"action": "x" * 65}, "action"),
    ({"page": 0}, "page"), ({"page_size": 501}, "page_size"), ({"page_size": 0}, "page_size"),
])
def test_bad_filters(world, kwargs, field):
    with pytest.raises(InvalidInput) as err:
        oplog.list_logs(world.ctx, world.admin, **kwargs)
    assert err.value.field == field


@pytest.mark.parametrize(("kwargs", "code", "words"), [
    ({"actor": "\x00"}, "oplog.filter_text", "without control characters"),
    ({"target": "a\nb"}, "oplog.filter_text", "without control characters"),
    ({"action": "\ud800"}, "oplog.filter_text", "without control characters"),
    ({"actor": "a" * 65}, "oplog.filter_too_long", "65 characters; the limit is 64"),
])
def test_filter_refusals_say_what_is_wrong(world, kwargs, code, words):
    """A NUL was answered 'limited to 64 characters' although it is one character long."""
    with pytest.raises(InvalidInput) as err:
        oplog.list_logs(world.ctx, world.admin, **kwargs)
    assert err.value.code == code and words in err.value.message


def test_admin_only(world):
    for who in (world.alice, world.guest):
        with pytest.raises(Forbidden):
            oplog.list_logs(world.ctx, who)
        with pytest.raises(Forbidden):
            oplog.export_csv(world.ctx, who)


def test_csv_export(world):
    ctx, admin = world.ctx, world.admin
    projects.create_project(ctx, admin, "csv", description="x")
    projects.create_project(ctx, admin, "evil", display_name="=HYPERLINK(1)")
    text, truncated = oplog.export_csv(ctx, admin, action="project:create")
    assert not truncated
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == list(oplog.CSV_COLUMNS)
    assert [r[5] for r in rows[1:]] == ["evil", "csv", "default"]
    assert rows[1][1].endswith("+00:00")
    assert oplog._cell("=1+1") == "'=1+1" and oplog._cell("-x") == "'-x" and oplog._cell("ok") == "ok"
