"""services.context.WriterLock, the cross-process turn at a SQLite database's one write lock, and the local backend's
store taking it: a second holder (another web worker: its own open file) waits until the first lets go, an inner
``with`` of the same holder does not let go early, and a store transaction holds the turn until it commits."""

from __future__ import annotations

import threading

from crater_app.cluster.local.store import Store
from crater_app.services.context import WriterLock
from tests.helpers import within


def _enter_in_thread(lock) -> tuple[threading.Thread, threading.Event]:
    """Enter ``lock`` in a new thread; the event is set once it is in (it then leaves at once)."""
    entered = threading.Event()

    def run():
        with lock:
            entered.set()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, entered


def test_a_second_holder_waits_for_the_first_and_an_inner_exit_keeps_the_turn(tmp_path):
    path = str(tmp_path / "db.writer-lock")
    first, second = WriterLock(path), WriterLock(path)  # two processes: two open files on one lock file
    with first:
        with first:  # re-entrant within its holder
            pass
        thread, entered = _enter_in_thread(second)
        assert not entered.wait(0.3), "the second holder got the turn while the first still had it"
    assert entered.wait(within(5)), "the second holder never got the turn"
    thread.join(within(5))


def test_a_store_transaction_holds_the_turn_until_it_commits(tmp_path):
    db = tmp_path / "local" / "backend.db"
    mine = Store(db, WriterLock(f"{db}.writer-lock"))
    other = WriterLock(f"{db}.writer-lock")  # what another web worker's store would take
    with mine.tx() as conn:
        conn.execute("SELECT 1")
        thread, entered = _enter_in_thread(other)
        assert not entered.wait(0.3), "another worker got the turn during a write transaction"
    assert entered.wait(within(5))
    thread.join(within(5))
    assert Store(db).read("SELECT COUNT(*) FROM workloads") == [(0,)]  # without a turn too (one process, tests)
