"""Many rows written with a few statements: :func:`update_rows` (one ``UPDATE ... FROM (VALUES ...)`` per chunk of
rows) and :func:`insert_rows` (one multi-row ``INSERT ... VALUES``), on SQLite and PostgreSQL.

Why not ``executemany``: the SQLite driver steps each parameter set separately and gives up the interpreter lock
for each step; when other threads of the process are busy (the Kubernetes backend's watches), every step waits for
the lock again (up to the interpreter's switch interval, 5 ms), so a batch of 1,000 rows can take seconds. One
statement per chunk waits once. On PostgreSQL psycopg2's ``executemany`` of an UPDATE is one round trip per row.

Values go through the columns' own bind processors (JSON, ``UTCDateTime``), so they are stored exactly as the ORM
and Core statements store them; row triggers fire as for any UPDATE or INSERT. SQL is built as text with positional
parameters and cached by shape (SQLAlchemy's compiler takes ~0.1 ms per row for a multi-row ``VALUES``).
"""

from __future__ import annotations

import sqlite3
from functools import lru_cache
from typing import Callable, Sequence

from sqlalchemy import Table
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.types import String

#: the most parameters one statement carries: SQLite before 3.32 allows 999 (``SQLITE_MAX_VARIABLE_NUMBER``),
#: later versions 32,766; psycopg2 fills them in itself (PostgreSQL's own limit, 65,535, does not apply)
MAX_PARAMETERS = 999 if sqlite3.sqlite_version_info < (3, 32) else 30_000
#: ``UPDATE ... FROM`` needs SQLite 3.33 (2020); an older SQLite gets ``executemany``
_SQLITE_UPDATE_FROM = sqlite3.sqlite_version_info >= (3, 33)


def update_rows(conn: Connection, table: Table, key: str, columns: Sequence[str], rows: Sequence[dict]) -> None:
    """``UPDATE table SET <columns> WHERE <key> = ...`` for every row of ``rows`` (dicts with ``key`` and every
    name in ``columns``, Python values as for the ORM: dicts for JSON, aware datetimes), in as few statements as
    :data:`MAX_PARAMETERS` allows. Rows whose key matches no row change nothing. Raises what the driver raises."""
    if not rows:
        return
    dialect = conn.dialect
    names = (key, *columns)
    if dialect.name == "sqlite" and not _SQLITE_UPDATE_FROM:
        from sqlalchemy import bindparam

        stmt = table.update().where(table.c[key] == bindparam("b_" + key)).values(
            {c: bindparam("b_" + c) for c in columns})
        conn.execute(stmt, [{"b_" + n: row[n] for n in names} for row in rows])
        return
    process = _processors(dialect, table, names)
    per = max(1, MAX_PARAMETERS // len(names))
    for i in range(0, len(rows), per):
        chunk = rows[i:i + per]
        sql = _update_sql(dialect, table, key, tuple(columns), len(chunk))
        conn.exec_driver_sql(sql, tuple(_flatten(chunk, names, process)))


def insert_rows(conn: Connection, table: Table, columns: Sequence[str], rows: Sequence[dict]) -> None:
    """``INSERT INTO table (<columns>) VALUES ...`` of every row of ``rows`` (dicts with every name in ``columns``),
    in order, in as few statements as :data:`MAX_PARAMETERS` allows. Raises what the driver raises."""
    if not rows:
        return
    dialect = conn.dialect
    names = tuple(columns)
    process = _processors(dialect, table, names)
    per = max(1, MAX_PARAMETERS // len(names))
    for i in range(0, len(rows), per):
        chunk = rows[i:i + per]
        conn.exec_driver_sql(_insert_sql(dialect, table, names, len(chunk)), tuple(_flatten(chunk, names, process)))


def _flatten(rows: Sequence[dict], names: tuple[str, ...], process: tuple[Callable | None, ...]):
    pairs = tuple(zip(names, process))
    for row in rows:
        for name, proc in pairs:
            value = row[name]
            yield value if proc is None or value is None else proc(value)


def _processors(dialect: Dialect, table: Table, names: tuple[str, ...]) -> tuple[Callable | None, ...]:
    return tuple(table.c[n].type.dialect_impl(dialect).bind_processor(dialect) for n in names)


def _marker(dialect: Dialect) -> str:
    return "?" if dialect.paramstyle == "qmark" else "%s"


def _values(dialect: Dialect, width: int, count: int) -> str:
    one = "(" + ", ".join([_marker(dialect)] * width) + ")"
    return ", ".join([one] * count)


@lru_cache(maxsize=256)
def _update_sql(dialect: Dialect, table: Table, key: str, columns: tuple[str, ...], count: int) -> str:
    prep = dialect.identifier_preparer
    names = (key, *columns)

    def value(name: str) -> str:
        # PostgreSQL types a VALUES list from its literals (text for a string or a NULL): a column that is not text
        # is cast to its own type; SQLite takes what it gets (its CAST to "JSON" would make numbers of JSON text).
        ref = f"v.{prep.quote(name)}"
        kind = table.c[name].type
        if dialect.name == "sqlite" or isinstance(kind, String):
            return ref
        return f"CAST({ref} AS {kind.compile(dialect=dialect)})"

    sets = ", ".join(f"{prep.quote(c)} = {value(c)}" for c in columns)
    t = prep.format_table(table)
    return (f"WITH v ({', '.join(prep.quote(n) for n in names)}) AS (VALUES {_values(dialect, len(names), count)}) "
            f"UPDATE {t} SET {sets} FROM v WHERE {t}.{prep.quote(key)} = {value(key)}")


@lru_cache(maxsize=256)
def _insert_sql(dialect: Dialect, table: Table, columns: tuple[str, ...], count: int) -> str:
    prep = dialect.identifier_preparer
    return (f"INSERT INTO {prep.format_table(table)} ({', '.join(prep.quote(c) for c in columns)}) "
            f"VALUES {_values(dialect, len(columns), count)}")
