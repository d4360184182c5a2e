"""The leader's doorbell: how a web worker that is not the leader wakes the one that is.

With several workers (``CRATER_WORKERS``) only the lease holder runs the loops (placement, reconcile, admission).
A submission answered by another worker is written and handed to the backend there, and the leader would notice it
only at its next periodic round (``loop_interval_s``); instead the follower rings: one datagram on a Unix socket
that the leader listens on, which wakes the leader's loop at once (``ServiceContext.kick``), or also asks it for a
full admission pass (``nudge``: a held job was cancelled, a quota changed).

The socket lives in Linux's abstract namespace (no file to create, clean up or protect by path) under a name derived
from the database URL, so that one machine's deployments on different databases never ring each other; only
processes on the same machine reach it (replicas elsewhere fall back to the leader's periodic round). Ringing never
blocks and never fails: with nobody listening (no leader right now, or not Linux) the datagram is dropped.
"""

from __future__ import annotations

import hashlib
import logging
import socket
import sys
import threading
from typing import Callable

log = logging.getLogger(__name__)

#: what a ring asks for: wake the loop / also a full admission pass / also forget cached admission inputs first
KICK, NUDGE, INVALIDATE = b"k", b"n", b"i"


def address(database_url: str) -> bytes | None:
    """The abstract socket name of the deployment on ``database_url`` (``None`` where there is no abstract
    namespace, i.e. not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    return b"\0crater-doorbell-" + hashlib.sha256(database_url.encode()).hexdigest()[:24].encode()


class Kick(threading.Event):
    """``ServiceContext.kick``: a :class:`threading.Event` that wakes this process's loop and, while this process is
    not the leader (``ring`` set by the loop), rings the leader's doorbell too."""

    def __init__(self) -> None:
        super().__init__()
        self.ring: Callable[[bytes], None] | None = None

    def set(self, what: bytes = KICK) -> None:  # noqa: A003 - threading.Event's own name
        """Wake the loop (and the leader's, see the class)."""
        super().set()
        ring = self.ring
        if ring is not None:
            ring(what)


class Doorbell:
    """The doorbell at ``addr`` (see :func:`address`): :meth:`ring` from followers, :meth:`listen` in the leader."""

    #: the listening thread checks this often (seconds) whether it was closed
    POLL_S = 0.5

    def __init__(self, addr: bytes | None) -> None:
        self.addr = addr
        self._send: socket.socket | None = None
        self._listener: socket.socket | None = None
        self._thread: threading.Thread | None = None

    def ring(self, what: bytes = KICK) -> None:
        """Send ``what`` to the leader, if one listens (never blocks, never raises)."""
        if self.addr is None:
            return
        try:
            if self._send is None:
                self._send = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._send.setblocking(False)
            self._send.sendto(what, self.addr)
        except OSError:  # nobody listens (no leader now), or its queue is full: it is awake anyway
            pass

    def listen(self, on_ring: Callable[[bytes], None]) -> bool:
        """Start answering rings with ``on_ring(what)`` in a daemon thread; False when the name is taken (the
        previous leader has not let it go yet: try again at the next round) or there is no doorbell here."""
        if self.addr is None or self._listener is not None:
            return self._listener is not None
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        try:
            sock.bind(self.addr)
        except OSError:
            sock.close()
            return False
        sock.settimeout(self.POLL_S)
        self._listener = sock
        self._thread = threading.Thread(target=self._serve, args=(sock, on_ring), name="crater-doorbell", daemon=True)
        self._thread.start()
        return True

    @property
    def listening(self) -> bool:
        """Whether this process answers the doorbell."""
        return self._listener is not None

    def close(self) -> None:
        """Stop listening (the leader lost or gave up the lease), so that the next leader can take the name."""
        sock, self._listener = self._listener, None
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(2 * self.POLL_S)
        if sock is not None:
            sock.close()  # after the thread has seen the change: the name is free for the next leader

    def _serve(self, sock: socket.socket, on_ring: Callable[[bytes], None]) -> None:
        while self._listener is sock:
            try:
                data = sock.recv(64)
            except socket.timeout:
                continue
            except OSError:
                return  # closed
            try:
                on_ring(data)
            except Exception:  # noqa: BLE001 - a bad ring must not end the doorbell
                log.exception("doorbell: handling a ring failed")
