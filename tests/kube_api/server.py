"""An in-process HTTP server that answers as the Kubernetes API server does, for the real ``kubernetes`` client.

:class:`KubeApiServer` serves a :class:`~tests.kube_api.store.Store` on ``127.0.0.1`` (a random port, one thread
per connection): discovery, create/get/list/replace/patch/delete of every served kind, the ``status``
subresource, ``pods/log`` (with ``follow``), ``deletecollection``, and watches (``?watch=1&resourceVersion=N``
with ``ADDED``/``MODIFIED``/``DELETED``, ``BOOKMARK`` every ``bookmark_interval`` seconds when
``allowWatchBookmarks``, ``timeoutSeconds``, and an ``ERROR`` event with a ``410`` ``Status`` when ``N`` is older
than the history). Errors are ``Status`` objects with the real codes (400, 404, 409, 410, 422, 500, 503); writes of built-in kinds
are also checked against their OpenAPI schemas (``tests/kube_schemas.py``), custom ones against their CRD's.

Test hooks: :meth:`KubeApiServer.restart` (drops every connection and watch; optionally loses the history so the
next watch gets 410, and refuses connections for ``outage_s``), :meth:`KubeApiServer.fail_next` (the next N
matching requests get 500/503/429), and the store's ``set_status``/``update`` for a controller's writes.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable
from urllib.parse import parse_qs, urlsplit

from tests.kube_api import discovery, streams
from tests.kube_api.kinds import Kind
from tests.kube_api.store import ApiError, Store

_REASONS = {500: "InternalError", 503: "ServiceUnavailable", 429: "TooManyRequests", 504: "Timeout"}


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_HttpServer"

    def log_message(self, format, *args) -> None:  # noqa: A002 - the base class's name
        pass

    # -- plumbing ------------------------------------------------------------------------------------------------
    def setup(self) -> None:
        super().setup()
        self.server.owner._track(self.connection, True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.owner._track(self.connection, False)

    def _send_json(self, code: int, body: dict, headers: dict | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_text(self, text: str) -> None:
        data = text.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _start_stream(self, content_type: str) -> None:
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def _drop(self) -> None:
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        if not raw:
            return None
        try:
            return json.loads(raw)
        except ValueError:
            raise ApiError(400, "BadRequest", "the body of the request was in an unknown format") from None

    # -- dispatch ------------------------------------------------------------------------------------------------
    def do_GET(self) -> None:  # noqa: N802 - http.server's names
        self._serve("GET")

    def do_POST(self) -> None:  # noqa: N802
        self._serve("POST")

    def do_PUT(self) -> None:  # noqa: N802
        self._serve("PUT")

    def do_PATCH(self) -> None:  # noqa: N802
        self._serve("PATCH")

    def do_DELETE(self) -> None:  # noqa: N802
        self._serve("DELETE")

    def _serve(self, method: str) -> None:
        owner = self.server.owner
        if owner._refusing():
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            self._drop()
            return
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        owner.requests.append((method, url.path, query))
        try:
            body = self._body()
            if (injected := owner._injected(method, url.path)) is not None:
                raise ApiError(injected, _REASONS.get(injected, "InternalError"), "injected error")
            self._route(method, [p for p in url.path.split("/") if p], query, body)
        except ApiError as exc:
            self._send_json(exc.code, exc.status())
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, parts: list[str], query: dict, body) -> None:
        store, kinds = self.server.owner.store, list(self.server.owner.store.kinds.values())
        if parts == ["version"]:
            return self._send_json(200, discovery.version())
        if parts == ["api"]:
            return self._send_json(200, discovery.core_versions())
        if parts == ["apis"]:
            return self._send_json(200, discovery.groups(kinds))
        if parts[:1] == ["api"] and len(parts) >= 2:
            group, version, rest = "", parts[1], parts[2:]
        elif parts[:1] == ["apis"] and len(parts) >= 3:
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        if not rest:
            doc = discovery.resources(kinds, group, version)
            if doc is None:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            return self._send_json(200, doc)
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and (group, rest[2]) in store.kinds \
                and store.kinds[(group, rest[2])].namespaced:
            namespace, rest = rest[1], rest[2:]
        kind = store.kind(group, rest[0])
        if kind.version != version:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in kind.subresources or len(rest) > 3:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        ns = namespace or ""
        if name is None:
            return self._collection(method, kind, namespace, query, body)
        if method == "GET" and sub == "log":
            return streams.log(self, ns, name, query)
        if method == "GET":
            return self._send_json(200, store.get(kind.group, kind.plural, ns, name))
        check = self.server.owner.check_for(kind, query)
        if method == "PUT":
            return self._send_json(200, store.replace(kind.group, kind.plural, ns, name, body or {},
                                                      subresource=sub, check=check))
        if method == "PATCH":
            return self._send_json(200, store.patch(kind.group, kind.plural, ns, name, body,
                                                    self.headers.get("Content-Type", ""), subresource=sub,
                                                    check=check))
        if method == "DELETE":
            opts = body or {}
            grace = query.get("gracePeriodSeconds", opts.get("gracePeriodSeconds"))
            obj = store.delete(kind.group, kind.plural, ns, name,
                               propagation=query.get("propagationPolicy") or opts.get("propagationPolicy") or "",
                               grace_seconds=None if grace in (None, "") else int(grace),
                               preconditions=opts.get("preconditions"))
            return self._send_json(200, obj)
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported here")

    def _collection(self, method: str, kind: Kind, namespace: str | None, query: dict, body) -> None:
        store = self.server.owner.store
        if method == "POST":
            return self._send_json(201, store.create(kind.group, kind.plural, namespace or "", body or {},
                                                     check=self.server.owner.check_for(kind, query)))
        if method == "GET" and _truthy(query.get("watch")):
            return streams.watch(self, kind, namespace, query)
        if method in ("GET", "DELETE"):
            items, rv = store.list(kind.group, kind.plural, namespace, label_selector=query.get("labelSelector", ""),
                                   field_selector=query.get("fieldSelector", ""))
            if method == "DELETE":
                for obj in items:
                    meta = obj["metadata"]
                    try:
                        store.delete(kind.group, kind.plural, meta.get("namespace", ""), meta["name"],
                                     propagation=(body or {}).get("propagationPolicy", ""))
                    except ApiError:
                        pass
            return self._send_json(200, self._page(kind, items, rv, query))
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported here")

    def _page(self, kind: Kind, items: list[dict], rv: int, query: dict) -> dict:
        limit = int(query.get("limit") or 0)
        start = int(query.get("continue") or 0)
        meta: dict = {"resourceVersion": str(rv)}
        if limit and start + limit < len(items):
            meta["continue"] = str(start + limit)
            meta["remainingItemCount"] = len(items) - start - limit
            items = items[start:start + limit]
        elif start:
            items = items[start:]
        return {"kind": f"{kind.kind}List", "apiVersion": kind.api_version, "metadata": meta, "items": items}

class _HttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: "KubeApiServer"

    def handle_error(self, request, client_address) -> None:  # noqa: ANN001 - socketserver's signature
        if not isinstance(sys.exc_info()[1], (ConnectionError, OSError)):  # a client that went away is no error
            super().handle_error(request, client_address)


class KubeApiServer:
    """The mock API server on ``127.0.0.1:<random port>``. ``store`` (a new :class:`Store` by default);
    ``bookmark_interval`` seconds between bookmarks on a watch that allows them; ``max_watch_seconds`` caps a
    watch without ``timeoutSeconds`` (the real server's ``--min-request-timeout`` role). ``requests`` records
    ``(method, path, query)`` of every request served."""

    def __init__(self, store: Store | None = None, *, bookmark_interval: float = 1.0,
                 max_watch_seconds: float = 300.0) -> None:
        self.store = store or Store()
        self.bookmark_interval = bookmark_interval
        self.max_watch_seconds = max_watch_seconds
        self.requests: list[tuple[str, str, dict]] = []
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._failures: list[list] = []  # [remaining, code, match]
        self._refuse_until = 0.0
        self._http = _HttpServer(("127.0.0.1", 0), _Handler)
        self._http.owner = self
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``: the ``host`` of a client ``Configuration``."""
        return f"http://127.0.0.1:{self._http.server_address[1]}"

    def start(self) -> "KubeApiServer":
        """Serve in a daemon thread; returns self."""
        self._thread = threading.Thread(target=self._http.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="kube-api-mock", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close every connection."""
        self.store.drop_watches()
        self._http.shutdown()
        self._close_all()
        self._http.server_close()

    def configuration(self):
        """A ``kubernetes.client.Configuration`` pointing at this server."""
        from kubernetes import client
        config = client.Configuration()
        config.host = self.url
        return config

    def api_client(self):
        """A new ``kubernetes.client.ApiClient`` for this server."""
        from kubernetes import client
        return client.ApiClient(self.configuration())

    def check_for(self, kind: Kind, query: dict):
        """What else a write through HTTP is checked with (``tests/kube_schemas.errors``): every built-in kind
        (its OpenAPI schema, as the API server decodes it), and a custom kind under ``fieldValidation=Strict``
        (unknown fields are then errors instead of being pruned); ``None`` when nothing more."""
        if kind.plural == "events" or (kind.is_custom and query.get("fieldValidation") != "Strict"):
            return None
        from tests import kube_schemas
        return kube_schemas.errors

    # -- test hooks ----------------------------------------------------------------------------------------------
    def restart(self, *, lose_history: bool = False, outage_s: float = 0.0) -> None:
        """Act as an API server restart: every open watch and connection drops; with ``lose_history`` the event
        history is forgotten (the next watch from an older ``resourceVersion`` gets 410); for ``outage_s``
        seconds connections are closed unanswered."""
        if outage_s:
            self._refuse_until = time.monotonic() + outage_s
        if lose_history:
            self.store.compact()
        self.store.drop_watches()
        self._close_all()

    def fail_next(self, count: int = 1, code: int = 500,
                  match: Callable[[str, str], bool] | None = None) -> None:
        """The next ``count`` requests for which ``match(method, path)`` holds (all by default) get ``code``
        with a ``Status`` body (500 InternalError, 503 ServiceUnavailable, 429 TooManyRequests)."""
        with self._lock:
            self._failures.append([count, code, match])

    # -- internals -----------------------------------------------------------------------------------------------
    def _injected(self, method: str, path: str) -> int | None:
        with self._lock:
            for failure in self._failures:
                if failure[0] > 0 and (failure[2] is None or failure[2](method, path)):
                    failure[0] -= 1
                    return failure[1]
        return None

    def _refusing(self) -> bool:
        return time.monotonic() < self._refuse_until

    def _track(self, conn: socket.socket, alive: bool) -> None:
        with self._lock:
            (self._connections.add if alive else self._connections.discard)(conn)

    def _close_all(self) -> None:
        with self._lock:
            conns = list(self._connections)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
