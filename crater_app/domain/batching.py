"""Group commit: concurrent callers hand items to one writer that stores them together.

A stdlib-only primitive (no I/O of its own) shared by the services and the local backend: with SQLite, one
transaction per item costs a BEGIN/COMMIT and a turn at the single write lock each; one transaction for
everything queued meanwhile costs that once.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


class _Slot:
    __slots__ = ("item", "done", "value", "error", "wake")

    def __init__(self, item: Any) -> None:
        self.item, self.done, self.value, self.error = item, False, None, None
        self.wake = threading.Lock()  # held until the slot is done or its caller is made the writer
        self.wake.acquire()


class GroupCommit:
    """Writes the items of concurrent callers together (group commit).

    :meth:`run` queues the caller's item. One caller at a time is the writer: it takes its own item and
    whatever else is queued (at most ``max_batch`` in all) and hands them to ``write`` - one transaction for
    all - while the others wait for their own result. Then it wakes the callers it wrote for and makes the
    next queued caller the writer. Alone, a caller just writes its item. When a batch fails, its items are
    written again one by one, so that an error reaches only the caller whose item caused it. Each waiting
    caller is woken once (or twice when it becomes the writer), not at every batch.
    """

    def __init__(self, max_batch: int = 128) -> None:
        self.max_batch = max_batch
        self._lock = threading.Lock()
        self._queue: list[_Slot] = []
        self._busy = False

    def run(self, item: Any, write: Callable[[list[Any]], list[Any]]) -> Any:
        """Write ``item`` (with whatever else is queued) and return its result from ``write``.

        ``write(items)`` must write all ``items`` in one transaction and return one result per item, in order.
        """
        slot = _Slot(item)
        with self._lock:
            writer = not self._busy
            if writer:
                self._busy = True
            else:
                self._queue.append(slot)
        if not writer:
            slot.wake.acquire()  # until done, or made the writer
        if not slot.done:
            self._lead(slot, write)
        if slot.error is not None:
            raise slot.error
        return slot.value

    def _lead(self, slot: _Slot, write: Callable[[list[Any]], list[Any]]) -> None:
        with self._lock:
            if slot in self._queue:
                self._queue.remove(slot)
            batch = [slot, *self._queue[:self.max_batch - 1]]
            del self._queue[:self.max_batch - 1]
        try:
            self._write(batch, write)
        finally:
            for s in batch[1:]:
                s.wake.release()
            with self._lock:
                if self._queue:
                    self._queue[0].wake.release()  # the next writer (it finds its slot not done)
                else:
                    self._busy = False

    @staticmethod
    def _write(batch: list[_Slot], write: Callable[[list[Any]], list[Any]]) -> None:
        try:
            values = write([s.item for s in batch])
        except Exception as exc:  # noqa: BLE001 - handed to the caller whose item failed
            if len(batch) == 1:
                batch[0].error, batch[0].done = exc, True
                return
            for s in batch:  # find out which item(s) failed: each alone
                try:
                    s.value = write([s.item])[0]
                except Exception as one:  # noqa: BLE001
                    s.error = one
                s.done = True
            return
        except BaseException as exc:
            for s in batch:
                s.error, s.done = exc, True
            raise
        for s, value in zip(batch, values):
            s.value, s.done = value, True
