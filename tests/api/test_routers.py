"""The API's structure: one router per resource module, every route from one of them, no method and path twice,
the create POSTs idempotent, the JSON fallback route last."""

from __future__ import annotations

import importlib
import pkgutil
from collections import Counter

from fastapi.routing import APIRoute

from crater_app.api import routes
from crater_app.api.app import API_PREFIX, ROUTERS, build_api
from crater_app.api.fallback import ApiFallback
from crater_app.api.idempotency import IdempotentRoute


def _modules():
    return [importlib.import_module(f"{routes.__name__}.{m.name}") for m in pkgutil.iter_modules(routes.__path__)]


def test_every_resource_module_has_one_router_and_the_app_uses_each_once():
    routers = [module.router for module in _modules()]
    assert len(routers) == len(ROUTERS) and {id(r) for r in routers} == {id(r) for r in ROUTERS}
    for module in _modules():
        assert module.router.routes, module.__name__
        assert all(r.path.startswith(module.router.prefix) for r in module.router.routes), module.__name__


def test_every_route_comes_from_a_router_and_no_route_is_defined_twice():
    app = build_api(lambda: None)
    api_routes = [r for r in app.router.routes if isinstance(r, APIRoute)]
    from_routers = [r for router in ROUTERS for r in router.routes]
    assert {id(r) for r in api_routes} == {id(r) for r in from_routers}
    pairs = Counter((method, r.path) for r in api_routes for method in r.methods)
    assert [pair for pair, n in pairs.items() if n > 1] == []
    assert isinstance(app.router.routes[-1], ApiFallback)
    assert {r.path for r in api_routes if not r.path.startswith(API_PREFIX)} == {"/healthz", "/metrics"}


def test_the_creating_posts_honour_idempotency_keys():
    app = build_api(lambda: None)
    idempotent = {r.path for r in app.router.routes if isinstance(r, IdempotentRoute) and "POST" in r.methods}
    plain_posts = {r.path for r in app.router.routes if isinstance(r, APIRoute) and "POST" in r.methods} - idempotent
    assert {f"{API_PREFIX}/{p}" for p in ("jobs", "projects", "tokens", "users", "approvals", "billing/grants")} <= idempotent
    # signing in and up and opening a console session have no caller to own a key; marking notifications read is
    # idempotent by itself, and a password change creates nothing to retry into a duplicate
    assert plain_posts == {f"{API_PREFIX}/{p}" for p in ("auth/token", "auth/signup", "auth/session",
                                                          "notifications/read", "me/password")}
