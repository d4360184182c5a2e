"""The API as Reflex serves it (``api_transformer=console_mount(build_api())``): one CORS layer around everything,
so an answer to a request with an allowed ``Origin`` has one ``Vary`` header listing each field once (it had
``Vary: Origin, Origin`` when the FastAPI app itself was the transformer: Reflex added CORS to it and to its own
top-level app)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from starlette.applications import Starlette
from starlette.middleware.cors import CORSMiddleware
from starlette.responses import HTMLResponse

from crater_app.api.app import build_api, console_mount

SITE = "http://console.example"


def _as_reflex_serves(transformer, console) -> Starlette:
    """What reflex/app.py ``App.__call__`` builds around ``api_transformer`` (a function: it is called with the
    console; a Starlette app would get CORS itself and the console mounted), with ``App._add_cors``'s arguments."""

    def add_cors(app: Starlette) -> None:
        app.add_middleware(CORSMiddleware, allow_credentials=True, allow_methods=["*"], allow_headers=["*"],
                           allow_origins=[SITE])

    if isinstance(transformer, Starlette):
        add_cors(transformer)
        transformer.mount("", console)
        inner = transformer
    else:
        inner = transformer(console)
    top = Starlette()
    top.mount("", inner)
    add_cors(top)
    return top


async def _console(scope, receive, send):
    await HTMLResponse("<html>console</html>")(scope, receive, send)


def test_one_vary_header_lists_each_field_once(world):
    app = _as_reflex_serves(console_mount(build_api(lambda: world.ctx)), _console)
    auth = {"Authorization": f"Bearer {world.tokens['alice']}", "Origin": SITE}
    with TestClient(app) as client:
        for r in (client.get("/api/v1/jobs", headers=auth), client.get("/api/v1/jobs/424242", headers=auth),
                  client.get("/api/v1/me", headers={"Origin": SITE})):
            assert r.headers.get_list("vary") == ["Accept-Language, Origin"], r.headers
            assert r.headers["access-control-allow-origin"] == SITE
        page = client.get("/jobs", headers={"Origin": SITE})  # the console, below the API's routes
        assert page.text == "<html>console</html>" and page.headers.get_list("vary") == ["Origin"]
        preflight = client.options("/api/v1/jobs", headers={"Origin": SITE, "Access-Control-Request-Method": "POST"})
        assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == SITE
