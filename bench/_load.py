"""A small, fast HTTP/1.1 load client: asyncio streams, keep-alive, pre-encoded requests.

It runs in its own process (:func:`run_load`) so that its CPU use can be reported apart from the server's:
on a 2-core box the client competes with the server, and a slow client (httpx costs several times more
CPU per request) would make the server look slower than it is.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing as mp
import resource
import time
from dataclasses import dataclass, field


def encode_request(method: str, path: str, port: int, token: str | None = None, body: object | None = None) -> bytes:
    """One HTTP/1.1 keep-alive request as bytes (JSON body when ``body`` is given)."""
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept: application/json"]
    if token:
        lines.append(f"Authorization: Bearer {token}")
    payload = b""
    if body is not None:
        payload = json.dumps(body, separators=(",", ":")).encode()
        lines.append("Content-Type: application/json")
    if payload or method in ("POST", "PUT", "PATCH"):
        lines.append(f"Content-Length: {len(payload)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + payload


@dataclass
class LoadResult:
    """Figures of one load run (latencies in seconds)."""

    elapsed_s: float
    latencies: list[float]
    statuses: dict[int, int]
    client_cpu_s: float
    errors: list[str] = field(default_factory=list)
    sample_bodies: list[bytes] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.count / self.elapsed_s if self.elapsed_s else 0.0


async def _read_response(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    length = None
    chunked = False
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value.strip())
        elif name == b"transfer-encoding" and b"chunked" in value.lower():
            chunked = True
    if chunked:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).strip().split(b";")[0], 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
        return status, body
    return status, (await reader.readexactly(length) if length else b"")


async def _load(port: int, requests: list[bytes], total: int, concurrency: int, keep_bodies: int) -> LoadResult:
    latencies: list[float] = []
    statuses: dict[int, int] = {}
    errors: list[str] = []
    bodies: list[bytes] = []
    next_index = 0

    async def worker() -> None:
        nonlocal next_index
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            while next_index < total:
                i = next_index
                next_index += 1
                t0 = time.perf_counter()
                writer.write(requests[i % len(requests)])
                status, body = await _read_response(reader)
                latencies.append(time.perf_counter() - t0)
                statuses[status] = statuses.get(status, 0) + 1
                if status >= 400 and len(errors) < 5:
                    errors.append(f"{status}: {body[:300]!r}")
                if len(bodies) < keep_bodies:
                    bodies.append(body)
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - t0
    return LoadResult(elapsed, latencies, statuses, 0.0, errors, bodies)


def _child(conn, port, requests, total, concurrency, keep_bodies) -> None:
    before = resource.getrusage(resource.RUSAGE_SELF)
    result = asyncio.run(_load(port, requests, total, concurrency, keep_bodies))
    after = resource.getrusage(resource.RUSAGE_SELF)
    result.client_cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    conn.send(result)
    conn.close()


def run_load(port: int, requests: list[bytes], total: int, concurrency: int, keep_bodies: int = 0) -> LoadResult:
    """Send ``total`` requests (cycling through ``requests``) over ``concurrency`` keep-alive connections,
    from a separate process; return latencies, status counts and the client's CPU seconds."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(child, port, requests, total, concurrency, keep_bodies))
    proc.start()
    child.close()
    result = parent.recv()
    proc.join()
    return result
