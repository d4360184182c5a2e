"""Database engine: SQLite (WAL) by default, PostgreSQL via ``CRATER_DATABASE_URL``."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlmodel import create_engine


# Execution option marking a connection whose transactions only read (SQLite: BEGIN instead of BEGIN IMMEDIATE).
READ_ONLY_OPTION = "crater_read_only"


def normalize_url(url: str) -> str:
    """Pin a driver-less PostgreSQL URL to psycopg2, the driver Crater installs.

    SQLAlchemy 2.1 maps ``postgresql://`` to psycopg 3, which is not a dependency; ``postgres://`` (the
    Heroku/libpq spelling) is not understood at all. URLs naming a driver are left alone.
    """
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def make_engine(url: str) -> Engine:
    """Create an engine for ``url``.

    SQLite: WAL journal, ``synchronous=NORMAL``, 30 s busy timeout, foreign keys on, every transaction
    ``BEGIN IMMEDIATE`` (writers queue instead of failing) except on connections with the ``READ_ONLY_OPTION``
    execution option (plain ``BEGIN``); the parent folder is created. PostgreSQL (``postgresql://`` means
    psycopg2): a pool of 10 (+20 overflow) with pre-ping.
    """
    url = normalize_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, pool_size=20, max_overflow=20)

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_conn, _record) -> None:  # pragma: no cover - exercised by every SQLite test
            cur = dbapi_conn.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.execute("PRAGMA busy_timeout=30000")
            cur.close()
            # pysqlite's implicit transactions are off; the "begin" hook below issues BEGIN itself.
            dbapi_conn.isolation_level = None

        @event.listens_for(engine, "begin")
        def _begin(conn) -> None:  # pragma: no cover
            # IMMEDIATE: take the write lock up front (waiting up to busy_timeout). A deferred transaction
            # that reads and then writes fails at once with "database is locked" (SQLITE_BUSY_SNAPSHOT, no
            # busy wait) when another connection committed in between - e.g. concurrent submissions.
            # Transactions that never write (ServiceContext.session(read_only=True)) use a plain BEGIN instead,
            # a WAL snapshot that neither waits for nor blocks the writer.
            conn.exec_driver_sql("BEGIN" if conn.get_execution_options().get(READ_ONLY_OPTION) else "BEGIN IMMEDIATE")

        return engine
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True)


def refresh_statistics(connection: Connection) -> None:
    """Refresh the query planner's statistics of ``jobs`` on SQLite (PostgreSQL's autovacuum does this itself).

    Without them SQLite guesses that ``phase = ?`` is as selective as ``user_id = ?`` and, for a user who
    may read a whole project, pages the job list from the phase index instead of the visibility indexes
    (12 ms instead of 1 ms per page on 100k jobs). A full ``ANALYZE jobs`` reads the table's indexes once:
    about 75 ms per 100k jobs, in the leader loop when it takes over and then hourly.
    """
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("ANALYZE jobs")


def is_sqlite(engine: Engine) -> bool:
    """Whether ``engine`` talks to SQLite."""
    return engine.dialect.name == "sqlite"
