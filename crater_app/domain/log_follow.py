"""Following a log through tails: what a new tail of a growing log adds to the previous one (pure).

A backend gives only the last bytes of a replica's log (``ClusterBackend.read_logs``: a window that drops a
partial first line, as ``kubectl logs --limit-bytes`` and the local backend do). Following the log means reading
the same window again and again and sending what the new window has after the end of the old one.
"""

from __future__ import annotations

#: characters of the new window's start looked up in the old window to find where they overlap
ANCHOR_CHARS = 64


def appended(previous: str, current: str) -> str:
    """What ``current`` (a later tail of the same log, starting no earlier than ``previous`` did) adds after
    ``previous``: its text after the longest end of ``previous`` that ``current`` starts with.

    Both windows are suffixes of an append-only log. When ``current`` does not start inside ``previous`` at all (more
    was written between the two reads than the window holds, or the log was replaced: a new run), the whole of
    ``current`` is new. A log repeating the same text exactly is ambiguous; the longest overlap is taken, so that
    nothing is sent twice.
    """
    if current.startswith(previous):
        return current[len(previous):]
    anchor = current[:ANCHOR_CHARS]
    if not anchor:
        return ""
    at = previous.find(anchor)
    while at != -1:
        overlap = len(previous) - at
        if current[:overlap] == previous[at:]:
            return current[overlap:]
        at = previous.find(anchor, at + 1)
    for overlap in range(min(ANCHOR_CHARS, len(previous), len(current)), 0, -1):  # an overlap shorter than the anchor
        if previous.endswith(current[:overlap]):
            return current[overlap:]
    return current


def tail(text: str, tail_bytes: int) -> str:
    """The last ``tail_bytes`` bytes of ``text`` (UTF-8), as the backends cut a tail: a partial first line is
    dropped unless nothing would be left, and a character cut in two is dropped."""
    data = text.encode("utf-8")
    if len(data) <= tail_bytes:
        return text
    start = len(data) - tail_bytes
    cut = data[start:]
    if data[start - 1:start] != b"\n" and b"\n" in cut:
        rest = cut.split(b"\n", 1)[1]
        if rest:
            cut = rest
    return cut.decode("utf-8", "ignore")
