"""The streamed answers of the API mock: watches (events after a ``resourceVersion``, bookmarks, ``410`` as an
``ERROR`` event, the end at ``timeoutSeconds``, a dropped connection on restart) and followed pod logs. Each function
answers on the request handler of :mod:`tests.kube_api.server` it is given."""

from __future__ import annotations

import json
import time

from tests.kube_api import logs, selectors
from tests.kube_api.kinds import Kind
from tests.kube_api.store import ApiError, Dropped, Gone


def _truthy(value: str | None) -> bool:
    return (value or "").lower() in ("1", "true")


def watch(handler, kind: Kind, namespace: str | None, query: dict) -> None:
    """A watch request answered on ``handler`` (the request handler): see :mod:`tests.kube_api.server`."""
    owner, store = handler.server.owner, handler.server.owner.store
    try:
        labels = selectors.label_matcher(query.get("labelSelector", ""))
        fields = selectors.field_matcher(query.get("fieldSelector", ""))
    except selectors.SelectorError as exc:
        raise ApiError(400, "BadRequest", str(exc)) from None
    timeout = float(query.get("timeoutSeconds") or owner.max_watch_seconds)
    deadline = time.monotonic() + min(timeout, owner.max_watch_seconds)
    bookmarks = _truthy(query.get("allowWatchBookmarks"))
    resource = (kind.group, kind.plural)

    def wanted(obj: dict | None) -> bool:
        if obj is None:
            return False
        if namespace is not None and obj["metadata"].get("namespace", "") != namespace:
            return False
        return labels(obj) and fields(obj)

    with store.cond:
        epoch = store.epoch
        requested = query.get("resourceVersion") or ""
        initial: list[dict] = []
        if requested in ("", "0"):
            pos = store.resource_version
            items, _ = store.list(kind.group, kind.plural, namespace)
            initial = [o for o in items if wanted(o)]
        else:
            pos = int(requested)
    handler._start_stream("application/json")
    try:
        if initial:
            handler.wfile.write(b"".join(b"%x\r\n%s\n\r\n" % (len(line) + 1, line) for line in (
                json.dumps({"type": "ADDED", "object": obj}).encode() for obj in initial)))
        next_bookmark = time.monotonic() + owner.bookmark_interval
        while (left := deadline - time.monotonic()) > 0:
            try:
                events = store.events_after(pos, epoch, min(left, max(next_bookmark - time.monotonic(), 0.001)))
            except Gone as gone:
                handler._chunk(json.dumps({"type": "ERROR", "object": gone.status()}).encode() + b"\n")
                break
            lines = []
            for event in events:
                pos = event.rv
                if event.resource != resource:
                    continue
                now, before = wanted(event.obj), wanted(event.prev)
                if event.type == "DELETED":
                    kind_of = "DELETED" if before else None
                elif now and not before:
                    kind_of = "ADDED"
                elif before and not now:
                    kind_of = "DELETED"
                else:
                    kind_of = event.type if now else None
                if kind_of:
                    lines.append(json.dumps({"type": kind_of, "object": event.obj}).encode())
            if lines:  # one chunk per event, as the API server flushes them (clients split lines per chunk)
                handler.wfile.write(b"".join(b"%x\r\n%s\n\r\n" % (len(line) + 1, line) for line in lines))
                handler.wfile.flush()
            if bookmarks and time.monotonic() >= next_bookmark:
                mark = {"kind": kind.kind, "apiVersion": kind.api_version,
                        "metadata": {"resourceVersion": str(pos)}}
                handler._chunk(json.dumps({"type": "BOOKMARK", "object": mark}).encode() + b"\n")
                next_bookmark = time.monotonic() + owner.bookmark_interval
        handler._end_stream()
    except Dropped:
        handler._drop()
    except (BrokenPipeError, ConnectionResetError, OSError):
        handler.close_connection = True

def log(handler, namespace: str, name: str, query: dict) -> None:
    """A ``pods/log`` request (``follow`` streams until the container ends) answered on ``handler``."""
    store = handler.server.owner.store
    with store.cond:
        pod = store.get("", "pods", namespace, name)
        container = logs.container_of(pod, query.get("container"))
        lines = logs.read(store, namespace, name, container, query)
        sent = len(store.logs.get((namespace, name, container), []))
        epoch = store.epoch
    if not _truthy(query.get("follow")):
        return handler._send_text("".join(f"{line}\n" for line in lines))
    handler._start_stream("text/plain")
    try:
        if lines:
            handler._chunk("".join(f"{line}\n" for line in lines).encode())
        while True:
            with store.cond:
                all_lines = store.logs.get((namespace, name, container), [])
                if len(all_lines) == sent and not logs.finished(store, namespace, name, container):
                    store.cond.wait(0.5)
                if store.epoch != epoch:
                    raise Dropped()
                new, sent = all_lines[sent:], len(all_lines)
                done = logs.finished(store, namespace, name, container)
            if new:
                handler._chunk("".join(f"{line}\n" for line in new).encode())
            if done and not new:
                break
        handler._end_stream()
    except Dropped:
        handler._drop()
    except (BrokenPipeError, ConnectionResetError, OSError):
        handler.close_connection = True
